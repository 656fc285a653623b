package vm

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/primerhq/primer/errs"
)

// DialRemote opens a TCP connection to addr (e.g. "127.0.0.1:41234") as seen
// from the host, carried by the SSH connection: a port bound to the host's
// loopback is reachable with nothing opened in its firewall.
func (c *Client) DialRemote(ctx context.Context, addr string) (net.Conn, error) {
	for attempt := 0; ; attempt++ {
		k, err := c.live(ctx)
		if err != nil {
			return nil, err
		}
		nc, err := k.ssh.DialContext(ctx, "tcp", addr)
		if err == nil {
			return nc, nil
		}
		if ctx.Err() != nil {
			return nil, errs.E(errs.KindOf(ctxErr(ctx)), "ssh %s: dial %s: %w", c.addr, addr, context.Cause(ctx))
		}
		// A refused channel (nothing listens on addr) leaves the connection
		// up; a dead connection is dialled once more.
		if k.alive() && !isConnLost(err) {
			return nil, errs.E(errs.Unavailable, "ssh %s: dial %s on the host: %w", c.addr, addr, err)
		}
		c.broken(k)
		if attempt > 0 {
			return nil, errs.E(errs.Unavailable, "ssh %s: dial %s on the host: %w", c.addr, addr, err)
		}
	}
}

// isConnLost reports whether err says the SSH connection itself ended.
func isConnLost(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

// forward is one local listener whose connections are tunnelled to
// remoteAddr on hostAddr.
type forward struct {
	hostAddr, remoteAddr string
	ln                   net.Listener
	url                  string

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	done   chan struct{}
}

// Forward returns the URL "http://127.0.0.1:<port>" of a listener on this
// machine's loopback whose connections are tunnelled to remoteAddr on the
// host at hostAddr. There is one listener per key, reused while it lives and
// its target is the same; it ends with CloseForward(key) or Close. Each
// accepted connection uses the host's connection of the moment, so the
// listener outlives re-dials (a host that restarted).
func (d *Dialer) Forward(ctx context.Context, key, hostAddr, remoteAddr string) (string, error) {
	hostAddr = hostPort(hostAddr, d.conn.Port)
	// Connect first, so a refused host key or user key is the caller's error
	// rather than a dropped connection later.
	c, err := d.Client(ctx, hostAddr)
	if err != nil {
		return "", err
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return "", errs.E(errs.Unavailable, "forward %s: dialer closed", key)
	}
	if f, ok := d.forwards[key]; ok {
		if f.hostAddr == hostAddr && f.remoteAddr == remoteAddr && !f.isClosed() {
			return f.url, nil
		}
		f.close()
		delete(d.forwards, key)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", errs.E(errs.Unavailable, "forward %s: listen: %w", key, err)
	}
	f := &forward{
		hostAddr:   hostAddr,
		remoteAddr: remoteAddr,
		ln:         ln,
		url:        "http://" + ln.Addr().String(),
		conns:      map[net.Conn]struct{}{},
		done:       make(chan struct{}),
	}
	d.forwards[key] = f
	go f.serve(c, d.logger.With("forward", key, "host", hostAddr))
	return f.url, nil
}

// CloseForward closes the listener of key and its connections.
func (d *Dialer) CloseForward(key string) {
	d.mu.Lock()
	f, ok := d.forwards[key]
	delete(d.forwards, key)
	d.mu.Unlock()
	if ok {
		f.close()
	}
}

// serve accepts connections until the listener is closed.
func (f *forward) serve(c *Client, logger *slog.Logger) {
	for {
		local, err := f.ln.Accept()
		if err != nil {
			return
		}
		if !f.track(local) {
			_ = local.Close()
			return
		}
		go f.pipe(c, local, logger)
	}
}

// pipe dials remoteAddr through the host's current connection and copies
// both ways until either side ends.
func (f *forward) pipe(c *Client, local net.Conn, logger *slog.Logger) {
	defer f.untrack(local)
	defer func() { _ = local.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), c.d.conn.timeout())
	remote, err := c.DialRemote(ctx, f.remoteAddr)
	cancel()
	if err != nil {
		logger.Debug("forward: dial failed", "remote", f.remoteAddr, "err", err)
		return
	}
	if !f.track(remote) {
		_ = remote.Close()
		return
	}
	defer f.untrack(remote)
	defer func() { _ = remote.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(remote, local); closeWrite(remote); done <- struct{}{} }()
	go func() { _, _ = io.Copy(local, remote); closeWrite(local); done <- struct{}{} }()
	<-done
	<-done
}

// closeWrite half-closes conn when it can, so the peer sees the end of the
// request while the response still flows.
func closeWrite(conn net.Conn) {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = conn.Close()
}

func (f *forward) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *forward) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

func (f *forward) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

func (f *forward) close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	conns := f.conns
	f.conns = map[net.Conn]struct{}{}
	f.mu.Unlock()
	_ = f.ln.Close()
	for c := range conns {
		_ = c.Close()
	}
	close(f.done)
}
