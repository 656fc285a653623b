package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container/containertest"
)

// TestE2BNoInternetDocker: allow_internet_access false narrows a template
// that allows egress. On one Docker template with network.egress allow, a
// sandbox created without the flag reaches a listener on the host, and one
// created with allow_internet_access false reaches it by no address (the
// host's own, the bridge gateway), while the platform still runs its
// commands. The flag never widens: true on a deny_all template stays
// closed.
func TestE2BNoInternetDocker(t *testing.T) {
	e := containertest.Known()[0]
	containertest.Require(t, e)
	p := startPrimer(t, withContainers(t))
	t.Cleanup(func() { e2bDeleteAll(t, p) })
	ctx := ctxT(t, 5*time.Minute)
	containerTemplate(t, p, e, "open", `{"kind":"container","image":"`+containertest.PythonImage+`","network":{"egress":"allow"}}`)
	containerTemplate(t, p, e, "closed", `{"kind":"container","image":"`+containertest.PythonImage+`","network":{"egress":"deny_all"}}`)

	create := func(body string) string {
		t.Helper()
		var sb struct{ SandboxID string }
		if st, _ := e2bCall(t, p, p.key, "POST", "/v2/sandboxes", body, &sb); st != 201 {
			t.Fatalf("create %s: status %d", body, st)
		}
		return sb.SandboxID
	}
	open := create(`{"templateID":"open","timeout":300}`)
	narrowed := create(`{"templateID":"open","timeout":300,"allow_internet_access":false}`)
	closed := create(`{"templateID":"closed","timeout":300,"allow_internet_access":true}`)
	for _, c := range []struct {
		id, name string
		open     bool
	}{{open, "open template", true}, {narrowed, "open template, allow_internet_access false", false}, {closed, "deny_all template, allow_internet_access true", false}} {
		targets := append(hostAddrs(t), gatewayOf(t, p, ctx, c.id))
		got, out := egressReaches(t, p, ctx, c.id, targets)
		if c.open && got == 0 {
			t.Errorf("%s: no connection reached the host from %v (%s); the template allows egress, so the narrowed case proves nothing", c.name, targets, out)
		}
		if !c.open && got != 0 {
			t.Errorf("%s: %d connections reached the host from %v (%s); want none", c.name, got, targets, out)
		}
	}
	if ws, err := p.api.GetWorkspace(ctx, narrowed); err != nil || ws.Egress != "deny_all" {
		t.Errorf("narrowed sandbox: %+v, %v; want egress deny_all on the workspace", ws, err)
	}
}

// egressReaches runs a python probe in workspace id that connects to a
// listener on every address of the host through each of targets and sends
// a nonce: it answers how many connections carrying the nonce the listener
// accepted, and the probe's output.
func egressReaches(t *testing.T, p *primer, ctx context.Context, id string, targets []string) (int, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nonce := "primer-e2b-egress-" + randomHex(8)
	var got atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, len(nonce))
				if n, _ := io.ReadFull(c, buf); string(buf[:n]) == nonce {
					got.Add(1)
				}
			}()
		}
	}()
	probe := fmt.Sprintf(`import socket, sys
for h in sys.argv[1:]:
    try:
        s = socket.create_connection((h, %d), timeout=2)
        s.sendall(%q.encode())
        s.recv(1)
        s.close()
        print(h, 'connected')
    except OSError as e:
        print(h, 'blocked:', e)
`, ln.Addr().(*net.TCPAddr).Port, nonce)
	res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: append([]string{"python3", "-c", probe}, targets...)})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("egress probe in %s: %+v, %v", id, res, err)
	}
	// The probe waits for the listener to close each connection (recv), so
	// every nonce has been counted once it has printed.
	return int(got.Load()), strings.TrimSpace(res.Stdout)
}
