package api

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/primerhq/primer/wire"
)

// llmKey is the key the tests store; no response, log line or audit entry
// may hold it.
const llmKey = "sk-llm-test-9f1c2b7e-secret"

// lockedBuffer collects the server's log lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func llmHarness(t *testing.T) (*harness, *lockedBuffer) {
	logs := &lockedBuffer{}
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	return h, logs
}

// noKey fails the test if the body holds the key.
func noKey(t *testing.T, what string, r response) response {
	t.Helper()
	if strings.Contains(string(r.body), llmKey) {
		t.Fatalf("%s: response holds the API key: %s", what, r.body)
	}
	return r
}

const seedProvider = `{"id":"test-model","kind":"openai","base_url":"http://127.0.0.1:9/v1","api_key":"` + llmKey + `"}`

// TestLLMProviderAPI: CRUD of model providers, the key redacted in every
// answer and kept by a get-edit-put round trip, never in logs or audit.
func TestLLMProviderAPI(t *testing.T) {
	h, logs := llmHarness(t)
	var p struct {
		ID     string `json:"id"`
		Kind   string `json:"kind"`
		APIKey string `json:"api_key"`
	}
	r := noKey(t, "create", h.do("POST", "/v1/llm-providers", seedProvider).expect(t, 201))
	r.decode(t, &p)
	if p.ID != "test-model" || p.Kind != "openai" || p.APIKey != Redacted {
		t.Fatalf("created %s", r.body)
	}
	if loc := r.header.Get("Location"); loc != "/v1/llm-providers/test-model" {
		t.Fatalf("Location %q", loc)
	}
	noKey(t, "get", h.do("GET", "/v1/llm-providers/test-model", nil).expect(t, 200))
	r = noKey(t, "list", h.do("GET", "/v1/llm-providers", nil).expect(t, 200))
	if !strings.Contains(string(r.body), `"api_key":"`+Redacted+`"`) {
		t.Fatalf("list does not show the key as redacted: %s", r.body)
	}

	// The placeholder sent back keeps the stored key.
	noKey(t, "update", h.do("PUT", "/v1/llm-providers/test-model",
		`{"kind":"anthropic","base_url":"http://127.0.0.1:9/v1/","api_key":"`+Redacted+`"}`).expect(t, 200))
	got, err := h.store.GetLLMProvider(context.Background(), "test-model")
	if err != nil {
		t.Fatal(err)
	}
	if got.APIKey != llmKey || got.Kind != "anthropic" || got.BaseURL != "http://127.0.0.1:9/v1" {
		t.Fatalf("stored after the round trip: kind %q base %q key kept %v", got.Kind, got.BaseURL, got.APIKey == llmKey)
	}
	// A key env replaces the key; the answer then has no api_key at all.
	r = noKey(t, "update to env", h.do("PUT", "/v1/llm-providers/test-model",
		`{"kind":"openai","base_url":"http://127.0.0.1:9/v1","api_key_env":"OPENAI_API_KEY"}`).expect(t, 200))
	if strings.Contains(string(r.body), `"api_key"`) || !strings.Contains(string(r.body), `"api_key_env":"OPENAI_API_KEY"`) {
		t.Fatalf("env provider: %s", r.body)
	}
	if got, _ = h.store.GetLLMProvider(context.Background(), "test-model"); got.APIKey != "" {
		t.Fatal("the old key stayed after switching to api_key_env")
	}
	// Redacted with no stored key is refused.
	h.do("PUT", "/v1/llm-providers/test-model", `{"kind":"openai","base_url":"http://h/v1","api_key":"`+Redacted+`"}`).
		expectError(t, 400, "invalid", "spec.api_key", "placeholder")

	h.do("POST", "/v1/llm-providers", seedProvider).expectError(t, 409, "conflict", "", "")
	h.do("DELETE", "/v1/llm-providers/test-model", nil).expect(t, 204)
	h.do("GET", "/v1/llm-providers/test-model", nil).expectError(t, 404, "not_found", "", "test-model")

	r = h.do("GET", "/v1/audit", nil).expect(t, 200)
	if !strings.Contains(string(r.body), "llm-providers") {
		t.Fatalf("audit has no llm-providers entries: %s", r.body)
	}
	noKey(t, "audit", r)
	if strings.Contains(logs.String(), llmKey) {
		t.Fatalf("the server logged the key: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "llm provider created") {
		t.Fatal("no log line of the create: the log check saw nothing")
	}
}

func TestLLMProviderBadInput(t *testing.T) {
	h, _ := llmHarness(t)
	for _, tc := range []struct{ name, body, field, msg string }{
		{"no kind", `{"id":"p","base_url":"http://h/v1","api_key":"k"}`, "spec.kind", "required"},
		{"unknown kind", `{"id":"p","kind":"gemini","base_url":"http://h/v1","api_key":"k"}`, "spec.kind", `"gemini"`},
		{"no base_url", `{"id":"p","kind":"openai","api_key":"k"}`, "spec.base_url", "required"},
		{"relative base_url", `{"id":"p","kind":"openai","base_url":"/v1","api_key":"k"}`, "spec.base_url", "http or https"},
		{"ftp base_url", `{"id":"p","kind":"openai","base_url":"ftp://h/v1","api_key":"k"}`, "spec.base_url", "http or https"},
		{"credentials in base_url", `{"id":"p","kind":"openai","base_url":"http://u:` + llmKey + `@h/v1","api_key":"k"}`, "spec.base_url", "credentials"},
		{"both key and env", `{"id":"p","kind":"openai","base_url":"http://h/v1","api_key":"` + llmKey + `","api_key_env":"K"}`, "spec.api_key", "not both"},
		{"neither key nor env", `{"id":"p","kind":"openai","base_url":"http://h/v1"}`, "spec.api_key", "required"},
		{"bad env name", `{"id":"p","kind":"openai","base_url":"http://h/v1","api_key_env":"A-B"}`, "spec.api_key_env", "not an environment variable"},
		{"bad id", `{"id":"P!","kind":"openai","base_url":"http://h/v1","api_key":"k"}`, "spec.id", "not a valid id"},
		{"unknown field", `{"id":"p","kind":"openai","base_url":"http://h/v1","api_key":"k","key":"x"}`, "spec.key", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do("POST", "/v1/llm-providers", tc.body)
			noKey(t, tc.name, r).expectError(t, 400, "invalid", tc.field, tc.msg)
		})
	}
}

// TestLLMProviderOutbound: the outbound rules for model providers. A
// member may not name a platform environment variable (api_key_env); a
// key goes only to the base_url it was given for (a PUT moving base_url
// must send the key again); base_url may not name an internal address the
// allowlist does not hold; an agent uses only its own tenant's provider.
func TestLLMProviderOutbound(t *testing.T) {
	h, _ := llmHarness(t)
	ctx := context.Background()
	if err := h.store.CreateTenant(ctx, &wire.Tenant{ID: "acme"}); err != nil {
		t.Fatal(err)
	}
	member := h.newKey("acme", wire.RoleMember)
	as := func(key, method, path, body string) response {
		return h.do(method, path, body, "Authorization", "Bearer "+key)
	}
	stored := func(id string) *wire.LLMProvider {
		t.Helper()
		p, err := h.store.GetLLMProvider(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// api_key_env: an admin's only, on create and on update.
	as(member, "POST", "/v1/llm-providers", `{"id":"env","kind":"openai","base_url":"http://h/v1","api_key_env":"PRIMER_DATABASE_URL"}`).
		expectError(t, 403, "forbidden", "spec.api_key_env", "only an admin may set it")
	as(member, "POST", "/v1/llm-providers", `{"id":"m","kind":"openai","base_url":"http://127.0.0.1:9/v1","api_key":"`+llmKey+`"}`).expect(t, 201)
	as(member, "PUT", "/v1/llm-providers/m", `{"kind":"openai","base_url":"http://127.0.0.1:9/v1","api_key_env":"PRIMER_DATABASE_URL"}`).
		expectError(t, 403, "forbidden", "spec.api_key_env", "only an admin may set it")
	if p := stored("m"); p.APIKeyEnv != "" || p.APIKey != llmKey {
		t.Fatalf("after the refused PUT: env %q, key kept %v", p.APIKeyEnv, p.APIKey == llmKey)
	}

	// The placeholder keeps the key only while base_url stays the same.
	noKey(t, "same base_url", as(member, "PUT", "/v1/llm-providers/m", `{"kind":"openai","base_url":"http://127.0.0.1:9/v1/","api_key":"`+Redacted+`"}`).expect(t, 200))
	if got := stored("m").APIKey; got != llmKey {
		t.Fatalf("the key did not stay with base_url")
	}
	noKey(t, "moved base_url", as(member, "PUT", "/v1/llm-providers/m", `{"kind":"openai","base_url":"http://127.0.0.1:1/v1","api_key":"`+Redacted+`"}`)).
		expectError(t, 400, "invalid", "spec.api_key", "only while the endpoint stays")
	if p := stored("m"); p.APIKey != llmKey || p.BaseURL != "http://127.0.0.1:9/v1" {
		t.Fatalf("the refused move changed the provider: %s", p.BaseURL)
	}
	as(member, "PUT", "/v1/llm-providers/m", `{"kind":"openai","base_url":"http://127.0.0.1:1/v1","api_key":"sk-new"}`).expect(t, 200)
	if got := stored("m").APIKey; got != "sk-new" {
		t.Fatalf("stored key after a move with a new key: %q", got)
	}

	// Internal addresses: refused unless allowlisted (the harness allows
	// 127.0.0.1:9 and 127.0.0.1:1 only).
	for _, tc := range []struct{ base, msg string }{
		{"http://127.0.0.1:5/v1", "127.0.0.1 is a loopback address"},
		{"http://[::1]:9/v1", "::1 is a loopback address"},
		{"http://169.254.169.254/latest", "169.254.169.254 is a cloud metadata address"},
		{"http://[fe80::1]/v1", "a link-local address"},
	} {
		for _, key := range []string{member, h.adminKey} {
			as(key, "POST", "/v1/llm-providers", `{"id":"internal","kind":"openai","base_url":"`+tc.base+`","api_key":"k"}`).
				expectError(t, 403, "forbidden", "spec.base_url", tc.msg)
		}
		as(member, "PUT", "/v1/llm-providers/m", `{"kind":"openai","base_url":"`+tc.base+`","api_key":"k"}`).
			expectError(t, 403, "forbidden", "spec.base_url", tc.msg)
	}

	// An agent of the default tenant may not use acme's provider, even
	// when an admin (who sees every tenant's) makes it.
	h.do("POST", "/v1/agents", `{"id":"cross","model":{"provider_id":"m","model_name":"x"}}`).
		expectError(t, 403, "forbidden", "spec.model.provider_id", "belongs to tenant acme")
	as(member, "POST", "/v1/agents", `{"id":"own","model":{"provider_id":"m","model_name":"x"}}`).expect(t, 201)
}

// TestWebhookOutbound: a suite's webhook_url and a template's recovery
// webhook may not name an internal address the allowlist does not hold.
func TestWebhookOutbound(t *testing.T) {
	h := newHarness(t)
	h.do("POST", "/v1/suites", `{"id":"s","template_id":"default","webhook_url":"http://127.0.0.1:8080/hook?token=x","cases":[{"id":"c","command":["true"]}]}`).
		expectError(t, 403, "forbidden", "spec.webhook_url", "127.0.0.1 is a loopback address")
	h.do("POST", "/v1/suites", `{"id":"s","template_id":"default","webhook_url":"http://169.254.169.254/","cases":[{"id":"c","command":["true"]}]}`).
		expectError(t, 403, "forbidden", "spec.webhook_url", "a cloud metadata address")
	h.do("POST", "/v1/templates", `{"id":"t","provider_id":"local","backend":{"kind":"local","recovery":{"webhook_url":"http://[::1]/hook"}}}`).
		expectError(t, 403, "forbidden", "spec.backend.recovery.webhook_url", "::1 is a loopback address")
	h.do("POST", "/v1/templates", `{"id":"t","provider_id":"local","backend":{"kind":"local","recovery":{"webhook_url":"https://hooks.invalid/x"}}}`).expect(t, 201)
}

const seedAgent = `{"id":"code-runner","description":"Runs a snippet","model":{"provider_id":"test-model","model_name":"test"},
"system_prompt":["You run code in the workspace.","Report what it printed."],"tools":[]}`

func TestAgentAPI(t *testing.T) {
	h, _ := llmHarness(t)
	h.do("POST", "/v1/llm-providers", seedProvider).expect(t, 201)
	var a wire.Agent
	r := h.do("POST", "/v1/agents", seedAgent).expect(t, 201)
	r.decode(t, &a)
	if a.ID != "code-runner" || a.Model.ProviderID != "test-model" || a.MaxTurns != wire.DefaultAgentMaxTurns ||
		a.Timeout != wire.DefaultAgentTimeout || len(a.SystemPrompt) != 2 || a.TenantID != wire.DefaultTenantID {
		t.Fatalf("created %s", r.body)
	}
	h.do("GET", "/v1/agents/code-runner", nil).expect(t, 200).decode(t, &a)
	if a.Description != "Runs a snippet" {
		t.Fatalf("get %+v", a)
	}
	r = h.do("GET", "/v1/agents", nil).expect(t, 200)
	if !strings.Contains(string(r.body), `"id":"code-runner"`) {
		t.Fatalf("list %s", r.body)
	}
	a = wire.Agent{}
	h.do("PUT", "/v1/agents/code-runner", `{"model":{"provider_id":"test-model","model_name":"other","temperature":0.2},"max_turns":3,"timeout":"90s"}`).
		expect(t, 200).decode(t, &a)
	if a.Model.ModelName != "other" || a.MaxTurns != 3 || a.Timeout != "90s" || a.Description != "" || a.Model.Temperature == nil {
		t.Fatalf("updated %+v", a)
	}
	h.do("DELETE", "/v1/llm-providers/test-model", nil).expectError(t, 409, "conflict", "", "agent code-runner")
	h.do("DELETE", "/v1/agents/code-runner", nil).expect(t, 204)
	h.do("GET", "/v1/agents/code-runner", nil).expectError(t, 404, "not_found", "", "code-runner")
	h.do("DELETE", "/v1/llm-providers/test-model", nil).expect(t, 204)
}

func TestAgentBadInput(t *testing.T) {
	h, _ := llmHarness(t)
	h.do("POST", "/v1/llm-providers", seedProvider).expect(t, 201)
	model := `"model":{"provider_id":"test-model","model_name":"m"}`
	for _, tc := range []struct {
		name, body  string
		status      int
		code, field string
		msg         string
	}{
		{"no model", `{"id":"a"}`, 400, "invalid", "spec.model", "required"},
		{"no provider_id", `{"id":"a","model":{"model_name":"m"}}`, 400, "invalid", "spec.model.provider_id", "required"},
		{"no model_name", `{"id":"a","model":{"provider_id":"test-model"}}`, 400, "invalid", "spec.model.model_name", "required"},
		{"unknown provider", `{"id":"a","model":{"provider_id":"ghost","model_name":"m"}}`, 404, "not_found", "spec.model.provider_id", "ghost"},
		{"implicit tool", `{"id":"a",` + model + `,"tools":["workspace__exec"]}`, 400, "invalid", "spec.tools[0]", "implicit"},
		{"unknown tool", `{"id":"a",` + model + `,"tools":["web_search"]}`, 400, "invalid", "spec.tools[0]", "unknown tool"},
		{"bad timeout", `{"id":"a",` + model + `,"timeout":"soon"}`, 400, "invalid", "spec.timeout", "duration"},
		{"negative timeout", `{"id":"a",` + model + `,"timeout":"-1m"}`, 400, "invalid", "spec.timeout", "positive"},
		{"negative max_turns", `{"id":"a",` + model + `,"max_turns":-1}`, 400, "invalid", "spec.max_turns", "negative"},
		{"bad temperature", `{"id":"a","model":{"provider_id":"test-model","model_name":"m","temperature":3}}`, 400, "invalid", "spec.model.temperature", ""},
		{"bad top_p", `{"id":"a","model":{"provider_id":"test-model","model_name":"m","top_p":1.5}}`, 400, "invalid", "spec.model.top_p", ""},
		{"system_prompt a string", `{"id":"a",` + model + `,"system_prompt":"x"}`, 400, "invalid", "spec.system_prompt", ""},
		{"bad id", `{"id":"",` + model + `}`, 400, "invalid", "spec.id", "required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.do("POST", "/v1/agents", tc.body).expectError(t, tc.status, tc.code, tc.field, tc.msg)
		})
	}
	h.do("GET", "/v1/agents", nil).expect(t, 200)
	if as, _ := h.store.ListAgents(context.Background(), ""); len(as) != 0 {
		t.Fatalf("a refused create stored %d agents", len(as))
	}
}

// TestLLMTenancy: another tenant's provider is unknown to an agent, and
// its rows are hidden from lists and gets (the route matrix checks every
// route; this checks the agent's reference and the lists' contents).
func TestLLMTenancy(t *testing.T) {
	h := tenancyHarness(t)
	ctx := context.Background()
	for _, id := range []string{tenantA, tenantB} {
		if err := h.store.CreateTenant(ctx, &wire.Tenant{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	memberA, memberB := h.newKey(tenantA, wire.RoleMember), h.newKey(tenantB, wire.RoleMember)
	h.doAs(memberA, "POST", "/v1/llm-providers", seedProvider).expect(t, 201)
	h.doAs(memberA, "POST", "/v1/agents", seedAgent).expect(t, 201)

	h.doAs(memberB, "GET", "/v1/llm-providers/test-model", nil).expectError(t, 404, "not_found", "", "")
	h.doAs(memberB, "GET", "/v1/agents/code-runner", nil).expectError(t, 404, "not_found", "", "")
	h.doAs(memberB, "POST", "/v1/agents", strings.Replace(seedAgent, `"id":"code-runner"`, `"id":"b-agent"`, 1)).
		expectError(t, 404, "not_found", "spec.model.provider_id", "test-model")
	for _, path := range []string{"/v1/llm-providers", "/v1/agents"} {
		r := h.doAs(memberB, "GET", path, nil).expect(t, 200)
		if string(bytes.TrimSpace(r.body)) != `{"items":[]}` {
			t.Fatalf("tenant B's %s: %s", path, r.body)
		}
	}
	// A sees its own, the key redacted.
	r := h.doAs(memberA, "GET", "/v1/llm-providers", nil).expect(t, 200)
	noKey(t, "A's list", r)
	if !strings.Contains(string(r.body), `"tenant_id":"`+tenantA+`"`) {
		t.Fatalf("A's list: %s", r.body)
	}
}
