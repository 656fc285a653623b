package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/wire"
)

// readAttach reads an attach stream until its output holds want (or the
// process exits) and returns the output and the exit, if one came.
func readAttach(t *testing.T, ctx context.Context, a *client.Attachment, want string) (string, *wire.ExecExit) {
	t.Helper()
	var out strings.Builder
	for want == "" || !strings.Contains(out.String(), want) {
		m, err := a.Recv(ctx)
		if err != nil {
			t.Fatalf("attach: recv (output so far %q): %v", out.String(), err)
		}
		switch m.Type {
		case wire.AttachOutput:
			out.Write(m.Data)
		case wire.AttachExit:
			return out.String(), m.Exit
		case wire.AttachError:
			t.Fatalf("attach: error %+v", m.Error)
		}
	}
	return out.String(), nil
}

// TestProcessesOnDocker: a background process in a Docker workspace
// survives its client's disconnect and a restart of the platform (which
// drops the runtime connection), is listed and attached again, takes input
// and ends by a signal; a terminal opened by primectl workspace shell runs
// tty on a /dev/pts device.
func TestProcessesOnDocker(t *testing.T) {
	e := containertest.Known()[0] // docker
	containertest.Require(t, e)
	p := startPrimer(t, withContainers(t))
	containerTemplate(t, p, e, "py", `{"kind":"container","image":"`+containertest.PythonImage+`"}`)
	ws := createRunning(t, p, "py")
	ctx := ctxT(t, 4*time.Minute)

	proc, err := p.api.StartProcess(ctx, ws.ID, wire.ProcessSpec{
		Command: []string{"sh", "-c", `echo ready; while read l; do echo "got:$l"; done`}, Tag: "echoer", StdinOpen: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.api.AttachProcess(ctx, ws.ID, proc.PID, client.AttachOptions{Replay: true})
	if err != nil {
		t.Fatal(err)
	}
	readAttach(t, ctx, a, "ready\n")
	_ = a.Close()

	p.restart()

	list, err := p.api.ListProcesses(ctx, ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].PID != proc.PID || !list[0].Running || list[0].Tag != "echoer" {
		t.Fatalf("processes after the platform's restart = %+v", list)
	}
	a, err = p.api.AttachProcess(ctx, ws.ID, proc.PID, client.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Input(ctx, []byte("after restart\n")); err != nil {
		t.Fatal(err)
	}
	if out, _ := readAttach(t, ctx, a, "got:after restart\n"); strings.Contains(out, "ready") {
		t.Fatalf("attach without replay got earlier output: %q", out)
	}
	if err := p.api.SignalProcess(ctx, ws.ID, proc.PID, "TERM"); err != nil {
		t.Fatal(err)
	}
	if _, exit := readAttach(t, ctx, a, ""); exit == nil || exit.Signal != "SIGTERM" {
		t.Fatalf("exit after SIGTERM = %+v", exit)
	}

	// A terminal through primectl (its stdin piped: a terminal of 80x24).
	out, stderr, code := p.primectl("tty\nstty size\nexit 5\n", "workspace", "shell", ws.ID)
	if code != 5 || !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "24 80") {
		t.Fatalf("primectl workspace shell = exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
