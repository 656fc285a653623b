package client_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// echoHandler echoes a reverse tunnel: what it reads it writes back, then
// half-closes; tag is written first so a test can tell handlers apart.
func echoHandler(tag string) func(net.Conn) {
	return func(nc net.Conn) {
		defer nc.Close()
		_, _ = nc.Write([]byte(tag))
		_, _ = io.Copy(nc, nc)
		_ = nc.(interface{ CloseWrite() error }).CloseWrite()
	}
}

// roundTrip connects to the sandbox's port as a program there would,
// writes data, half-closes and returns all it reads back.
func roundTrip(t *testing.T, port int, data []byte) []byte {
	t.Helper()
	nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("dial the gateway port: %v", err)
	}
	defer nc.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := nc.Write(data)
		if err == nil {
			err = nc.(*net.TCPConn).CloseWrite()
		}
		errc <- err
	}()
	got, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("write: %v", err)
	}
	return got
}

// TestListenCarriesConnections: connections a program makes to a
// gateway.listen port reach the platform's handler over the runtime
// connection, many windows of bytes each way, half-close passed on.
func TestListenCarriesConnections(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	port, err := e.Client.Listen(runtimetest.Ctx(t), 0, echoHandler("a:"))
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	if port == 0 {
		t.Fatal("Listen returned port 0")
	}
	data := make([]byte, 5*protocol.TunnelWindow+77)
	_, _ = rand.Read(data)
	for i := range 3 {
		got := roundTrip(t, port, data)
		if !bytes.Equal(got, append([]byte("a:"), data...)) {
			t.Fatalf("connection %d: read back %d bytes, want the tag and the %d written", i, len(got), len(data))
		}
	}
}

// TestListenTakenOverOnReconnect: after the platform's connection ends,
// a new connection's Listen on the same port takes the runtime's listener
// over, so programs keep the address they were given.
func TestListenTakenOverOnReconnect(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	port, err := e.Client.Listen(ctx, 0, echoHandler("old:"))
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	if got := roundTrip(t, port, []byte("x")); string(got) != "old:x" {
		t.Fatalf("before the reconnect: read %q, want old:x", got)
	}
	_ = e.Client.Close()
	c2, err := client.Dial(ctx, e.URL, runtimetest.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	got, err := c2.Listen(ctx, port, echoHandler("new:"))
	if err != nil || got != port {
		t.Fatalf("Listen again: port %d, %v; want %d", got, err, port)
	}
	if got := roundTrip(t, port, []byte("y")); string(got) != "new:y" {
		t.Fatalf("after the reconnect: read %q, want new:y", got)
	}
}

// TestListenRefusals: a port held by another program is a conflict, an
// out-of-range port is invalid.
func TestListenRefusals(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := ln.Addr().(*net.TCPAddr).Port
	if _, err := e.Client.Listen(ctx, held, echoHandler("")); !errs.Is(err, errs.Conflict) {
		t.Errorf("Listen on a held port: %v, want a conflict", err)
	}
	if _, err := e.Client.Listen(ctx, 70000, echoHandler("")); !errs.Is(err, errs.Invalid) {
		t.Errorf("Listen on port 70000: %v, want invalid", err)
	}
	if err := e.Client.Ping(ctx); err != nil {
		t.Errorf("the connection after the refusals: %v", err)
	}
}

// TestPoolOnConnectListensAgain: the pool calls OnConnect with every new
// connection, so a hook that listens there (the model gateway) serves
// again after the connection is lost and redialed.
func TestPoolOnConnectListensAgain(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	port := 0
	conns := make(chan *client.Client, 4)
	pool := client.NewPool()
	defer pool.Close()
	pool.OnConnect = func(key string, c *client.Client) {
		if key == "ws-1" {
			conns <- c
		}
	}
	tags := []string{"first:", "second:"}
	for i, tag := range tags {
		c, err := pool.Get(ctx, "ws-1", e.URL, runtimetest.Token)
		if err != nil {
			t.Fatal(err)
		}
		if got := <-conns; got != c {
			t.Fatalf("dial %d: OnConnect got another client than Get returned", i)
		}
		p, err := c.Listen(ctx, port, echoHandler(tag))
		if err != nil {
			t.Fatalf("dial %d: Listen: %v", i, err)
		}
		port = p
		if got := roundTrip(t, port, []byte("z")); string(got) != tag+"z" {
			t.Fatalf("dial %d: read %q, want %sz", i, got, tag)
		}
		_ = c.Close() // the connection is lost; the next Get redials
		<-c.Done()
	}
}

// TestListenOldRuntime: a runtime from before reverse tunnels answers
// gateway.listen "unknown op"; Listen says it predates them, wrapping
// errors.ErrUnsupported, and the connection stays usable.
func TestListenOldRuntime(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	url, refused := runtimeWithout(t, e.URL, protocol.OpGatewayListen)
	ctx := runtimetest.Ctx(t)
	c, err := client.Dial(ctx, url, runtimetest.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Listen(ctx, 0, echoHandler(""))
	if !errors.Is(err, errors.ErrUnsupported) || !errs.Is(err, errs.Precondition) || !strings.Contains(err.Error(), "predates reverse tunnels") {
		t.Fatalf("Listen on an old runtime: %v; want Precondition wrapping errors.ErrUnsupported", err)
	}
	if refused.Load() != 1 {
		t.Errorf("the old runtime was asked gateway.listen %d times, want 1", refused.Load())
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
