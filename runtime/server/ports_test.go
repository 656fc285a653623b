package server_test

import (
	"bufio"
	"net/url"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// TestListPorts: a port another program listens on is listed with its
// address while it listens and not once the program is gone; the
// runtime's own listener is not listed (the runtime here shares the
// test's network namespace, as it shares a sandbox's).
func TestListPorts(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ports.list reads /proc/net/tcp: Linux only")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3 to run a listening program")
	}
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	cmd := exec.CommandContext(ctx, py, "-c", "import socket,sys\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen()\nprint(s.getsockname()[1],flush=True)\nsys.stdin.read()")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	port, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		t.Fatalf("the program's port: %q (%v)", line, err)
	}
	list := func() []protocol.ListeningPort {
		t.Helper()
		ports, err := e.Client.ListPorts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ports
	}
	find := func(ports []protocol.ListeningPort, port int) *protocol.ListeningPort {
		for i := range ports {
			if ports[i].Port == port {
				return &ports[i]
			}
		}
		return nil
	}
	u, _ := url.Parse(e.HTTP.URL)
	own, _ := strconv.Atoi(u.Port())
	ports := list()
	if p := find(ports, port); p == nil || p.Address != "127.0.0.1" {
		t.Errorf("port %d listening on 127.0.0.1: listed as %+v in %+v", port, p, ports)
	}
	if p := find(ports, own); p != nil {
		t.Errorf("the runtime's own port %d is listed: %+v", own, p)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if p := find(list(), port); p != nil {
		t.Errorf("port %d is listed after its program ended: %+v", port, p)
	}
}
