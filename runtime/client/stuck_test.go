package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// TestRuntimeThatStopsReading connects to a runtime that accepts the
// WebSocket and never reads from it. One caller writes until a write blocks
// on the full socket; a second caller on the same connection still gets its
// own Timeout at its deadline instead of waiting behind it; the blocked
// write ends with the connection after the write deadline, every later call
// fails at once, and no goroutine is left behind.
func TestRuntimeThatStopsReading(t *testing.T) {
	before := runtime.NumGoroutine()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{protocol.Version}})
		if err != nil {
			return
		}
		<-release // never read
		_ = ws.CloseNow()
	}))
	c, err := client.Dial(t.Context(), "ws"+strings.TrimPrefix(srv.URL, "http"), "tok")
	if err != nil {
		t.Fatal(err)
	}
	const deadline = time.Second
	client.SetWriteTimeout(c, deadline)

	// The first caller writes 1 MiB files until one blocks.
	var writing atomic.Int64 // unix nanos the write in progress started at
	stuck := make(chan error, 1)
	go func() {
		data := make([]byte, 1<<20)
		for {
			// The runtime never answers: each call ends at its 100ms
			// deadline, unless its write is what blocks.
			writing.Store(time.Now().UnixNano())
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			err := c.WriteFile(ctx, "f", data, 0)
			cancel()
			if err != nil && !errs.Is(err, errs.Timeout) {
				stuck <- err
				return
			}
		}
	}()
	// A call that has gone on well past its 100ms deadline is one whose
	// write holds the socket.
	waitUntil(t, 20*time.Second, "a write blocked on the socket", func() bool {
		return time.Since(time.Unix(0, writing.Load())) > 400*time.Millisecond
	})

	// The second caller fails at its own deadline.
	pinged := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		pinged <- c.Ping(ctx)
	}()
	select {
	case err := <-pinged:
		if took := time.Since(start); !errs.Is(err, errs.Timeout) || took > time.Second {
			t.Fatalf("ping behind a blocked write = %v after %s, want a timeout at its 300ms deadline", err, took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ping behind a blocked write did not return within 5s of its 300ms deadline")
	}

	// The blocked write ends with the connection after its deadline.
	select {
	case err := <-stuck:
		if !errs.Is(err, errs.Unavailable) {
			t.Fatalf("blocked write = %v, want unavailable", err)
		}
	case <-time.After(deadline + 10*time.Second):
		t.Fatal("blocked write still blocked long after its write deadline")
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("connection not done after a write past its deadline")
	}
	start = time.Now()
	if err := c.Ping(t.Context()); !errs.Is(err, errs.Unavailable) || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("ping on the dead connection = %v after %s, want unavailable at once", err, time.Since(start))
	}

	_ = c.Close()
	close(release)
	srv.Close()
	waitUntil(t, 5*time.Second, "goroutines back to where they were", func() bool {
		return runtime.NumGoroutine() <= before
	})
}

// waitUntil polls cond until it holds or d passes.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out after %s waiting for %s", d, what)
}
