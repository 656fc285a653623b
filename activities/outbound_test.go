package activities

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/wire"
)

// TestOutboundRefusedAtDial: with no allowlist (the zero policy) a webhook
// to loopback is refused when dialed, not retried, and the receiver hears
// nothing (agentrun's TestModelCallOutbound does the same for model calls).
func TestOutboundRefusedAtDial(t *testing.T) {
	ctx := context.Background()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()

	nonRetryable := func(t *testing.T, what string, err error, want string) {
		t.Helper()
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || !appErr.NonRetryable() || !strings.Contains(appErr.Error(), want) {
			t.Errorf("%s: err = %v, want a non-retryable error saying %q", what, err, want)
		}
	}

	t.Run("webhook", func(t *testing.T) {
		r := newRig(t)
		r.a.Outbound = &outbound.Policy{}
		r.workspace(t, "ws-0b01", `{"kind":"memory","recovery":{"max_attempts":1,"webhook_url":"`+srv.URL+`/hook?token=hook-secret-42"}}`)
		_, err := r.a.NotifyWebhook(ctx, WebhookInput{WorkspaceID: "ws-0b01", Event: wire.EventEscalated, Phase: wire.PhaseEscalated})
		nonRetryable(t, "webhook to loopback", err, "refused by the outbound policy")
		if err != nil && strings.Contains(err.Error(), "hook-secret-42") {
			t.Errorf("the error holds the URL's token: %v", err)
		}
	})

	if n := hits.Load(); n != 0 {
		t.Errorf("the webhook receiver received %d requests", n)
	}
}
