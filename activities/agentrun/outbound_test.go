package agentrun

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/primerhq/primer/activities/llm/llmtest"
	"github.com/primerhq/primer/wire"
)

// TestModelCallOutbound: a model call to loopback with a nil policy (no
// allowlist) is refused when dialed, not retried, and the model server
// hears nothing; an agent whose provider is another tenant's is refused
// before any call.
func TestModelCallOutbound(t *testing.T) {
	ctx := context.Background()
	nonRetryable := func(t *testing.T, what string, err error, want string) {
		t.Helper()
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || !appErr.NonRetryable() || !strings.Contains(appErr.Error(), want) {
			t.Errorf("%s: err = %v, want a non-retryable error saying %q", what, err, want)
		}
	}

	t.Run("model call", func(t *testing.T) {
		r := newAgentRig(t, llmtest.Script{llmtest.TextTurn("never")})
		r.a.Outbound = nil // nil refuses too
		_, err := r.a.ModelCall(ctx, ModelCallInput{SessionID: r.ses.ID, Turn: 1})
		nonRetryable(t, "model call to loopback", err, "127.0.0.1 is a loopback address")
		if n := len(r.llm.Requests()); n != 0 {
			t.Errorf("the model server received %d requests", n)
		}
	})

	t.Run("another tenant's provider", func(t *testing.T) {
		r := newAgentRig(t, llmtest.Script{llmtest.TextTurn("never")})
		if err := r.store.CreateTenant(ctx, &wire.Tenant{ID: "other"}); err != nil {
			t.Fatal(err)
		}
		p, err := r.store.GetLLMProvider(ctx, "test-model")
		if err != nil {
			t.Fatal(err)
		}
		if err := r.store.CreateLLMProvider(ctx, &wire.LLMProvider{ID: "theirs", TenantID: "other", Kind: p.Kind, BaseURL: p.BaseURL, APIKey: "sk-theirs"}); err != nil {
			t.Fatal(err)
		}
		ag, err := r.store.GetAgent(ctx, "code-runner")
		if err != nil {
			t.Fatal(err)
		}
		ag.Model.ProviderID = "theirs"
		if err := r.store.UpdateAgent(ctx, ag); err != nil {
			t.Fatal(err)
		}
		_, err = r.a.ModelCall(ctx, ModelCallInput{SessionID: r.ses.ID, Turn: 1})
		nonRetryable(t, "another tenant's provider", err, "belongs to another tenant")
		if n := len(r.llm.Requests()); n != 0 {
			t.Errorf("the model server received %d requests", n)
		}
	})
}
