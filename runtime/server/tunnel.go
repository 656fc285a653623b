package server

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// tunnelDialTimeout bounds tcp.open's dial. A loopback port answers or
// refuses at once; only a listener whose backlog is full makes it wait.
const tunnelDialTimeout = 10 * time.Second

// tunnel is one tcp.open: a socket to a loopback port of the sandbox and
// the two goroutines that pump it. Bytes from the client queue in `in`
// (at most protocol.TunnelWindow, which the client must respect) until
// the writer has put them on the socket and acknowledged them; bytes from
// the socket go out only while the client has given window (credit). So
// the connection's read loop never blocks on a tunnel, and a socket that
// stops reading or a client that stops acknowledging holds up its tunnel
// alone.
type tunnel struct {
	c    *conn
	id   uint64
	sock *net.TCPConn

	mu      sync.Mutex
	wake    *sync.Cond
	in      [][]byte // client bytes not yet written to the socket
	inBytes int64
	inEOF   bool  // the client sent tcp.eof
	credit  int64 // bytes the reader may still send to the client
	ended   bool
	readEOF bool // the socket's read side ended; tcp.eof sent
	wrote   bool // the client's tcp.eof was applied (CloseWrite)
	endOnce sync.Once
}

// openTunnel answers tcp.open: it dials the port and, once the tunnel is
// registered, answers with an empty result; frames of the tunnel follow.
func (c *conn) openTunnel(req *protocol.Request) {
	if req.Port < 1 || req.Port > 65535 {
		c.reply(req.ID, nil, errs.Field("port", "tcp.open: port %d: want 1 to 65535", req.Port))
		return
	}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return
	case c.tunnels[req.ID] != nil:
		c.mu.Unlock()
		c.reply(req.ID, nil, errs.E(errs.Conflict, "tcp.open: request %d: a tunnel with this id is open", req.ID))
		return
	case len(c.tunnels) >= protocol.MaxTunnels:
		c.mu.Unlock()
		c.reply(req.ID, nil, errs.E(errs.Exhausted, "tcp.open: %d tunnels are open on this connection, the most it may have", protocol.MaxTunnels))
		return
	}
	// Reserved so a second tcp.open with this id is refused while this
	// one dials; the tunnel itself replaces the placeholder.
	if c.tunnels == nil {
		c.tunnels = map[uint64]*tunnel{}
	}
	c.tunnels[req.ID] = &tunnel{ended: true}
	c.mu.Unlock()

	nc, addr, err := dialLoopback(c.ctx, req.Port)
	if err != nil {
		c.mu.Lock()
		delete(c.tunnels, req.ID)
		c.mu.Unlock()
		c.reply(req.ID, nil, dialError(addr, err))
		return
	}
	t := &tunnel{c: c, id: req.ID, sock: nc.(*net.TCPConn), credit: protocol.TunnelWindow}
	t.wake = sync.NewCond(&t.mu)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = nc.Close()
		return
	}
	c.tunnels[req.ID] = t
	c.mu.Unlock()
	// The result goes before the reader can send data for this id.
	c.reply(req.ID, struct{}{}, nil)
	c.wg.Add(2)
	go t.readLoop()
	go t.writeLoop()
}

// dialLoopback dials port on the sandbox's loopback: 127.0.0.1, and ::1
// when nothing listens there (a program bound to "localhost" that chose
// IPv6, or to ::1 only). addr is the first address, which a refusal names.
func dialLoopback(ctx context.Context, port int) (nc net.Conn, addr string, err error) {
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(ctx, tunnelDialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err = d.DialContext(ctx, "tcp", addr)
	if errors.Is(err, syscall.ECONNREFUSED) {
		if nc6, err6 := d.DialContext(ctx, "tcp", net.JoinHostPort("::1", strconv.Itoa(port))); err6 == nil {
			return nc6, addr, nil
		}
	}
	return nc, addr, err
}

// dialError words a failed dial: nothing listening is not_found, so the
// platform can tell it from a runtime it cannot reach.
func dialError(addr string, err error) error {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return errs.E(errs.NotFound, "tcp.open %s: nothing is listening there (connection refused)", addr)
	case errors.Is(err, context.DeadlineExceeded):
		return errs.E(errs.Timeout, "tcp.open %s: no answer within %s", addr, tunnelDialTimeout)
	case errors.Is(err, context.Canceled):
		return errs.E(errs.Canceled, "tcp.open %s: connection closing", addr)
	}
	return errs.E(errs.Unavailable, "tcp.open %s: %w", addr, err)
}

// tunnelOf returns the open tunnel target names, or nil.
func (c *conn) tunnelOf(target uint64) *tunnel {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tunnels[target]
	if t == nil || t.c == nil {
		return nil
	}
	return t
}

// tunnelFrame handles tcp.data, tcp.ack, tcp.eof and tcp.close on the read
// loop: none blocks. Frames for a tunnel that has ended are dropped: the
// client may have sent them before it saw tcp.end.
func (c *conn) tunnelFrame(req *protocol.Request) {
	t := c.tunnelOf(req.Target)
	if t == nil {
		return
	}
	switch req.Op {
	case protocol.OpTCPData:
		t.mu.Lock()
		if t.inEOF {
			t.mu.Unlock()
			t.end(errs.E(errs.Invalid, "tunnel %d: data after tcp.eof", t.id))
			return
		}
		t.inBytes += int64(len(req.Data))
		over := t.inBytes > protocol.TunnelWindow
		if !over && len(req.Data) > 0 {
			t.in = append(t.in, req.Data)
			t.wake.Broadcast()
		}
		t.mu.Unlock()
		if over {
			t.end(errs.E(errs.Invalid, "tunnel %d: the client sent more than the %d byte window", t.id, protocol.TunnelWindow))
		}
	case protocol.OpTCPAck:
		t.mu.Lock()
		t.credit += req.Length
		t.wake.Broadcast()
		t.mu.Unlock()
	case protocol.OpTCPEOF:
		t.mu.Lock()
		t.inEOF = true
		t.wake.Broadcast()
		t.mu.Unlock()
	case protocol.OpTCPClose:
		t.end(nil)
	}
}

// readLoop sends what the socket gives while the client has window for it.
func (t *tunnel) readLoop() {
	defer t.c.wg.Done()
	buf := make([]byte, protocol.TunnelChunk)
	for {
		t.mu.Lock()
		for t.credit <= 0 && !t.ended {
			t.wake.Wait()
		}
		if t.ended {
			t.mu.Unlock()
			return
		}
		n := min(t.credit, int64(len(buf)))
		t.mu.Unlock()
		k, err := t.sock.Read(buf[:n])
		if k > 0 {
			t.mu.Lock()
			t.credit -= int64(k)
			t.mu.Unlock()
			if !t.c.sendBinary(&protocol.TCPFrame{Type: protocol.TypeTCPData, ID: t.id}, buf[:k]) {
				t.end(nil)
				return
			}
		}
		if errors.Is(err, io.EOF) {
			t.c.send(&protocol.TCPFrame{Type: protocol.TypeTCPEOF, ID: t.id})
			t.mu.Lock()
			t.readEOF = true
			done := t.wrote
			t.mu.Unlock()
			if done {
				t.end(nil)
			}
			return
		}
		if err != nil {
			t.end(errs.E(errs.Unavailable, "tunnel %d: read the socket: %w", t.id, err))
			return
		}
	}
}

// writeLoop writes the client's bytes to the socket in order and gives
// their window back once written; tcp.eof then shuts the write side.
func (t *tunnel) writeLoop() {
	defer t.c.wg.Done()
	for {
		t.mu.Lock()
		for len(t.in) == 0 && !t.inEOF && !t.ended {
			t.wake.Wait()
		}
		if t.ended {
			t.mu.Unlock()
			return
		}
		if len(t.in) == 0 { // inEOF, everything before it written
			t.wrote = true
			done := t.readEOF
			t.mu.Unlock()
			if err := t.sock.CloseWrite(); err != nil {
				t.end(errs.E(errs.Unavailable, "tunnel %d: shut the socket's write side: %w", t.id, err))
				return
			}
			if done {
				t.end(nil)
			}
			return
		}
		b := t.in[0]
		t.in[0] = nil
		t.in = t.in[1:]
		t.mu.Unlock()
		if _, err := t.sock.Write(b); err != nil {
			t.end(errs.E(errs.Unavailable, "tunnel %d: write the socket: %w", t.id, err))
			return
		}
		t.mu.Lock()
		t.inBytes -= int64(len(b))
		t.mu.Unlock()
		if !t.c.send(&protocol.TCPFrame{Type: protocol.TypeTCPAck, ID: t.id, Length: int64(len(b))}) {
			t.end(nil)
			return
		}
	}
}

// end closes the tunnel once: the socket closes, both loops stop, and
// tcp.end (with err, if any) is the tunnel's last frame.
func (t *tunnel) end(err error) {
	t.endOnce.Do(func() {
		t.mu.Lock()
		t.ended = true
		t.in = nil
		t.wake.Broadcast()
		t.mu.Unlock()
		_ = t.sock.Close()
		t.c.mu.Lock()
		if t.c.tunnels[t.id] == t {
			delete(t.c.tunnels, t.id)
		}
		closed := t.c.closed
		t.c.mu.Unlock()
		if closed {
			return
		}
		f := protocol.TCPFrame{Type: protocol.TypeTCPEnd, ID: t.id}
		if err != nil {
			f.Error = protocol.ErrorOf(err)
		}
		t.c.send(&f)
	})
}

// closeTunnels ends every tunnel of a closing connection.
func (c *conn) closeTunnels() {
	c.mu.Lock()
	ts := make([]*tunnel, 0, len(c.tunnels))
	for _, t := range c.tunnels {
		if t.c != nil {
			ts = append(ts, t)
		}
	}
	c.mu.Unlock()
	for _, t := range ts {
		t.end(nil)
	}
}
