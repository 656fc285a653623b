package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// oldRuntime stands in front of a runtime as one from before the ranged
// file operations: it answers read.range and write.range as such a
// runtime does ("unknown op") and passes every other frame through.
func oldRuntime(t *testing.T, upstream string) (url string, refused *atomic.Int64) {
	t.Helper()
	return runtimeWithout(t, upstream, protocol.OpReadRange, protocol.OpWriteRange)
}

// runtimeWithout stands in front of a runtime as one from before ops: it
// answers them as such a runtime does ("unknown op") and passes every
// other frame through.
func runtimeWithout(t *testing.T, upstream string, ops ...string) (url string, refused *atomic.Int64) {
	t.Helper()
	refused = new(atomic.Int64)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		down, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{protocol.Version}})
		if err != nil {
			return
		}
		defer down.CloseNow()
		down.SetReadLimit(-1)
		up, _, err := websocket.Dial(r.Context(), upstream, &websocket.DialOptions{
			HTTPHeader:   http.Header{"Authorization": {"Bearer " + runtimetest.Token}},
			Subprotocols: []string{protocol.Version},
		})
		if err != nil {
			return
		}
		defer up.CloseNow()
		up.SetReadLimit(-1)
		ctx := context.Background()
		go func() {
			for {
				typ, b, err := up.Read(ctx)
				if err != nil || down.Write(ctx, typ, b) != nil {
					down.CloseNow()
					return
				}
			}
		}()
		for {
			typ, b, err := down.Read(ctx)
			if err != nil {
				return
			}
			hdr := b
			if typ == websocket.MessageBinary {
				hdr, _, _ = protocol.SplitBinary(b)
			}
			var req protocol.Request
			_ = json.Unmarshal(hdr, &req)
			if slices.Contains(ops, req.Op) {
				refused.Add(1)
				msg, _ := json.Marshal(protocol.Response{Type: protocol.TypeResult, ID: req.ID,
					Error: &protocol.Error{Code: "invalid", Message: fmt.Sprintf("request %d: unknown op %q", req.ID, req.Op)}})
				if down.Write(ctx, websocket.MessageText, msg) != nil {
					return
				}
				continue
			}
			if up.Write(ctx, typ, b) != nil {
				return
			}
		}
	}))
	t.Cleanup(hs.Close)
	return "ws" + strings.TrimPrefix(hs.URL, "http"), refused
}

// TestStreamedFilesOldRuntime: against a runtime without the ranged
// operations, WriteFileFrom and OpenFile fall back to whole-file frames
// (asking once per connection) and the content arrives whole.
func TestStreamedFilesOldRuntime(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	url, refused := oldRuntime(t, e.URL)
	ctx := runtimetest.Ctx(t)
	c, err := client.Dial(ctx, url, runtimetest.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	data := pattern(3*protocol.DefaultChunkBytes + 7)
	for i := range 2 {
		p := fmt.Sprintf("old/%d.bin", i)
		if _, err := c.WriteFileFrom(ctx, p, bytes.NewReader(data), int64(len(data)), 0); err != nil {
			t.Fatalf("WriteFileFrom through an old runtime: %v", err)
		}
		if got, err := os.ReadFile(filepath.Join(e.Root, p)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("on disk: %d bytes (%v), want %d", len(got), err, len(data))
		}
		r, err := c.OpenFile(ctx, p)
		if err != nil {
			t.Fatalf("OpenFile through an old runtime: %v", err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, data) || r.Size() != int64(len(data)) {
			t.Fatalf("read back %d bytes of size %d (%v), want %d", len(got), r.Size(), err, len(data))
		}
	}
	// A new connection asks again; a read alone falls back too.
	c2, err := client.Dial(ctx, url, runtimetest.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	r, err := c2.OpenFile(ctx, "old/0.bin")
	if err != nil {
		t.Fatalf("OpenFile on a new connection through an old runtime: %v", err)
	}
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(data))
	}
	r.Close()
	if n := refused.Load(); n != 2 {
		t.Errorf("the old runtime was asked %d ranged operations, want 2: one per connection, the first refusal tells the client the runtime has none", n)
	}
}
