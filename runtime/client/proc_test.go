package client_test

import (
	"strings"
	"testing"

	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// A watch of a background process addresses the process by pid: its
// Stdin feeds the process, its Signal signals it, and a second client
// closing its own watch changes nothing for the process.
func TestProcWatchStdinSignal(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	out := &syncBuffer{}
	p, err := e.Client.ProcStartWatch(ctx, client.ProcRequest{
		Args: []string{"sh", "-c", `read a; echo "got:$a"; exec sleep 600`}, StdinOpen: true, Tag: "t",
	}, client.StartOptions{Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	other, err := client.Dial(ctx, e.URL, runtimetest.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.ProcConnectTag(ctx, "t", client.StartOptions{Stdout: &syncBuffer{}}); err != nil {
		t.Fatal(err)
	}
	_ = other.Close()
	if _, err := p.Stdin().Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(out.String(), "got:one\n") })
	if err := p.Signal(ctx, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil || res.Signal != "SIGTERM" || res.ExitCode != 143 {
		t.Fatalf("wait = %+v %v", res, err)
	}
	if processAlive(t, itoa(p.PID())) {
		t.Fatalf("process %d still runs", p.PID())
	}
}
