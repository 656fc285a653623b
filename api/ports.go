package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// portMethods are the methods /v1/workspaces/:id/ports/:port/*path
// forwards (CONNECT and TRACE are not an application's business).
var portMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions}

// proxyPort forwards a request to 127.0.0.1:port inside the workspace
// through a tunnel on its runtime connection (tcp.open), so it reaches a
// dev server under egress deny_all and on every backend; the workspace's
// firewall is not touched. HTTP/1.1 with streamed bodies both ways (SSE
// flushed as it comes) and upgrades (WebSocket) are carried; one tunnel
// per proxied connection.
//
// What reaches the sandbox carries none of the caller's credentials: the
// Authorization header and the console's cookie are removed. The
// workspace is looked up as every workspace route does (another tenant's
// is 404); a viewer may not use it even to GET, since a GET to a program
// is whatever that program makes of it.
func (s *server) proxyPort(c *gin.Context) {
	if c.Request.Method == http.MethodPost && c.Param("path") == "/preview" {
		s.createPortPreview(c)
		return
	}
	ws, cl, port, err := s.portRuntime(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	auditResource(c, "workspaces/"+ws.ID+"/ports/"+strconv.Itoa(port))
	prefix, rest := splitPath(c.Request.URL.EscapedPath(), 6)
	s.proxyTo(c, ws, cl, port, prefix, rest, nil)
}

// proxyTo forwards the request to 127.0.0.1:port inside ws over its
// runtime connection cl, the program
// seeing the escaped path rest under prefix (X-Forwarded-Prefix); headers,
// when not nil, adds to the program's answer. The caller has checked who
// may reach ws.
func (s *server) proxyTo(c *gin.Context, ws *wire.Workspace, cl *client.Client, port int, prefix, rest string, headers func(http.Header)) {
	ctx := c.Request.Context()
	first, err := cl.DialPort(ctx, port)
	if err != nil {
		s.failPort(c, ws.ID, port, err)
		return
	}
	// Bytes sent to the program are activity, as a REST call is: a long
	// WebSocket or a stream keeps the workspace from its idle deadline.
	var touchMu sync.Mutex
	touch := func() {
		touchMu.Lock()
		defer touchMu.Unlock()
		s.touch(ctx, ws)
	}
	d := &portDialer{cl: cl, port: port, first: first, touch: touch}
	defer d.closeUnused()

	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetXForwarded()
			out := pr.Out
			out.URL.Scheme = "http"
			out.URL.Host = target
			out.Host = target
			if p, err := url.PathUnescape(rest); err == nil {
				out.URL.Path, out.URL.RawPath = p, rest
			} else {
				out.URL.Path, out.URL.RawPath = "/"+strings.TrimPrefix(c.Param("path"), "/"), ""
			}
			if prefix != "" {
				out.Header.Set(wire.PortForwardedPrefix, prefix)
			}
			out.Header.Del("Authorization")
			stripCookie(out.Header, wire.ConsoleCookie)
			stripCookie(out.Header, wire.PreviewCookie)
			if q := out.URL.Query(); q.Has(wire.PreviewQuery) {
				q.Del(wire.PreviewQuery)
				out.URL.RawQuery = q.Encode()
			}
		},
		// The program answers on the platform's origin: it may not set
		// the console's cookie there (a session of its choosing), nor a
		// preview host's.
		ModifyResponse: func(res *http.Response) error {
			stripSetCookie(res.Header, wire.ConsoleCookie)
			stripSetCookie(res.Header, wire.PreviewCookie)
			if headers != nil {
				headers(res.Header)
			}
			return nil
		},
		Transport: &http.Transport{
			Proxy:       nil,
			DialContext: d.dial,
			// One tunnel per proxied connection: tunnels are cheap, and a
			// pool would outlive the runtime connection they ride on.
			DisableKeepAlives:  true,
			DisableCompression: true,
		},
		// Flush every write: SSE and long polls arrive as the program
		// sends them.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
				return // the caller left; nobody reads an answer
			}
			s.failStatus(c, http.StatusBadGateway, "bad_gateway",
				fmt.Sprintf("workspace %s: port %d: %v", ws.ID, port, err), nil)
		},
	}
	rp.ServeHTTP(c.Writer, c.Request)
}

// listPorts answers GET /v1/workspaces/:id/ports: the TCP ports programs
// listen on inside the workspace, on loopback or any address, read by the
// runtime (ports.list); a runtime from before the op is 501.
func (s *server) listPorts(c *gin.Context) {
	ws, cl, err := s.runtimeClient(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ports, err := cl.ListPorts(c.Request.Context())
	if errors.Is(err, errors.ErrUnsupported) {
		s.failStatus(c, http.StatusNotImplemented, "not_implemented", fmt.Sprintf("workspace %s: %v", ws.ID, err), nil)
		return
	}
	if err != nil {
		s.fail(c, errs.Within("workspace "+ws.ID, err))
		return
	}
	c.JSON(http.StatusOK, wire.Items[protocol.ListeningPort]{Items: ports})
}

// portRuntime checks a port route's :port and caller and returns the
// workspace, its runtime connection and the port.
func (s *server) portRuntime(c *gin.Context) (*wire.Workspace, *client.Client, int, error) {
	port, err := strconv.Atoi(c.Param("port"))
	if err != nil || port < 1 || port > 65535 {
		return nil, nil, 0, errs.Field("port", "port %q: want a number from 1 to 65535", c.Param("port"))
	}
	if p := callerOf(c); p.Role == wire.RoleViewer {
		return nil, nil, 0, errs.E(errs.Forbidden, "api key %s: role viewer may not reach a workspace's ports", p.KeyID)
	}
	ws, cl, err := s.runtimeClient(c)
	if err != nil {
		return nil, nil, 0, err
	}
	return ws, cl, port, nil
}

// failPort answers a tunnel that could not be opened: nothing listening
// is 502 and a runtime without tunnels 501, each saying so; the rest as
// any runtime error.
func (s *server) failPort(c *gin.Context, wsID string, port int, err error) {
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		s.failStatus(c, http.StatusNotImplemented, "not_implemented",
			fmt.Sprintf("workspace %s: port %d: %v", wsID, port, err), nil)
	case errs.Is(err, errs.NotFound):
		s.failStatus(c, http.StatusBadGateway, "bad_gateway",
			fmt.Sprintf("workspace %s: port %d: nothing is listening on 127.0.0.1:%d inside the workspace", wsID, port, port),
			map[string]string{"port": strconv.Itoa(port)})
	default:
		s.fail(c, errs.Within("workspace "+wsID, err))
	}
}

// portDialer hands the Transport the tunnel the handler opened (so its
// errors were answered with their own status before proxying began), and
// a new one for any further dial.
type portDialer struct {
	cl    *client.Client
	port  int
	touch func() // called before each write to the program

	mu    sync.Mutex
	first *client.Tunnel // nil once taken
}

func (d *portDialer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	d.mu.Lock()
	t := d.first
	d.first = nil
	d.mu.Unlock()
	if t == nil {
		var err error
		if t, err = d.cl.DialPort(ctx, d.port); err != nil {
			return nil, err
		}
	}
	return &activeConn{Tunnel: t, touch: d.touch}, nil
}

// activeConn is a tunnel whose writes count as the workspace's activity.
type activeConn struct {
	*client.Tunnel
	touch func()
}

func (a *activeConn) Write(p []byte) (int, error) {
	a.touch()
	return a.Tunnel.Write(p)
}

// closeUnused closes the first tunnel if the Transport never took it.
func (d *portDialer) closeUnused() {
	d.mu.Lock()
	t := d.first
	d.first = nil
	d.mu.Unlock()
	if t != nil {
		_ = t.Close()
	}
}

// splitPath splits the escaped path of a proxied request into the prefix
// the caller used, its first n segments counting the empty one before the
// leading "/" (six for /v1/workspaces/{id}/ports/{port}, three for
// /preview/{token}), and the rest, "/" when none: what the program in the
// sandbox sees, with the caller's escaping kept.
func splitPath(escaped string, n int) (prefix, rest string) {
	segs := strings.SplitN(escaped, "/", n+1)
	if len(segs) < n+1 {
		return escaped, "/"
	}
	return strings.Join(segs[:n], "/"), "/" + segs[n]
}

// stripCookie removes the cookie named name from h's Cookie lines and
// drops lines left empty.
func stripCookie(h http.Header, name string) {
	lines := h.Values("Cookie")
	if len(lines) == 0 {
		return
	}
	h.Del("Cookie")
	for _, line := range lines {
		var keep []string
		for part := range strings.SplitSeq(line, ";") {
			k, _, _ := strings.Cut(strings.TrimSpace(part), "=")
			if k == name || strings.TrimSpace(part) == "" {
				continue
			}
			keep = append(keep, strings.TrimSpace(part))
		}
		if len(keep) > 0 {
			h.Add("Cookie", strings.Join(keep, "; "))
		}
	}
}

// portForward carries one TCP connection to 127.0.0.1:port inside the
// workspace over a WebSocket (GET /v1/workspaces/:id/port-forward/:port),
// for primectl workspace port-forward: binary messages are the bytes each
// way, a text message wire.PortForwardEOF a half-close. Refusals are
// answered before the upgrade, as proxyPort answers them.
func (s *server) portForward(c *gin.Context) {
	ws, cl, port, err := s.portRuntime(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	tun, err := cl.DialPort(c.Request.Context(), port)
	if err != nil {
		s.failPort(c, ws.ID, port, err)
		return
	}
	defer tun.Close()
	conn, err := websocket.Accept(c.Writer, c.Request, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return // Accept answered the client
	}
	defer conn.CloseNow()
	conn.SetReadLimit(protocol.TunnelWindow)
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()

	// Sandbox to caller: the tunnel's bytes, then eof.
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, protocol.TunnelChunk)
		for {
			n, err := tun.Read(buf)
			if n > 0 {
				if conn.Write(ctx, websocket.MessageBinary, buf[:n]) != nil {
					cancel()
					return
				}
			}
			if errors.Is(err, io.EOF) {
				_ = conn.Write(ctx, websocket.MessageText, []byte(wire.PortForwardEOF))
				return
			}
			if err != nil {
				cancel()
				return
			}
		}
	}()
	// Caller to sandbox, until the caller's eof or close.
	for {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			break
		}
		s.touch(ctx, ws) // bytes for the program are activity
		if typ == websocket.MessageText {
			if string(b) == wire.PortForwardEOF {
				_ = tun.CloseWrite()
			}
			continue
		}
		if _, err := tun.Write(b); err != nil {
			break
		}
	}
	_ = tun.Close()
	<-done
	_ = conn.Close(websocket.StatusNormalClosure, "")
}

// stripSetCookie removes the Set-Cookie lines that set the cookie named
// name.
func stripSetCookie(h http.Header, name string) {
	lines := h.Values("Set-Cookie")
	if len(lines) == 0 {
		return
	}
	h.Del("Set-Cookie")
	for _, line := range lines {
		k, _, _ := strings.Cut(line, "=")
		if strings.TrimSpace(k) != name {
			h.Add("Set-Cookie", line)
		}
	}
}
