package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// Listener is a gateway.listen port inside the sandbox: every connection a
// program makes to it reaches the platform as a net.Conn (a Tunnel) handed
// to the Listener's handler. It lasts as long as the connection; the
// runtime keeps the port open across reconnects, and Listen on the new
// connection takes it over.
type Listener struct {
	c       *Client
	handler func(net.Conn)

	mu     sync.Mutex
	opened chan struct{} // closed on the result frame or the connection's end
	err    error
	port   int
}

// Listen asks the runtime to listen on 127.0.0.1:port inside the sandbox
// (0 picks a port) and calls handler, on a goroutine of its own, with each
// connection accepted there. It returns the port. A runtime that predates
// reverse tunnels is an errs.Precondition error wrapping
// errors.ErrUnsupported; a port another program holds errs.Conflict.
func (c *Client) Listen(ctx context.Context, port int, handler func(net.Conn)) (int, error) {
	if port < 0 || port > 65535 {
		return 0, errs.Field("port", "port %d: want 0 to 65535", port)
	}
	l := &Listener{c: c, handler: handler, opened: make(chan struct{})}
	id, err := c.register(l)
	if err != nil {
		return 0, err
	}
	if err := c.send(ctx, &protocol.Request{ID: id, Op: protocol.OpGatewayListen, Port: port}); err != nil {
		c.unregister(id)
		return 0, err
	}
	select {
	case <-l.opened:
	case <-ctx.Done():
		// The listener may open after all; its connections then reach
		// the handler, which is what the caller asked for.
		return 0, ctxError(ctx, fmt.Sprintf("runtime %s: gateway.listen port %d", c.addr, port))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	return l.port, nil
}

// frame handles the listen's result and its tcp.accept frames on the
// reader goroutine. An accepted tunnel is registered before the next frame
// is read, so none of its frames can be missed.
func (l *Listener) frame(f *protocol.Frame) bool {
	switch f.Type {
	case protocol.TypeResult:
		l.mu.Lock()
		defer l.mu.Unlock()
		select {
		case <-l.opened:
			return false // a second answer: not the protocol; ignored
		default:
		}
		defer close(l.opened)
		if f.Error != nil {
			err := f.Error.Err()
			if unknownOp(err) {
				err = errs.E(errs.Precondition, "runtime %s: gateway.listen: the workspace's runtime predates reverse tunnels (%w); recreate the workspace to get a current runtime", l.c.addr, errors.ErrUnsupported)
			}
			l.err = err
			return true
		}
		var res protocol.GatewayListenResult
		if err := json.Unmarshal(f.Result, &res); err != nil {
			l.err = errs.E(errs.Unavailable, "runtime %s: gateway.listen: malformed result: %w", l.c.addr, err)
			return true
		}
		l.port = res.Port
	case protocol.TypeTCPAccept:
		if f.Tunnel&protocol.ReverseTunnelBit == 0 {
			return false // not a runtime's tunnel id: ignored
		}
		t := &Tunnel{c: l.c, id: f.Tunnel, port: l.port, opened: make(chan struct{}), wake: make(chan struct{}), credit: protocol.TunnelWindow}
		close(t.opened)
		l.c.mu.Lock()
		if l.c.err != nil {
			l.c.mu.Unlock()
			return false
		}
		l.c.calls[t.id] = t
		l.c.mu.Unlock()
		go l.handler(&acceptedConn{t})
	}
	return false
}

// lingerTimeout bounds how long closing an accepted connection waits for
// the runtime to write what was sent to the program's socket.
const lingerTimeout = 10 * time.Second

// acceptedConn is a reverse tunnel as its handler sees it. Its Close is a
// socket's: bytes already written still reach the program (an HTTP server
// writes its answer and closes at once), where Tunnel.Close would end the
// tunnel with them still queued in the runtime.
type acceptedConn struct{ *Tunnel }

// Close half-closes, waits (at most lingerTimeout) until the runtime has
// acknowledged every byte written, then ends the tunnel.
func (a *acceptedConn) Close() error {
	t := a.Tunnel
	_ = t.CloseWrite()
	deadline := time.Now().Add(lingerTimeout)
	t.mu.Lock()
	for t.credit < protocol.TunnelWindow && !t.ended && !t.closed {
		if t.wait(deadline) != nil {
			break
		}
	}
	t.mu.Unlock()
	return t.Close()
}

// fail ends the listener because the connection died.
func (l *Listener) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.opened:
	default:
		l.err = err
		close(l.opened)
	}
}
