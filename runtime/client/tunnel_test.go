package client_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// echoServer listens on a loopback port and echoes every connection: what
// it reads it writes back, and when the reading side ends it half-closes
// its writing side. accepted receives each connection's peer end.
func echoServer(t *testing.T) (port int, accepted chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = make(chan net.Conn, 1024)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- nc
			go func() {
				defer nc.Close()
				_, _ = io.Copy(nc, nc)
				_ = nc.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}

// echo writes data through tun while reading it back, then half-closes
// and expects exactly data followed by EOF.
func echo(tun *client.Tunnel, data []byte) error {
	errc := make(chan error, 1)
	go func() {
		_, err := tun.Write(data)
		if err == nil {
			err = tun.CloseWrite()
		}
		errc <- err
	}()
	got, rerr := io.ReadAll(tun)
	if werr := <-errc; werr != nil {
		return fmt.Errorf("write: %w", werr)
	}
	if rerr != nil {
		return fmt.Errorf("read: %w", rerr)
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("read back %d bytes, want the %d written", len(got), len(data))
	}
	return nil
}

// TestTunnelEcho: bytes many windows long cross a tunnel both ways intact
// (so the window comes back in both directions), and a half-close reaches
// the sandbox's side, whose own half-close ends the reading with EOF.
func TestTunnelEcho(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	port, _ := echoServer(t)
	tun, err := e.Client.DialPort(runtimetest.Ctx(t), port)
	if err != nil {
		t.Fatalf("DialPort: %v", err)
	}
	defer tun.Close()
	data := make([]byte, 12*protocol.TunnelWindow+123)
	_, _ = rand.Read(data)
	if err := echo(tun, data); err != nil {
		t.Fatal(err)
	}
	if got := tun.RemoteAddr().String(); got != fmt.Sprintf("127.0.0.1:%d", port) {
		t.Errorf("RemoteAddr %s, want 127.0.0.1:%d", got, port)
	}
}

// TestTunnelIPv6Loopback: a program listening on ::1 only (a dev server
// bound to "localhost" that chose IPv6) is reached too: nothing listens
// on 127.0.0.1 at its port, so the runtime dials ::1.
func TestTunnelIPv6Loopback(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback on this machine (%v); the case needs ::1 on lo", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		_, _ = io.Copy(nc, nc)
		_ = nc.(*net.TCPConn).CloseWrite()
	}()
	tun, err := e.Client.DialPort(runtimetest.Ctx(t), ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatalf("DialPort to a ::1-only listener: %v", err)
	}
	defer tun.Close()
	data := make([]byte, 3*protocol.TunnelWindow)
	_, _ = rand.Read(data)
	if err := echo(tun, data); err != nil {
		t.Fatal(err)
	}
}

// TestTunnelManyAtOnce: many tunnels on one connection carry their own
// bytes at the same time.
func TestTunnelManyAtOnce(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	port, _ := echoServer(t)
	ctx := runtimetest.Ctx(t)
	const n = 64
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tun, err := e.Client.DialPort(ctx, port)
			if err != nil {
				errc <- fmt.Errorf("tunnel %d: DialPort: %w", i, err)
				return
			}
			defer tun.Close()
			data := bytes.Repeat([]byte{byte(i)}, protocol.TunnelWindow+i*1000)
			if err := echo(tun, data); err != nil {
				errc <- fmt.Errorf("tunnel %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

// TestTunnelBackpressure: a program in the sandbox that accepts but never
// reads makes its tunnel's writer wait (a write deadline ends the wait)
// instead of piling bytes up in the runtime, and the connection's other
// tunnels and calls go on meanwhile.
func TestTunnelBackpressure(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			held <- nc // kept open, never read
		}
	}()
	ctx := runtimetest.Ctx(t)
	stuck, err := e.Client.DialPort(ctx, ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	_ = stuck.SetWriteDeadline(time.Now().Add(3 * time.Second))
	const total = 256 << 20
	n, err := stuck.Write(make([]byte, total))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write to a port nobody reads: %d bytes, err %v; want the deadline to end it", n, err)
	}
	// What was accepted is the window plus the kernel's socket buffers,
	// far below what was offered.
	if n >= 64<<20 {
		t.Errorf("Write took %d bytes nobody reads; backpressure should stop it near the window", n)
	}
	port, _ := echoServer(t)
	other, err := e.Client.DialPort(ctx, port)
	if err != nil {
		t.Fatalf("a second tunnel beside a stuck one: %v", err)
	}
	defer other.Close()
	if err := echo(other, bytes.Repeat([]byte("x"), 3*protocol.TunnelWindow)); err != nil {
		t.Fatalf("a second tunnel beside a stuck one: %v", err)
	}
	if err := e.Client.Ping(ctx); err != nil {
		t.Fatalf("ping beside a stuck tunnel: %v", err)
	}
	(<-held).Close()
}

// TestTunnelRefused: a port nothing listens on is NotFound, saying so, and
// a port out of range is refused before anything is sent.
func TestTunnelRefused(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx := runtimetest.Ctx(t)
	_, err = e.Client.DialPort(ctx, port)
	if !errs.Is(err, errs.NotFound) || !strings.Contains(err.Error(), "nothing is listening") {
		t.Fatalf("DialPort to a closed port: %v; want NotFound saying nothing is listening", err)
	}
	for _, p := range []int{0, -1, 65536} {
		if _, err := e.Client.DialPort(ctx, p); !errs.Is(err, errs.Invalid) {
			t.Errorf("DialPort(%d): %v; want Invalid", p, err)
		}
	}
	// The connection is fine after the refusals.
	if err := e.Client.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTunnelOldRuntime: a runtime from before tunnels answers tcp.open
// "unknown op"; DialPort says the runtime predates tunnels, wrapping
// errors.ErrUnsupported, and the connection stays usable.
func TestTunnelOldRuntime(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	url, refused := runtimeWithout(t, e.URL, protocol.OpTCPOpen)
	ctx := runtimetest.Ctx(t)
	c, err := client.Dial(ctx, url, runtimetest.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	port, _ := echoServer(t)
	_, err = c.DialPort(ctx, port)
	if !errors.Is(err, errors.ErrUnsupported) || !errs.Is(err, errs.Precondition) || !strings.Contains(err.Error(), "predates port tunnels") {
		t.Fatalf("DialPort on an old runtime: %v; want Precondition wrapping errors.ErrUnsupported", err)
	}
	if refused.Load() != 1 {
		t.Errorf("the old runtime was asked tcp.open %d times, want 1", refused.Load())
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTunnelEnds: closing a tunnel closes the sandbox's socket, and a
// connection that dies ends its tunnels on both sides: the sandbox's
// socket closes and the platform's Read fails.
func TestTunnelEnds(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	port, accepted := echoServer(t)
	ctx := runtimetest.Ctx(t)

	closed, err := e.Client.DialPort(ctx, port)
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	_ = closed.Close()
	if _, err := closed.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close: %v, want net.ErrClosed", err)
	}
	// The echo server sees EOF and closes; a Write of its own would fail
	// too, but EOF on read is what a program notices.
	_ = peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := peer.Read(make([]byte, 1)); err == nil {
		t.Error("the sandbox's socket is still open after the tunnel was closed")
	}

	c, err := client.Dial(ctx, e.URL, runtimetest.Token)
	if err != nil {
		t.Fatal(err)
	}
	tun, err := c.DialPort(ctx, port)
	if err != nil {
		t.Fatal(err)
	}
	peer = <-accepted
	readErr := make(chan error, 1)
	go func() {
		_, err := tun.Read(make([]byte, 1))
		readErr <- err
	}()
	_ = c.Close()
	if err := <-readErr; !errs.Is(err, errs.Unavailable) {
		t.Errorf("Read on a tunnel whose connection closed: %v, want Unavailable", err)
	}
	_ = peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := peer.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the sandbox's socket after its connection closed: %v, want it closed", err)
	}
}
