package api

import (
	"context"
	"strings"
	"testing"
	"time"

	apiclient "github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// attachUntil reads an attach stream until its output holds want, and
// returns the output read.
func attachUntil(t *testing.T, ctx context.Context, a *apiclient.Attachment, want string) (string, *wire.ExecExit) {
	t.Helper()
	var out strings.Builder
	for !strings.Contains(out.String(), want) {
		m, err := a.Recv(ctx)
		if err != nil {
			t.Fatalf("recv (output so far %q): %v", out.String(), err)
		}
		switch m.Type {
		case wire.AttachOutput:
			out.Write(m.Data)
		case wire.AttachExit:
			return out.String(), m.Exit
		case wire.AttachError:
			t.Fatalf("attach error: %+v", m.Error)
		}
	}
	return out.String(), nil
}

// A background process through /v1: started, listed, attached (input in,
// output out), signalled; a terminal runs tty and resizes; a viewer key
// may not start or signal.
func TestProcesses(t *testing.T) {
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := apiclient.New(h.url, apiclient.WithHTTPClient(h.http()), apiclient.WithToken(h.adminKey))

	p, err := c.StartProcess(ctx, w.ID, wire.ProcessSpec{
		Command: []string{"sh", "-c", `while read l; do echo "got:$l"; done`}, Tag: "loop", StdinOpen: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.PID <= 0 || p.Tag != "loop" || !p.Running {
		t.Fatalf("started = %+v", p)
	}
	list, err := c.ListProcesses(ctx, w.ID)
	if err != nil || len(list) != 1 || list[0].PID != p.PID {
		t.Fatalf("list = %+v %v", list, err)
	}

	a, err := c.AttachProcess(ctx, w.ID, p.PID, apiclient.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Input(ctx, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	attachUntil(t, ctx, a, "got:one\n")
	// Input through the REST call reaches the same process.
	if err := c.ProcessInput(ctx, w.ID, p.PID, "two\n"); err != nil {
		t.Fatal(err)
	}
	attachUntil(t, ctx, a, "got:two\n")
	_ = a.Close()

	// Detached: the process runs on; a new attach sees the signal's exit.
	a, err = c.AttachProcess(ctx, w.ID, p.PID, apiclient.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SignalProcess(ctx, w.ID, p.PID, "TERM"); err != nil {
		t.Fatal(err)
	}
	_, exit := attachUntil(t, ctx, a, "\x00never")
	if exit == nil || exit.Signal != "SIGTERM" {
		t.Fatalf("exit = %+v", exit)
	}
	got, err := c.GetProcess(ctx, w.ID, p.PID)
	if err != nil || got.Running || got.Exit == nil || got.Exit.ExitCode != 143 {
		t.Fatalf("get after the end = %+v %v", got, err)
	}

	t.Run("pty", func(t *testing.T) {
		p, err := c.StartProcess(ctx, w.ID, wire.ProcessSpec{Command: []string{"sh"}, PTY: &wire.TerminalSize{Cols: 80, Rows: 24}})
		if err != nil {
			t.Fatal(err)
		}
		a, err := c.AttachProcess(ctx, w.ID, p.PID, apiclient.AttachOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		if err := a.Input(ctx, []byte("tty\n")); err != nil {
			t.Fatal(err)
		}
		attachUntil(t, ctx, a, "/dev/pts/")
		if err := a.Resize(ctx, 100, 33); err != nil {
			t.Fatal(err)
		}
		if err := a.Input(ctx, []byte("stty size; exit\n")); err != nil {
			t.Fatal(err)
		}
		out, exit := attachUntil(t, ctx, a, "\x00never")
		if exit == nil || exit.ExitCode != 0 || !strings.Contains(out, "33 100") {
			t.Fatalf("after resize: %q %+v", out, exit)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		// (A local workspace is admin only whatever the role; the
		// route matrix checks the viewer on every write route.)
		viewer := apiclient.New(h.url, apiclient.WithHTTPClient(h.http()), apiclient.WithToken(h.newKey(wire.DefaultTenantID, wire.RoleViewer)))
		if _, err := viewer.StartProcess(ctx, w.ID, wire.ProcessSpec{Command: []string{"true"}}); !errs.Is(err, errs.Forbidden) {
			t.Fatalf("viewer start = %v", err)
		}
		if err := viewer.SignalProcess(ctx, w.ID, p.PID, "KILL"); !errs.Is(err, errs.Forbidden) {
			t.Fatalf("viewer signal = %v", err)
		}
		if _, err := c.AttachProcess(ctx, w.ID, 1<<30, apiclient.AttachOptions{}); !errs.Is(err, errs.NotFound) {
			t.Fatalf("attach to no process = %v", err)
		}
		if _, err := c.StartProcess(ctx, w.ID, wire.ProcessSpec{Command: []string{"sh"}, PTY: &wire.TerminalSize{Cols: 0, Rows: 24}}); errs.FieldOf(err) != "pty" {
			t.Fatalf("zero terminal = %v", err)
		}
		if err := c.ResizeProcess(ctx, w.ID, p.PID, 80, 24); !errs.Is(err, errs.Precondition) {
			t.Fatalf("resize without a terminal = %v", err)
		}
	})
}
