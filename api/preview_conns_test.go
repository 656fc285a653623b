package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// TestPreviewEndsOpenConnections: a WebSocket opened through a preview
// link ends when the link does: at once on a revoke through this process,
// at the next recheck on a revoke made elsewhere (another platform
// process, a workspace returned to its pool), and at the link's expiry.
// A live link's WebSocket runs on.
func TestPreviewEndsOpenConnections(t *testing.T) {
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	d := startDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// open dials the dev server's echo WebSocket through a preview URL and
	// checks it answers.
	open := func(t *testing.T, linkURL string) *websocket.Conn {
		t.Helper()
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(linkURL, "http")+"ws", nil)
		if err != nil {
			t.Fatalf("websocket through %s: %v", linkURL, err)
		}
		t.Cleanup(func() { _ = c.CloseNow() })
		echo(t, ctx, c, "hi")
		return c
	}
	// ended waits for c to end (bounded by rctx) and fails when the
	// bound ran out first.
	ended := func(t *testing.T, c *websocket.Conn, within time.Duration) {
		t.Helper()
		rctx, rcancel := context.WithTimeout(ctx, within)
		defer rcancel()
		_, b, err := c.Read(rctx)
		if err == nil {
			t.Fatalf("read %q: want the connection ended", b)
		}
		if rctx.Err() != nil {
			t.Fatalf("the connection was still open after %s", within)
		}
	}

	t.Run("revoked here", func(t *testing.T) {
		// No recheck would come within the bound: only the revoke's own
		// end can close it.
		h.srv.previews.recheck.Store(int64(time.Hour))
		defer h.srv.previews.recheck.Store(int64(defaultPreviewRecheck))
		link := h.createPreview(w.ID, h.adminKey, fmt.Sprintf(`{"port":%d,"ttl":"1h"}`, d.port))
		c := open(t, link.URL)
		if res := h.do(http.MethodDelete, "/v1/workspaces/"+w.ID+"/previews/"+link.ID, nil); res.status != http.StatusOK {
			t.Fatalf("revoke: %d %s", res.status, res.body)
		}
		ended(t, c, 20*time.Second)
	})

	t.Run("revoked elsewhere", func(t *testing.T) {
		h.srv.previews.recheck.Store(int64(50 * time.Millisecond))
		defer h.srv.previews.recheck.Store(int64(defaultPreviewRecheck))
		live := h.createPreview(w.ID, h.adminKey, fmt.Sprintf(`{"port":%d,"ttl":"1h"}`, d.port))
		gone := h.createPreview(w.ID, h.adminKey, fmt.Sprintf(`{"port":%d,"ttl":"1h"}`, d.port))
		keep, c := open(t, live.URL), open(t, gone.URL)
		// As another process would: the row only.
		if _, err := h.store.RevokePreview(ctx, w.ID, gone.ID); err != nil {
			t.Fatal(err)
		}
		ended(t, c, 20*time.Second)
		// The live link's WebSocket has seen the same rechecks.
		echo(t, ctx, keep, "still here")
	})

	t.Run("expired", func(t *testing.T) {
		key, err := h.srv.previewKey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p := &wire.Preview{ID: models.NewID("pv"), TenantID: w.TenantID, WorkspaceID: w.ID, Port: d.port, ExpiresAt: time.Now().Add(2 * time.Second)}
		if err := h.store.CreatePreview(ctx, p); err != nil {
			t.Fatal(err)
		}
		c := open(t, h.url+"/preview/"+previewToken(key, p.ID)+"/")
		ended(t, c, 20*time.Second)
		if now := time.Now(); now.Before(p.ExpiresAt) {
			t.Errorf("the connection ended at %s, before the link's expiry %s", now, p.ExpiresAt)
		}
	})
}

// echo writes msg on the dev server's echo WebSocket and checks the answer.
func echo(t *testing.T, ctx context.Context, c *websocket.Conn, msg string) {
	t.Helper()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(ctx); err != nil || string(b) != "echo:"+msg {
		t.Fatalf("read %q (%v), want %q", b, err, "echo:"+msg)
	}
}
