package server

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// listeners are the runtime's gateway.listen ports. A listener belongs to
// the runtime, not to the connection that asked for it, so a platform that
// reconnects (its own restart, a dropped connection) takes the same port
// over and the sandbox's programs, configured once with its address, keep
// working.
type listeners struct {
	mu     sync.Mutex
	byPort map[int]*listener
	closed bool
	// nextTunnel numbers the tunnels the runtime opens; ids carry
	// protocol.ReverseTunnelBit.
	nextTunnel atomic.Uint64
}

// listener is one port and the connection it hands its connections to.
type listener struct {
	ln    *net.TCPListener
	owner *conn  // nil while no connection holds it
	reqID uint64 // the owner's gateway.listen request id
}

// listen answers gateway.listen: it opens the port, or takes it over when
// the runtime already listens there, and makes c its owner.
func (c *conn) listen(req *protocol.Request) {
	if req.Port < 0 || req.Port > 65535 {
		c.reply(req.ID, nil, errs.Field("port", "gateway.listen: port %d: want 0 to 65535", req.Port))
		return
	}
	ls := &c.s.listeners
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		c.reply(req.ID, nil, errs.E(errs.Unavailable, "gateway.listen: the runtime is shutting down"))
		return
	}
	if l := ls.byPort[req.Port]; l != nil && req.Port != 0 {
		l.owner, l.reqID = c, req.ID
		ls.mu.Unlock()
		c.reply(req.ID, protocol.GatewayListenResult{Port: req.Port}, nil)
		return
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(req.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		ls.mu.Unlock()
		if errors.Is(err, syscall.EADDRINUSE) {
			c.reply(req.ID, nil, errs.E(errs.Conflict, "gateway.listen %s: another program holds the port", addr))
			return
		}
		c.reply(req.ID, nil, errs.E(errs.Unavailable, "gateway.listen %s: %w", addr, err))
		return
	}
	port := ln.Addr().(*net.TCPAddr).Port
	l := &listener{ln: ln.(*net.TCPListener), owner: c, reqID: req.ID}
	if ls.byPort == nil {
		ls.byPort = map[int]*listener{}
	}
	ls.byPort[port] = l
	ls.mu.Unlock()
	// The result goes before the accept loop can announce a connection.
	c.reply(req.ID, protocol.GatewayListenResult{Port: port}, nil)
	c.s.wg.Add(1)
	go c.s.acceptLoop(l)
}

// acceptLoop hands each accepted connection to the listener's owner as a
// tunnel, until the runtime closes.
func (s *Server) acceptLoop(l *listener) {
	defer s.wg.Done()
	for {
		sock, err := l.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("runtime: gateway accept", "error", err)
			continue
		}
		s.listeners.mu.Lock()
		owner, reqID := l.owner, l.reqID
		s.listeners.mu.Unlock()
		if owner == nil || !owner.adoptTunnel(sock, reqID) {
			// Nobody can carry it: the program sees the connection
			// closed and may retry once the platform reconnects.
			_ = sock.Close()
		}
	}
}

// adoptTunnel registers sock as a new tunnel of c and announces it with a
// tcp.accept frame; false when c is closing or full.
func (c *conn) adoptTunnel(sock *net.TCPConn, reqID uint64) bool {
	id := c.s.listeners.nextTunnel.Add(1) | protocol.ReverseTunnelBit
	t := &tunnel{c: c, id: id, sock: sock, credit: protocol.TunnelWindow}
	t.wake = sync.NewCond(&t.mu)
	c.mu.Lock()
	if c.closed || len(c.tunnels) >= protocol.MaxTunnels {
		c.mu.Unlock()
		return false
	}
	if c.tunnels == nil {
		c.tunnels = map[uint64]*tunnel{}
	}
	c.tunnels[id] = t
	c.mu.Unlock()
	// The announcement goes before the reader can send data for the id.
	if !c.send(&protocol.AcceptFrame{Type: protocol.TypeTCPAccept, ID: reqID, Tunnel: id}) {
		t.end(nil)
		return false
	}
	c.wg.Add(2)
	go t.readLoop()
	go t.writeLoop()
	return true
}

// dropOwner releases the listeners c holds: c is closing.
func (ls *listeners) dropOwner(c *conn) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, l := range ls.byPort {
		if l.owner == c {
			l.owner = nil
		}
	}
}

// close stops every listener (the runtime is closing).
func (ls *listeners) close() {
	ls.mu.Lock()
	ls.closed = true
	all := ls.byPort
	ls.byPort = nil
	ls.mu.Unlock()
	for _, l := range all {
		_ = l.ln.Close()
	}
}
