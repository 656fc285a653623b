package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	apiclient "github.com/primerhq/primer/api/client"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// devServer is a program listening on a loopback port of the workspace's
// host (a local workspace's runtime dials there): it reports what it was
// sent, streams SSE, and echoes a WebSocket.
type devServer struct {
	port int
	// next releases the second SSE event: the test sends on it only once
	// it has read the first, so the first must have been flushed through.
	next chan struct{}
	// hits counts the requests /echo/ answered.
	hits atomic.Int64
}

// seen is what /echo reports about the request it got.
type seen struct {
	Method, Path, RawPath, Query, Host, Authorization, Cookie, Prefix, ForwardedHost string
	BodyBytes                                                                        int
}

func startDevServer(t *testing.T) *devServer {
	t.Helper()
	d := &devServer{next: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo/", func(w http.ResponseWriter, r *http.Request) {
		d.hits.Add(1)
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Add("Set-Cookie", wire.ConsoleCookie+"=planted; Path=/")
		w.Header().Add("Set-Cookie", "app=1; Path=/")
		_ = json.NewEncoder(w).Encode(seen{Method: r.Method, Path: r.URL.Path, RawPath: r.URL.EscapedPath(), Query: r.URL.RawQuery,
			Host: r.Host, Authorization: r.Header.Get("Authorization"), Cookie: r.Header.Get("Cookie"),
			Prefix: r.Header.Get(wire.PortForwardedPrefix), ForwardedHost: r.Header.Get("X-Forwarded-Host"), BodyBytes: int(n)})
	})
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-d.next:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "data: two\n\n")
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, append([]byte("echo:"), b...)); err != nil {
				return
			}
		}
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	_, p, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
	d.port, _ = strconv.Atoi(p)
	return d
}

// portRequest sends one request to the port proxy with key (none when
// empty) and returns the answer; the caller closes its body.
func (h *harness) portRequest(method, path, key string, body io.Reader, header ...string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	return res
}

// TestPortProxy: a request through /ports/ reaches the program on that
// port inside the workspace with its path, escaping, query and a streamed
// body intact and without the caller's credentials; SSE arrives event by
// event; a WebSocket upgrades and echoes.
func TestPortProxy(t *testing.T) {
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	d := startDevServer(t)
	base := fmt.Sprintf("/v1/workspaces/%s/ports/%d", w.ID, d.port)

	t.Run("request", func(t *testing.T) {
		body := make([]byte, 5<<20+17)
		_, _ = rand.Read(body)
		res := h.portRequest(http.MethodPost, base+"/echo/a%2Fb/c?x=1&y=%20", h.adminKey, bytes.NewReader(body),
			"Cookie", wire.ConsoleCookie+"=secret-session; theme=dark")
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(res.Body)
			t.Fatalf("status %d: %s", res.StatusCode, b)
		}
		var got seen
		if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		want := seen{Method: "POST", Path: "/echo/a/b/c", RawPath: "/echo/a%2Fb/c", Query: "x=1&y=%20",
			Host: fmt.Sprintf("127.0.0.1:%d", d.port), Cookie: "theme=dark", Prefix: base,
			ForwardedHost: strings.TrimPrefix(h.url, "http://"), BodyBytes: len(body)}
		if got != want {
			t.Errorf("the program saw\n%+v\nwant\n%+v", got, want)
		}
		// The program's own cookie comes back; the console's it may not set.
		if sc := res.Header.Values("Set-Cookie"); len(sc) != 1 || sc[0] != "app=1; Path=/" {
			t.Errorf("Set-Cookie through the proxy = %q, want only the program's own app=1", sc)
		}
	})

	t.Run("port written with a leading zero", func(t *testing.T) {
		zbase := fmt.Sprintf("/v1/workspaces/%s/ports/0%d", w.ID, d.port)
		res := h.portRequest(http.MethodGet, zbase+"/echo/z", h.adminKey, nil)
		defer res.Body.Close()
		var got seen
		if err := json.NewDecoder(res.Body).Decode(&got); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("status %d (%v)", res.StatusCode, err)
		}
		if got.Path != "/echo/z" || got.Prefix != zbase {
			t.Errorf("the program saw path %q prefix %q, want /echo/z and %s", got.Path, got.Prefix, zbase)
		}
	})

	t.Run("sse", func(t *testing.T) {
		res := h.portRequest(http.MethodGet, base+"/sse", h.adminKey, nil)
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
		}
		r := bufio.NewReader(res.Body)
		// The second event is written only after the first was read here.
		if line, err := r.ReadString('\n'); err != nil || line != "data: one\n" {
			t.Fatalf("first line %q (%v)", line, err)
		}
		close(d.next)
		rest, err := io.ReadAll(r)
		if err != nil || string(rest) != "\ndata: two\n\n" {
			t.Fatalf("rest %q (%v)", rest, err)
		}
	})

	t.Run("websocket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.url, "http")+base+"/ws", &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Bearer " + h.adminKey}},
		})
		if err != nil {
			t.Fatalf("websocket through the port proxy: %v", err)
		}
		defer c.CloseNow()
		for i := range 3 {
			msg := fmt.Sprintf("hello %d", i)
			if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			_, b, err := c.Read(ctx)
			if err != nil || string(b) != "echo:"+msg {
				t.Fatalf("read %q (%v), want %q", b, err, "echo:"+msg)
			}
		}
		_ = c.Close(websocket.StatusNormalClosure, "")
	})
}

// TestPortProxyRefusals: a bad port is 400, nothing listening 502 saying
// so, no key 401, another tenant's key 404 as for an unknown workspace, a
// viewer 403; none reaches the program.
func TestPortProxyRefusals(t *testing.T) {
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	d := startDevServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if err := h.store.CreateTenant(context.Background(), &wire.Tenant{ID: "bravo"}); err != nil {
		t.Fatal(err)
	}
	other := h.newKey("bravo", wire.RoleMember)
	viewer := h.newKey(wire.DefaultTenantID, wire.RoleViewer)
	path := func(id string, port any) string { return fmt.Sprintf("/v1/workspaces/%s/ports/%v/echo/", id, port) }

	for _, tc := range []struct {
		name, path, key string
		status          int
		code, msg       string
	}{
		{"port zero", path(w.ID, 0), h.adminKey, 400, "invalid", "want a number from 1 to 65535"},
		{"port too big", path(w.ID, 65536), h.adminKey, 400, "invalid", "want a number from 1 to 65535"},
		{"port not a number", path(w.ID, "http"), h.adminKey, 400, "invalid", "want a number from 1 to 65535"},
		{"nothing listening", path(w.ID, closed), h.adminKey, 502, "bad_gateway", fmt.Sprintf("nothing is listening on 127.0.0.1:%d inside the workspace", closed)},
		{"no key", path(w.ID, d.port), "", 401, "unauthenticated", ""},
		{"another tenant", path(w.ID, d.port), other, 404, "not_found", "workspace " + w.ID + ": not found"},
		{"unknown workspace", path("ws-00000000", d.port), h.adminKey, 404, "not_found", ""},
		{"viewer", path(w.ID, d.port), viewer, 403, "forbidden", "may not reach a workspace's ports"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := h.portRequest(http.MethodGet, tc.path, tc.key, nil)
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			response{status: res.StatusCode, body: b}.expectError(t, tc.status, tc.code, "", tc.msg)
		})
	}
	if n := d.hits.Load(); n != 0 {
		t.Errorf("the program answered %d refused requests", n)
	}
}

// TestPortProxyOldRuntime: a runtime that predates tunnels is 501 saying
// so, not a 502 that would blame the program.
func TestPortProxyOldRuntime(t *testing.T) {
	h := newHarness(t)
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	h.srv.failPort(c, "ws-1", 3000, errs.E(errs.Precondition, "runtime ws://x: tcp.open: the workspace's runtime predates port tunnels (%w)", errors.ErrUnsupported))
	response{status: rec.Code, body: rec.Body.Bytes()}.expectError(t, http.StatusNotImplemented, "not_implemented", "", "predates port tunnels")
}

// tcpEcho listens on a loopback port and echoes each connection, then
// half-closes its side when the caller half-closed theirs.
func tcpEcho(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				_, _ = io.Copy(nc, nc)
				_ = nc.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestPortForward: the port-forward WebSocket, through the Go client,
// carries 100 connections to one port at once, each its own bytes, with
// half-close both ways; nothing listening is a 502 before the upgrade and
// another tenant's workspace 404.
func TestPortForward(t *testing.T) {
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	port := tcpEcho(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := apiclient.New(h.url, apiclient.WithToken(h.adminKey))

	const n = 100
	errc := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pc, err := c.DialPort(ctx, w.ID, port)
			if err != nil {
				errc <- fmt.Errorf("connection %d: %w", i, err)
				return
			}
			defer pc.Close()
			data := bytes.Repeat([]byte{byte(i)}, 64<<10+i)
			go func() {
				_, _ = pc.Write(data)
				_ = pc.CloseWrite()
			}()
			got, err := io.ReadAll(pc)
			if err != nil || !bytes.Equal(got, data) {
				errc <- fmt.Errorf("connection %d: read back %d bytes (%v), want %d", i, len(got), err, len(data))
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	_, err = c.DialPort(ctx, w.ID, closed)
	var ae *apiclient.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway || !strings.Contains(ae.Message, "nothing is listening") {
		t.Errorf("DialPort to a closed port: %v; want 502 saying nothing is listening", err)
	}
	if err := h.store.CreateTenant(ctx, &wire.Tenant{ID: "bravo"}); err != nil {
		t.Fatal(err)
	}
	other := apiclient.New(h.url, apiclient.WithToken(h.newKey("bravo", wire.RoleMember)))
	if _, err := other.DialPort(ctx, w.ID, port); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("another tenant's DialPort: %v; want 404", err)
	}
}

// TestListPortsRoute: GET /v1/workspaces/{id}/ports lists a port another
// program listens on inside the workspace (a local one shares the host's
// network); another tenant's key is 404.
func TestListPortsRoute(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("ports.list reads /proc/net/tcp: Linux only")
	}
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	cmd := exec.Command("/usr/bin/python3", "-c", "import socket,sys\ns=socket.socket()\ns.bind(('0.0.0.0',0))\ns.listen()\nprint(s.getsockname()[1],flush=True)\nsys.stdin.read()")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Skipf("needs /usr/bin/python3 to run a listening program: %v", err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	port, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		t.Fatalf("the program's port: %q (%v)", line, err)
	}
	res := h.do(http.MethodGet, "/v1/workspaces/"+w.ID+"/ports", nil)
	var got wire.Items[protocol.ListeningPort]
	res.decode(t, &got)
	found := false
	for _, p := range got.Items {
		found = found || (p.Port == port && p.Address == "0.0.0.0")
	}
	if res.status != http.StatusOK || !found {
		t.Errorf("status %d: %s; want port %d on 0.0.0.0", res.status, res.body, port)
	}
	if err := h.store.CreateTenant(context.Background(), &wire.Tenant{ID: "bravo"}); err != nil {
		t.Fatal(err)
	}
	h.do(http.MethodGet, "/v1/workspaces/"+w.ID+"/ports", nil, "Authorization", "Bearer "+h.newKey("bravo", wire.RoleMember)).
		expectError(t, http.StatusNotFound, "not_found", "", "workspace "+w.ID+": not found")
}
