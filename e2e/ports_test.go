package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// TestPortsDenyAll (issue 26): a dev server (a python one) in a
// deny_all workspace on each engine is listed among its ports, reached
// through /v1/workspaces/{id}/ports/{port}/, a preview link (until it is
// revoked) and through port-forward connections,
// many at once, over the runtime connection; the workspace's egress stays
// denied, and a request without a key is 401.
func TestPortsDenyAll(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		p := startPrimer(t, withContainers(t))
		ctx := ctxT(t, 5*time.Minute)
		eng := containertest.Backend(t, e)
		id := runRecipe(t, p, ctx, recipeManifest(e, "deny_all"), func(id string) {
			_ = eng.Destroy(context.Background(), backend.Handle{Backend: container.Type, WorkspaceID: id})
		})
		checkPorts(t, p, ctx, id)
		// The door in opened nothing out.
		checkEgressBlocked(t, p, ctx, id, append(hostAddrs(t), gatewayOf(t, p, ctx, id)))
	})
}

// checkPorts serves a page from a python dev server on 127.0.0.1:8000 in
// workspace id and reaches it every way issue 26 asks: listed among the
// workspace's ports, through /ports/ (with a key, and 401 without), a
// preview link (403 once revoked) and 20 port-forward connections at once.
func checkPorts(t *testing.T, p *primer, ctx context.Context, id string) {
	t.Helper()
	const page = "<h1>hello from the sandbox</h1>\n"
	if _, err := p.api.WriteFile(ctx, id, "site/index.html", strings.NewReader(page)); err != nil {
		t.Fatal(err)
	}
	// The test image's python is minimal (no http package): a dev
	// server of sockets, one connection at a time, HTTP/1.0.
	if _, err := p.api.WriteFile(ctx, id, "serve.py", strings.NewReader(devServerPy)); err != nil {
		t.Fatal(err)
	}
	proc, err := p.api.StartProcess(ctx, id, wire.ProcessSpec{Command: []string{"python", "-u", "serve.py"}})
	if err != nil {
		t.Fatal(err)
	}
	// Ready when it says so (replay: it may have said it already).
	at, err := p.api.AttachProcess(ctx, id, proc.PID, client.AttachOptions{Replay: true})
	if err != nil {
		t.Fatal(err)
	}
	var said strings.Builder
	for !strings.Contains(said.String(), "Serving HTTP") {
		m, err := at.Recv(ctx)
		if err != nil || m.Type == wire.AttachExit {
			t.Fatalf("the dev server did not start: %v; it said %q", err, said.String())
		}
		said.Write(m.Data)
	}
	_ = at.Close()

	url := p.srv.URL() + "/v1/workspaces/" + id + "/ports/8000/index.html"
	get := func(key string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get(p.key); code != http.StatusOK || body != page {
		t.Errorf("GET through /ports/8000/ = %d %q, want 200 and the page", code, body)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("GET through /ports/8000/ without a key = %d, want 401", code)
	}

	// The port is listed, and a preview link opens the page with no
	// key until it is revoked.
	ports, err := p.api.ListPorts(ctx, id)
	if err != nil || !slices.ContainsFunc(ports, func(lp protocol.ListeningPort) bool { return lp.Port == 8000 && lp.Address == "127.0.0.1" }) {
		t.Errorf("ports listed: %+v (%v), want 8000 on 127.0.0.1", ports, err)
	}
	link, err := p.api.CreatePreview(ctx, id, wire.PreviewRequest{Port: 8000, TTL: "10m"})
	if err != nil {
		t.Fatal(err)
	}
	open := func() (int, string) {
		res, err := http.Get(link.URL + "index.html")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := open(); code != http.StatusOK || body != page {
		t.Errorf("GET through the preview link = %d %q, want 200 and the page", code, body)
	}
	if _, err := p.api.RevokePreview(ctx, id, link.ID); err != nil {
		t.Fatal(err)
	}
	if code, body := open(); code != http.StatusForbidden || !strings.Contains(body, "was revoked") {
		t.Errorf("GET through a revoked preview link = %d %q, want 403 saying it was revoked", code, body)
	}

	// Port-forward connections, 20 at once, each a whole HTTP/1.0
	// exchange ended by a half-close.
	var wg sync.WaitGroup
	errc := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pc, err := p.api.DialPort(ctx, id, 8000)
			if err != nil {
				errc <- fmt.Errorf("connection %d: %w", i, err)
				return
			}
			defer pc.Close()
			if _, err := io.WriteString(pc, "GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n"); err != nil {
				errc <- fmt.Errorf("connection %d: write: %w", i, err)
				return
			}
			_ = pc.CloseWrite()
			b, err := io.ReadAll(pc)
			if err != nil || !strings.HasPrefix(string(b), "HTTP/1.0 200") || !strings.HasSuffix(string(b), page) {
				errc <- fmt.Errorf("connection %d: read %q (%v), want a 200 with the page", i, b, err)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

// devServerPy serves site/index.html on 127.0.0.1:8000 to every request,
// HTTP/1.0 (the response ends with the connection), and says when it
// listens.
const devServerPy = `import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 8000))
s.listen(128)
print('Serving HTTP on 127.0.0.1 port 8000')
body = open('site/index.html', 'rb').read()
while True:
    c, _ = s.accept()
    req = b''
    while b'\r\n\r\n' not in req:
        d = c.recv(4096)
        if not d:
            break
        req += d
    c.sendall(b'HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n' % len(body) + body)
    c.close()
`
