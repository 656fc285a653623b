package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/activities/llm/llmtest"
	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/wire"
)

// TestAttackOutbound is issue 21's holes 3 and 11, driven by a member key
// against a real `primer serve` whose outbound allowlist holds only the
// fake endpoints the test means to reach (never the "internal" one):
//
//   - an LLM provider or a suite webhook on loopback (by address, by name,
//     IPv6, IPv4-mapped) or on the metadata address is refused, 403 naming
//     the field, and the internal endpoint hears nothing;
//   - a provider row that got past the write check (stored before it
//     existed) is refused when the run dials it, by name or address;
//   - api_key_env is an admin's: a member naming a platform variable gets
//     403 and the value goes nowhere;
//   - a PUT that moves base_url and sends "(redacted)" drops the stored
//     key: the new endpoint receives no key;
//   - an endpoint's error body (a marker) appears in no API answer, event
//     or log line.
func TestAttackOutbound(t *testing.T) {
	marker := "MARKER-" + secretKey(t)
	envSecret := "postgres://primer:" + secretKey(t) + "@db.internal/primer"
	t.Setenv("PRIMER_ATTACK_SECRET_URL", envSecret)

	// internal stands for a service on the platform's host: it is never
	// allowlisted, and must never be reached.
	internal := llmtest.Start(t, llmtest.Script{llmtest.TextTurn("internal answer")})
	internalPort := port(t, internal.URL())
	// old and fresh are model servers the admin allowlisted; body answers
	// every request with an error whose body holds marker.
	old := llmtest.Start(t, llmtest.Script{llmtest.TextTurn("old")})
	fresh := llmtest.Start(t, llmtest.Script{llmtest.TextTurn("done")})
	var bodyMu sync.Mutex
	bodyHits := 0
	body := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bodyMu.Lock()
		bodyHits++
		bodyMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"` + marker + `","type":"` + marker + `"}} ` + marker))
	}))
	t.Cleanup(body.Close)
	var hookMu sync.Mutex
	hookHits := 0
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookMu.Lock()
		hookHits++
		hookMu.Unlock()
	}))
	t.Cleanup(hook.Close)

	allow := strings.Join([]string{
		"127.0.0.1:" + port(t, old.URL()), "127.0.0.1:" + port(t, fresh.URL()), "127.0.0.1:" + port(t, body.URL),
	}, ",")
	var logs lockedBuffer
	p := startPrimerLog(t, &logs, withOutboundAllow(allow))
	ctx := ctxT(t, 4*time.Minute)
	// Each (sub)test records its answers in a recorder of its own, all
	// searched at the end.
	var recs []*recorder
	rec := func(t *testing.T) *recorder {
		r := &recorder{t: t, url: p.srv.URL()}
		recs = append(recs, r)
		return r
	}
	h := rec(t)
	admin := p.key

	h.do(admin, "POST", "/v1/tenants", map[string]any{"id": "acme"}, 201, nil)
	var member createdKey
	h.doSecret(admin, "POST", "/v1/apikeys", map[string]any{"tenant_id": "acme", "role": "member", "name": "m"}, 201, &member)

	// refused sends a write with the member key and wants 403 naming
	// field, the message saying why.
	refused := func(h *recorder, method, path string, doc map[string]any, field string, why ...string) {
		t := h.t
		t.Helper()
		var env struct {
			Error struct {
				Code, Message string
				Details       map[string]string
			}
		}
		h.do(member.Key, method, path, doc, http.StatusForbidden, &env)
		if env.Error.Details["field"] != field {
			t.Errorf("%s %s: field %q, want %q (%s)", method, path, env.Error.Details["field"], field, env.Error.Message)
		}
		for _, w := range why {
			if !strings.Contains(env.Error.Message, w) {
				t.Errorf("%s %s: message %q, want it to say %q", method, path, env.Error.Message, w)
			}
		}
	}
	provider := func(id, base string) map[string]any {
		return map[string]any{"id": id, "kind": "openai", "base_url": base, "api_key": "sk-member"}
	}

	t.Run("base_url on an internal address", func(t *testing.T) {
		h := rec(t)
		for _, tc := range []struct{ base, why string }{
			{"http://127.0.0.1:" + internalPort + "/v1", "127.0.0.1 is a loopback address"},
			{"http://localhost:" + internalPort + "/v1", "localhost resolves to"},
			{"http://[::1]:" + internalPort + "/v1", "::1 is a loopback address"},
			{"http://[::ffff:127.0.0.1]:" + internalPort + "/v1", "a loopback address"},
			{"http://169.254.169.254/latest/meta-data", "169.254.169.254 is a cloud metadata address"},
			{"http://[fd00:ec2::254]/latest", "a cloud metadata address"},
			{"http://0.0.0.0:" + internalPort + "/v1", "an unspecified address"},
		} {
			refused(h, "POST", "/v1/llm-providers", provider("evil", tc.base), "spec.base_url", tc.why, outbound.Env)
		}
		// An allowed provider cannot be moved there either.
		h.do(member.Key, "POST", "/v1/llm-providers", provider("moved", old.URL()), 201, nil)
		refused(h, "PUT", "/v1/llm-providers/moved", provider("moved", "http://127.0.0.1:"+internalPort+"/v1"), "spec.base_url", "a loopback address")
		h.status(member.Key, "GET", "/v1/llm-providers/evil") // recorded: 404
	})

	t.Run("webhook on an internal address", func(t *testing.T) {
		h := rec(t)
		hookURL := hook.URL + "/hook?token=s3cret"
		refused(h, "POST", "/v1/suites", map[string]any{
			"id": "s", "template_id": "none", "webhook_url": hookURL,
			"cases": []map[string]any{{"id": "c", "command": []string{"true"}}},
		}, "spec.webhook_url", "a loopback address", outbound.Env)
		refused(h, "POST", "/v1/suites", map[string]any{
			"id": "s", "template_id": "none", "webhook_url": "http://169.254.169.254/hook",
			"cases": []map[string]any{{"id": "c", "command": []string{"true"}}},
		}, "spec.webhook_url", "a cloud metadata address")
	})

	t.Run("api_key_env is an admin's", func(t *testing.T) {
		h := rec(t)
		refused(h, "POST", "/v1/llm-providers", map[string]any{
			"id": "env", "kind": "openai", "base_url": fresh.URL(), "api_key_env": "PRIMER_ATTACK_SECRET_URL",
		}, "spec.api_key_env", "only an admin")
		h.do(member.Key, "POST", "/v1/llm-providers", provider("env", fresh.URL()), 201, nil)
		refused(h, "PUT", "/v1/llm-providers/env", map[string]any{
			"kind": "openai", "base_url": fresh.URL(), "api_key_env": "PRIMER_ATTACK_SECRET_URL",
		}, "spec.api_key_env", "only an admin")
		stored, err := p.srv.Store().GetLLMProvider(ctx, "env")
		if err != nil || stored.APIKeyEnv != "" || stored.APIKey != "sk-member" {
			t.Fatalf("stored provider after the refused PUT: %+v, %v", stored, err)
		}
	})

	// A local workspace of the admin's, where the runs below happen: the
	// agents and providers are the member's.
	h.do(admin, "POST", "/v1/templates", map[string]any{
		"id": "box", "provider_id": wire.LocalProviderID, "backend": map[string]any{"kind": "local"},
	}, 201, nil)
	var ws wire.Workspace
	h.do(admin, "POST", "/v1/workspaces", map[string]any{"template_id": "box"}, 201, &ws)
	eventually(t, time.Minute, "workspace running", func() bool {
		var w wire.Workspace
		h.do(admin, "GET", "/v1/workspaces/"+ws.ID, nil, 200, &w)
		return w.Phase == wire.PhaseRunning
	})
	// run has the member's agent on providerID answer one instruction and
	// returns the ended run.
	run := func(h *recorder, agent, providerID string) *wire.SessionRun {
		t := h.t
		t.Helper()
		h.do(member.Key, "POST", "/v1/agents", map[string]any{
			"id": agent, "model": map[string]any{"provider_id": providerID, "model_name": "m"}, "max_turns": 2, "timeout": "1m",
		}, 201, nil)
		var ses wire.Session
		h.do(admin, "POST", "/v1/sessions", map[string]any{"workspace_id": ws.ID, "agent": agent, "instructions": "hello"}, 201, &ses)
		var tr wire.Transcript
		eventually(t, 2*time.Minute, "run of "+agent+" ended", func() bool {
			h.do(admin, "GET", "/v1/sessions/"+ses.ID+"/transcript", nil, 200, &tr)
			return tr.Run != nil && tr.Run.Status == wire.AgentEnded
		})
		return tr.Run
	}

	t.Run("base_url change needs the key again", func(t *testing.T) {
		h := rec(t)
		oldKey := secretKey(t)
		h.do(member.Key, "POST", "/v1/llm-providers", map[string]any{"id": "moving", "kind": "openai", "base_url": old.URL(), "api_key": oldKey}, 201, nil)
		var env struct{ Error struct{ Message string } }
		h.do(member.Key, "PUT", "/v1/llm-providers/moving", map[string]any{"kind": "openai", "base_url": fresh.URL(), "api_key": "(redacted)"}, 400, &env)
		if !strings.Contains(env.Error.Message, "spec.api_key: (redacted) keeps the stored value only while the endpoint stays") {
			t.Errorf("PUT moving base_url with the placeholder: %q", env.Error.Message)
		}
		h.do(member.Key, "PUT", "/v1/llm-providers/moving", map[string]any{"kind": "openai", "base_url": fresh.URL()}, 400, nil)
		if r := run(h, "mover", "moving"); r.EndReason != wire.AgentCompleted {
			t.Errorf("run through the unmoved provider: %+v", r)
		}
		if n := len(fresh.Requests()); n != 0 {
			t.Fatalf("the new endpoint received %d requests before the provider moved", n)
		}
		// Moved with a key of its own: that key, and only it, goes there.
		h.do(member.Key, "PUT", "/v1/llm-providers/moving", map[string]any{"kind": "openai", "base_url": fresh.URL(), "api_key": "sk-for-fresh"}, 200, nil)
		var ses wire.Session
		h.do(admin, "POST", "/v1/sessions", map[string]any{"workspace_id": ws.ID, "agent": "mover", "instructions": "again"}, 201, &ses)
		eventually(t, 2*time.Minute, "the moved provider's run", func() bool { return len(fresh.Requests()) > 0 })
		for _, req := range fresh.Requests() {
			for name, vs := range req.Header {
				if strings.Contains(strings.Join(vs, " "), oldKey) {
					t.Errorf("the new endpoint received the old key in %s", name)
				}
			}
			if a := req.Header.Get("Authorization"); a != "Bearer sk-for-fresh" {
				t.Errorf("the new endpoint received Authorization %q, want the key sent with the move", a)
			}
		}
	})

	t.Run("dial refuses a stored internal base_url", func(t *testing.T) {
		h := rec(t)
		// Rows stored before the write check existed (or by hand).
		for id, base := range map[string]string{
			"stored-name": "http://localhost:" + internalPort + "/v1",
			"stored-addr": "http://127.0.0.1:" + internalPort + "/v1",
		} {
			if err := p.srv.Store().CreateLLMProvider(ctx, &wire.LLMProvider{ID: id, TenantID: "acme", Kind: wire.LLMOpenAI, BaseURL: base, APIKey: "sk-x"}); err != nil {
				t.Fatal(err)
			}
			r := run(h, "agent-"+id, id)
			if r.EndReason == wire.AgentCompleted || !strings.Contains(r.Error, "a loopback address") || !strings.Contains(r.Error, outbound.Env) {
				t.Errorf("run through %s: %+v, want a failure saying the loopback address is refused", base, r)
			}
		}
	})

	t.Run("no response body in errors", func(t *testing.T) {
		h := rec(t)
		h.do(member.Key, "POST", "/v1/llm-providers", provider("noisy", body.URL+"/v1"), 201, nil)
		r := run(h, "noisy-agent", "noisy")
		if r.EndReason == wire.AgentCompleted || !strings.Contains(r.Error, "400") {
			t.Errorf("run through the noisy endpoint: %+v, want a failure with status 400", r)
		}
		bodyMu.Lock()
		hits := bodyHits
		bodyMu.Unlock()
		if hits == 0 {
			t.Fatal("the noisy endpoint received no request")
		}
		var events json.RawMessage
		h.do(admin, "GET", "/v1/events", nil, 200, &events)
		h.do(member.Key, "GET", "/v1/events", nil, 200, &events)
	})

	if n := len(internal.Requests()); n != 0 {
		t.Errorf("the internal endpoint received %d requests", n)
	}
	hookMu.Lock()
	if hookHits != 0 {
		t.Errorf("the webhook receiver on loopback received %d requests", hookHits)
	}
	hookMu.Unlock()
	var answers strings.Builder
	for _, r := range recs {
		answers.WriteString(r.transcript.String())
	}
	for where, text := range map[string]string{"API answers": answers.String(), "the platform's log": logs.String()} {
		for what, secret := range map[string]string{"the error body marker": marker, "the env value": envSecret} {
			if strings.Contains(text, secret) {
				t.Errorf("%s hold %s", where, what)
			}
		}
	}
	for _, srv := range []*llmtest.Server{old, fresh, internal} {
		for _, req := range srv.Requests() {
			if raw, _ := json.Marshal(req); strings.Contains(string(raw), envSecret) {
				t.Errorf("a model endpoint received the platform's env value")
			}
		}
	}
}

// port is the port of a URL on 127.0.0.1.
func port(t *testing.T, raw string) string {
	t.Helper()
	rest := strings.TrimPrefix(raw, "http://")
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	_, p, err := net.SplitHostPort(rest)
	if err != nil {
		t.Fatalf("port of %s: %v", raw, err)
	}
	return p
}
