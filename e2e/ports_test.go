package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/cli"
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
// preview link (403 once revoked) and 100 connections at once through
// primectl workspace port-forward.
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
	startServer(t, p, ctx, id, "serve.py", "Serving HTTP")
	if _, err := p.api.WriteFile(ctx, id, "echo_ws.py", strings.NewReader(wsEchoPy)); err != nil {
		t.Fatal(err)
	}
	startServer(t, p, ctx, id, "echo_ws.py", "Serving WebSocket")

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
	// key until it is revoked; primectl lists, makes and revokes.
	ports, err := p.api.ListPorts(ctx, id)
	if err != nil || !slices.ContainsFunc(ports, func(lp protocol.ListeningPort) bool { return lp.Port == 8000 && lp.Address == "127.0.0.1" }) {
		t.Errorf("ports listed: %+v (%v), want 8000 on 127.0.0.1", ports, err)
	}
	if out, stderr, code := p.primectl("", "workspace", "ports", id); code != 0 || !strings.Contains(out, "8000   127.0.0.1") {
		t.Errorf("primectl workspace ports = %q %q (exit %d), want 8000 on 127.0.0.1", out, stderr, code)
	}
	out, stderr, code := p.primectl("", "-o", "json", "workspace", "preview", id, "8000", "--ttl", "10m")
	var link wire.PreviewLink
	if code != 0 || json.Unmarshal([]byte(out), &link) != nil || link.Port != 8000 || link.URL == "" {
		t.Fatalf("primectl workspace preview %s 8000 = %q %q (exit %d)", id, out, stderr, code)
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
	if out, stderr, code := p.primectl("", "workspace", "preview", id, "--revoke", link.ID); code != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("primectl workspace preview --revoke = %q %q (exit %d)", out, stderr, code)
	}
	if code, body := open(); code != http.StatusForbidden || !strings.Contains(body, "was revoked") {
		t.Errorf("GET through a revoked preview link = %d %q, want 403 saying it was revoked", code, body)
	}

	// A WebSocket echo server is reached through /ports/ with a key and
	// through a preview link without one.
	wsLink, err := p.api.CreatePreview(ctx, id, wire.PreviewRequest{Port: 8001})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		header    http.Header
	}{
		{"/ports/", "ws" + strings.TrimPrefix(p.srv.URL(), "http") + "/v1/workspaces/" + id + "/ports/8001/", http.Header{"Authorization": {"Bearer " + p.key}}},
		{"preview link", "ws" + strings.TrimPrefix(wsLink.URL, "http"), nil},
	} {
		c, _, err := websocket.Dial(ctx, tc.url, &websocket.DialOptions{HTTPHeader: tc.header})
		if err != nil {
			t.Errorf("WebSocket through %s: %v", tc.name, err)
			continue
		}
		for i := range 3 {
			msg := fmt.Sprintf("hello %d", i)
			if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Errorf("WebSocket through %s: write: %v", tc.name, err)
				break
			}
			if _, b, err := c.Read(ctx); err != nil || string(b) != "echo:"+msg {
				t.Errorf("WebSocket through %s: read %q (%v), want %q", tc.name, b, err, "echo:"+msg)
				break
			}
		}
		_ = c.Close(websocket.StatusNormalClosure, "")
	}

	// primectl workspace port-forward, as a user runs it: 100 connections
	// at once through it, each a whole HTTP/1.0 exchange ended by a
	// half-close.
	local := freePort(t)
	fctx, stopForward := context.WithCancel(ctx)
	forwarded := make(chan int, 1)
	go func() {
		args := []string{"--url", p.srv.URL(), "--token", p.key, "workspace", "port-forward", id, fmt.Sprintf("%d:8000", local)}
		forwarded <- cli.RunWith(fctx, args, strings.NewReader(""), &lockedBuffer{}, &lockedBuffer{}, p.checked)
	}()
	eventually(t, 30*time.Second, "primectl port-forward listening", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	var wg sync.WaitGroup
	errc := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pc, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
			if err != nil {
				errc <- fmt.Errorf("connection %d: %w", i, err)
				return
			}
			defer pc.Close()
			if _, err := io.WriteString(pc, "GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n"); err != nil {
				errc <- fmt.Errorf("connection %d: write: %w", i, err)
				return
			}
			_ = pc.(*net.TCPConn).CloseWrite()
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
	stopForward()
	if code := <-forwarded; code != 0 {
		t.Errorf("primectl workspace port-forward ended with exit %d when interrupted, want 0", code)
	}
}

// startServer runs python script in workspace id as a background process
// and returns once it printed ready (read with replay: it may have said it
// already).
func startServer(t *testing.T, p *primer, ctx context.Context, id, script, ready string) {
	t.Helper()
	proc, err := p.api.StartProcess(ctx, id, wire.ProcessSpec{Command: []string{"python", "-u", script}})
	if err != nil {
		t.Fatal(err)
	}
	at, err := p.api.AttachProcess(ctx, id, proc.PID, client.AttachOptions{Replay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer at.Close()
	var said strings.Builder
	for !strings.Contains(said.String(), ready) {
		m, err := at.Recv(ctx)
		if err != nil || m.Type == wire.AttachExit {
			t.Fatalf("%s did not start: %v; it said %q", script, err, said.String())
		}
		said.Write(m.Data)
	}
}

// wsEchoPy is a WebSocket echo server of sockets on 127.0.0.1:8001 (the
// test image's python has no http or websockets package): it answers the
// handshake and sends back each text or binary message prefixed "echo:",
// one connection at a time.
const wsEchoPy = `import socket, hashlib, base64, struct
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 8001))
s.listen(16)
print('Serving WebSocket on 127.0.0.1 port 8001')
G = b'258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
def recvn(c, n):
    b = b''
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise EOFError
        b += d
    return b
while True:
    c, _ = s.accept()
    try:
        req = b''
        while b'\r\n\r\n' not in req:
            d = c.recv(4096)
            if not d:
                raise EOFError
            req += d
        key = b''
        for line in req.split(b'\r\n'):
            if line.lower().startswith(b'sec-websocket-key:'):
                key = line.split(b':', 1)[1].strip()
        acc = base64.b64encode(hashlib.sha1(key + G).digest())
        c.sendall(b'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + acc + b'\r\n\r\n')
        while True:
            h = recvn(c, 2)
            op, n = h[0] & 15, h[1] & 127
            if n == 126:
                n = struct.unpack('>H', recvn(c, 2))[0]
            elif n == 127:
                n = struct.unpack('>Q', recvn(c, 8))[0]
            mask = recvn(c, 4) if h[1] & 128 else b'\0\0\0\0'
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(recvn(c, n)))
            if op == 8:
                c.sendall(b'\x88\x00')
                break
            if op in (1, 2):
                out = b'echo:' + data
                hdr = bytes([128 | op]) + (bytes([len(out)]) if len(out) < 126 else bytes([126]) + struct.pack('>H', len(out)))
                c.sendall(hdr + out)
    except (EOFError, OSError):
        pass
    c.close()
`

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
