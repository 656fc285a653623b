// Package gateway is the platform's side of the model gateway: programs in
// a workspace whose template sets model_gateway call OpenAI- and
// Anthropic-style endpoints on a loopback port inside the sandbox; the
// runtime carries each connection to the platform over the runtime
// connection (gateway.listen), and the Gateway serves HTTP on it: it checks
// the workspace's credential, the model allowlist and the budgets, adds the
// provider's real key, forwards in the provider's wire format, streams the
// answer back as it arrives, and records usage and an audit entry. The key
// never enters the sandbox.
//
// It is data plane (api -> connector -> runtime): it never goes through
// activities or workflow history.
package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/client"
)

// attachTimeout bounds reading a workspace's rows and asking its runtime
// to listen when a connection is made.
const attachTimeout = 30 * time.Second

// Gateway serves the model gateway of every workspace whose runtime
// connection this process holds.
type Gateway struct {
	Store  *models.Store
	Logger *slog.Logger
	// HTTP reaches the providers; it should be the outbound policy's
	// client, so the policy holds for gateway calls as for agent runs.
	HTTP *http.Client
	// Now is the clock for budgets (time.Now when nil).
	Now func() time.Time
}

// Attach is the runtime pool's hook on every new connection to workspace
// id's runtime: when the workspace's template has a model gateway, it asks
// the runtime to listen on the gateway's port and serves what arrives
// there. A reconnect (a platform or runtime restart) calls it again, so the
// gateway survives both.
func (g *Gateway) Attach(id string, cl *client.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), attachTimeout)
	defer cancel()
	ws, err := g.Store.GetWorkspace(ctx, id)
	if err != nil {
		return // not a workspace row (a test's key) or gone: nothing to serve
	}
	t, err := g.Store.GetTemplate(ctx, ws.TemplateID)
	if err != nil {
		g.logger().Warn("model gateway: read the template", "workspace_id", id, "error", err)
		return
	}
	var common backend.Common
	if err := json.Unmarshal(t.Backend, &common); err != nil || common.ModelGateway == nil {
		return
	}
	srv := g.server(ws.ID, ws.TenantID)
	ln := newConnListener(cl)
	want := common.ModelGateway.PortFor(common.Kind, id)
	port, err := cl.Listen(ctx, want, ln.push)
	if err != nil {
		g.logger().Warn("model gateway: listen in the sandbox", "workspace_id", id, "port", want, "error", err)
		return
	}
	g.logger().Info("model gateway serving", "workspace_id", id, "port", port)
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-cl.Done()
		_ = srv.Close()
	}()
}

// server is the HTTP server of one workspace's tunnels.
func (g *Gateway) server(workspaceID, tenantID string) *http.Server {
	return &http.Server{
		Handler:           &handler{g: g, workspaceID: workspaceID, tenantID: tenantID},
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(g.logger().Handler(), slog.LevelDebug),
	}
}

func (g *Gateway) logger() *slog.Logger {
	if g.Logger == nil {
		return slog.Default()
	}
	return g.Logger
}

func (g *Gateway) now() time.Time {
	if g.Now == nil {
		return time.Now()
	}
	return g.Now()
}

// connListener is a net.Listener of the tunnels one runtime connection's
// gateway.listen hands over; it closes with the connection.
type connListener struct {
	conns chan net.Conn
	done  <-chan struct{}
	once  sync.Once
	shut  chan struct{}
}

func newConnListener(cl *client.Client) *connListener {
	return &connListener{conns: make(chan net.Conn), done: cl.Done(), shut: make(chan struct{})}
}

// push hands an accepted tunnel to Accept, or closes it when the listener
// is closed.
func (l *connListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.shut:
		_ = c.Close()
	case <-l.done:
		_ = c.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.shut:
	case <-l.done:
	}
	return nil, net.ErrClosed
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.shut) })
	return nil
}

func (l *connListener) Addr() net.Addr { return gatewayAddr{} }

type gatewayAddr struct{}

func (gatewayAddr) Network() string { return "primer-runtime" }
func (gatewayAddr) String() string  { return "model-gateway" }
