package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// ackEvery is how many consumed bytes a Tunnel lets pile up before it
// gives the runtime its window back in one tcp.ack: a quarter of the
// window keeps the runtime sending while saving a frame per read.
const ackEvery = protocol.TunnelWindow / 4

// Tunnel is a TCP connection to a loopback port inside the sandbox,
// carried over the runtime connection (tcp.open). It is a net.Conn, so an
// http.Transport can dial through it, and supports half-close
// (CloseWrite). Many tunnels share one connection; each has its own
// window per direction, so one that is not read holds up no other.
type Tunnel struct {
	c    *Client
	id   uint64
	port int

	opened  chan struct{} // closed on the result frame or the connection's end
	openErr error

	mu      sync.Mutex
	wake    chan struct{} // closed and replaced on every change of state
	rbuf    [][]byte      // bytes from the sandbox not yet read
	rbytes  int64         // their total
	unacked int64         // bytes read but not yet acknowledged
	rEOF    bool          // tcp.eof: the sandbox's side sends no more
	credit  int64         // bytes Write may still send
	ended   bool          // tcp.end came or the connection died
	endErr  error
	closed  bool // Close was called
	wEOF    bool // CloseWrite was called
	// abandoned is set when Dial gave up before the result: a tunnel that
	// opens after all is closed at once.
	abandoned bool

	rDeadline, wDeadline time.Time
}

// DialPort opens a tunnel to 127.0.0.1:port inside the sandbox. Nothing
// listening there is an errs.NotFound error; a runtime that predates
// tunnels an errs.Precondition error wrapping errors.ErrUnsupported.
func (c *Client) DialPort(ctx context.Context, port int) (*Tunnel, error) {
	if port < 1 || port > 65535 {
		return nil, errs.Field("port", "port %d: want 1 to 65535", port)
	}
	t := &Tunnel{c: c, port: port, opened: make(chan struct{}), wake: make(chan struct{}), credit: protocol.TunnelWindow}
	id, err := c.register(t)
	if err != nil {
		return nil, err
	}
	t.id = id
	if err := c.send(ctx, &protocol.Request{ID: id, Op: protocol.OpTCPOpen, Port: port}); err != nil {
		c.unregister(id)
		return nil, err
	}
	select {
	case <-t.opened:
	case <-ctx.Done():
		t.mu.Lock()
		t.abandoned = true
		t.mu.Unlock()
		select {
		case <-t.opened: // opened meanwhile: the result frame saw abandoned or not
			if t.openErr == nil {
				_ = t.Close()
			}
		default:
		}
		return nil, ctxError(ctx, fmt.Sprintf("runtime %s: tcp.open port %d", c.addr, port))
	}
	if t.openErr != nil {
		return nil, t.openErr
	}
	return t, nil
}

// openError gives tcp.open's refusal its meaning for callers.
func (t *Tunnel) openError(e *protocol.Error) error {
	err := e.Err()
	if unknownOp(err) {
		return errs.E(errs.Precondition, "runtime %s: tcp.open: the workspace's runtime predates port tunnels (%w); recreate the workspace to get a current runtime", t.c.addr, errors.ErrUnsupported)
	}
	return err
}

// frame handles the tunnel's frames on the reader goroutine; it never
// blocks.
func (t *Tunnel) frame(f *protocol.Frame) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.broadcast()
	switch f.Type {
	case protocol.TypeResult:
		select {
		case <-t.opened:
			return false // a second answer to tcp.open: not the protocol; ignored
		default:
		}
		if f.Error != nil {
			t.openErr = t.openError(f.Error)
			t.ended, t.endErr = true, t.openErr
			close(t.opened)
			return true
		}
		close(t.opened)
		if t.abandoned {
			t.closed = true
			go t.sendClose()
			return true
		}
	case protocol.TypeTCPData:
		t.rbytes += int64(len(f.Payload))
		if t.rbytes > protocol.TunnelWindow {
			t.ended = true
			t.endErr = errs.E(errs.Unavailable, "runtime %s: tunnel to port %d: the runtime sent more than the %d byte window", t.c.addr, t.port, protocol.TunnelWindow)
			go t.sendClose()
			return true
		}
		if len(f.Payload) > 0 {
			t.rbuf = append(t.rbuf, f.Payload)
		}
	case protocol.TypeTCPAck:
		t.credit += f.Length
	case protocol.TypeTCPEOF:
		t.rEOF = true
	case protocol.TypeTCPEnd:
		t.ended = true
		if f.Error != nil {
			t.endErr = f.Error.Err()
		}
		return true
	}
	return false
}

// payloadBuf lends a chunk-sized buffer for a tcp.data payload, which the
// tunnel keeps until it is read.
func (t *Tunnel) payloadBuf() []byte { return make([]byte, 0, protocol.TunnelChunk) }

// fail ends the tunnel because the connection died.
func (t *Tunnel) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.opened:
	default:
		t.openErr = err
		close(t.opened)
	}
	if !t.ended {
		t.ended, t.endErr = true, err
	}
	t.broadcast()
}

// broadcast wakes every Read and Write waiting; t.mu is held.
func (t *Tunnel) broadcast() {
	close(t.wake)
	t.wake = make(chan struct{})
}

// wait releases t.mu until the state changes or deadline passes; it
// returns with t.mu held.
func (t *Tunnel) wait(deadline time.Time) error {
	ch := t.wake
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		tm := time.NewTimer(d)
		defer tm.Stop()
		timeout = tm.C
	}
	t.mu.Unlock()
	defer t.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-timeout:
		return os.ErrDeadlineExceeded
	}
}

// Read reads bytes the sandbox's side sent; io.EOF once it closed its
// write side (or the tunnel ended cleanly).
func (t *Tunnel) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	t.mu.Lock()
	for {
		if t.closed {
			t.mu.Unlock()
			return 0, net.ErrClosed
		}
		if len(t.rbuf) > 0 {
			n := copy(p, t.rbuf[0])
			if n == len(t.rbuf[0]) {
				t.rbuf[0] = nil
				t.rbuf = t.rbuf[1:]
			} else {
				t.rbuf[0] = t.rbuf[0][n:]
			}
			t.rbytes -= int64(n)
			t.unacked += int64(n)
			var ack int64
			if t.unacked >= ackEvery && !t.ended {
				ack, t.unacked = t.unacked, 0
			}
			t.mu.Unlock()
			if ack > 0 {
				// A lost ack only stalls this tunnel's sender; a dead
				// connection ends the tunnel through fail anyway.
				_ = t.c.send(context.Background(), &protocol.Request{Op: protocol.OpTCPAck, Target: t.id, Length: ack})
			}
			return n, nil
		}
		if t.rEOF || (t.ended && t.endErr == nil) {
			t.mu.Unlock()
			return 0, io.EOF
		}
		if t.ended {
			err := t.endErr
			t.mu.Unlock()
			return 0, err
		}
		if err := t.wait(t.rDeadline); err != nil {
			t.mu.Unlock()
			return 0, err
		}
	}
}

// Write sends p to the sandbox's side, waiting for window as needed.
func (t *Tunnel) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		t.mu.Lock()
		for {
			var err error
			switch {
			case t.closed:
				err = net.ErrClosed
			case t.wEOF:
				err = errs.E(errs.Precondition, "runtime %s: tunnel to port %d: write after CloseWrite", t.c.addr, t.port)
			case t.ended && t.endErr != nil:
				err = t.endErr
			case t.ended:
				err = errs.E(errs.Unavailable, "runtime %s: tunnel to port %d: closed by the sandbox", t.c.addr, t.port)
			case t.credit > 0:
			default:
				err = t.wait(t.wDeadline)
				if err == nil {
					continue
				}
			}
			if err != nil {
				t.mu.Unlock()
				return written, err
			}
			break
		}
		n := int(min(int64(len(p)), t.credit, protocol.TunnelChunk))
		t.credit -= int64(n)
		t.mu.Unlock()
		if err := t.c.send(context.Background(), &protocol.Request{Op: protocol.OpTCPData, Target: t.id, Data: p[:n]}); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// CloseWrite half-closes the tunnel: the sandbox's side reads EOF once it
// has read what was written; reading goes on.
func (t *Tunnel) CloseWrite() error {
	t.mu.Lock()
	if t.closed || t.wEOF || t.ended {
		t.mu.Unlock()
		return nil
	}
	t.wEOF = true
	t.broadcast()
	t.mu.Unlock()
	return t.c.send(context.Background(), &protocol.Request{Op: protocol.OpTCPEOF, Target: t.id})
}

// Close ends the tunnel at once; the runtime closes its socket.
func (t *Tunnel) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	ended := t.ended
	t.rbuf = nil
	t.broadcast()
	t.mu.Unlock()
	t.c.unregister(t.id)
	if !ended {
		t.sendClose()
	}
	return nil
}

func (t *Tunnel) sendClose() {
	_ = t.c.send(context.Background(), &protocol.Request{Op: protocol.OpTCPClose, Target: t.id})
}

// LocalAddr names the platform's end of the tunnel.
func (t *Tunnel) LocalAddr() net.Addr {
	return tunnelAddr("runtime-tunnel/" + strconv.FormatUint(t.id, 10))
}

// RemoteAddr is the sandbox's address the tunnel reaches.
func (t *Tunnel) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: t.port}
}

// SetDeadline sets both deadlines.
func (t *Tunnel) SetDeadline(d time.Time) error {
	t.mu.Lock()
	t.rDeadline, t.wDeadline = d, d
	t.broadcast()
	t.mu.Unlock()
	return nil
}

// SetReadDeadline bounds Read's wait for bytes.
func (t *Tunnel) SetReadDeadline(d time.Time) error {
	t.mu.Lock()
	t.rDeadline = d
	t.broadcast()
	t.mu.Unlock()
	return nil
}

// SetWriteDeadline bounds Write's wait for window.
func (t *Tunnel) SetWriteDeadline(d time.Time) error {
	t.mu.Lock()
	t.wDeadline = d
	t.broadcast()
	t.mu.Unlock()
	return nil
}

var _ net.Conn = (*Tunnel)(nil)

type tunnelAddr string

func (a tunnelAddr) Network() string { return "primer-runtime" }
func (a tunnelAddr) String() string  { return string(a) }
