package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/connector/gateway"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
	"github.com/primerhq/primer/wire"
)

const realKey = "sk-real-provider-key-0123456789"

// modelServer speaks OpenAI's and Anthropic's wire formats as a provider
// does, streaming included, and records what it received. A stream sends
// its first event, then waits for release before the rest, so a test can
// prove the first piece reached the caller before the provider finished.
type modelServer struct {
	*httptest.Server
	mu      sync.Mutex
	auth    []string // the Authorization or x-api-key of each request
	models  []string
	release chan struct{}
}

func newModelServer(t *testing.T) *modelServer {
	m := &modelServer{release: make(chan struct{}, 16)}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *modelServer) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	m.mu.Lock()
	m.auth = append(m.auth, r.Header.Get("Authorization")+r.Header.Get("x-api-key"))
	m.models = append(m.models, req.Model)
	m.mu.Unlock()
	fl := w.(http.Flusher)
	switch {
	case r.URL.Path == "/v1/chat/completions" && !req.Stream:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`, req.Model)
	case r.URL.Path == "/v1/chat/completions":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"one\"}}]}\n\n")
		fl.Flush()
		<-m.release
		fmt.Fprint(w, "data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" two\"}}]}\n\n")
		// As OpenAI: the usage chunk only when the request asked for it
		// (the gateway does, for budgets).
		if req.StreamOptions.IncludeUsage {
			fmt.Fprint(w, "data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\n")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	case r.URL.Path == "/v1/responses":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"r1","object":"response","model":%q,"output":[],"usage":{"input_tokens":3,"output_tokens":4,"total_tokens":7}}`, req.Model)
	case r.URL.Path == "/v1/messages":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"model\":%q,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n", req.Model)
		fl.Flush()
		<-m.release
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hello\"}}\n\n")
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":6}}\n\n")
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	default:
		http.NotFound(w, r)
	}
}

func (m *modelServer) seen() (auth, models []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.auth...), append([]string(nil), m.models...)
}

// fixture is a store with one workspace whose template has a model
// gateway on kind's provider, a runtime serving it, and the port inside
// the "sandbox" (here, this host's loopback) the gateway listens on.
type fixture struct {
	store *models.Store
	ws    *wire.Workspace
	cred  string
	port  int
}

func setup(t *testing.T, kind, baseURL string, budget *backend.GatewayBudget) *fixture {
	t.Helper()
	ctx := t.Context()
	store, err := models.Open(ctx, models.Config{SQLitePath: filepath.Join(t.TempDir(), "primer.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	must(t, store.CreateLLMProvider(ctx, &wire.LLMProvider{ID: "prov", TenantID: wire.DefaultTenantID, Kind: kind, BaseURL: baseURL + "/v1", APIKey: realKey}))
	must(t, store.CreateProvider(ctx, &wire.Provider{ID: "lp", TenantID: wire.DefaultTenantID, Provider: "local", Config: json.RawMessage(`{"kind":"local","root_path":"/tmp"}`)}))
	port := freePort(t)
	doc, _ := json.Marshal(map[string]any{"kind": "local", "env": map[string]string{"A": "b"},
		"model_gateway": backend.ModelGateway{ProviderID: "prov", Models: []string{"gpt-ok", "claude-ok"}, Port: port, Budget: budget}})
	must(t, store.CreateTemplate(ctx, &wire.Template{ID: "tmpl", TenantID: wire.DefaultTenantID, ProviderID: "lp", Backend: doc}))
	ws := &wire.Workspace{ID: "ws-gw1", TenantID: wire.DefaultTenantID, TemplateID: "tmpl", ProviderID: "lp", Backend: "local", Phase: wire.PhaseRunning}
	must(t, store.CreateWorkspace(ctx, ws))
	e := runtimetest.Start(t, server.Config{})
	g := &gateway.Gateway{Store: store, HTTP: http.DefaultClient}
	g.Attach(ws.ID, e.Client)
	cred, err := store.GatewayCredential(ctx, ws.ID)
	must(t, err)
	return &fixture{store: store, ws: ws, cred: cred, port: port}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// post calls the gateway as a program in the sandbox would.
func (f *fixture) post(t *testing.T, path, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(f.port)+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	must(t, err)
	return string(b)
}

// TestGatewayOpenAI: the workspace's credential buys a call with the real
// key added; the answer and usage pass back; a stream's first event
// reaches the caller before the provider sends the rest; a wrong
// credential is 401, a model off the allowlist 403, both in OpenAI's error
// shape and neither reaching the provider; the requests budget gives 429.
func TestGatewayOpenAI(t *testing.T) {
	ms := newModelServer(t)
	f := setup(t, wire.LLMOpenAI, ms.URL, &backend.GatewayBudget{WorkspaceRequests: 3})
	auth := map[string]string{"Authorization": "Bearer " + f.cred, SessionHeaderForTest: "sess-1"}

	resp := f.post(t, "/v1/chat/completions", `{"model":"gpt-ok","messages":[{"role":"user","content":"hi"}]}`, auth)
	if body := readAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(body, `"prompt_tokens":11`) {
		t.Fatalf("chat completion: %d %s", resp.StatusCode, body)
	}
	resp = f.post(t, "/v1/chat/completions", `{"model":"gpt-ok","stream":true,"messages":[]}`, auth)
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	must(t, err)
	if !strings.Contains(first, `"one"`) {
		t.Fatalf("first stream line %q, want the first chunk", first)
	}
	ms.release <- struct{}{} // only now does the provider send the rest
	if rest := readAll(t, br); !strings.Contains(rest, `" two"`) || !strings.Contains(rest, "[DONE]") {
		t.Fatalf("rest of the stream %q", rest)
	}
	resp = f.post(t, "/v1/responses", `{"model":"gpt-ok","input":"hi"}`, auth)
	if body := readAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(body, `"input_tokens":3`) {
		t.Fatalf("responses: %d %s", resp.StatusCode, body)
	}

	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
		status     int
		code       string
	}{
		{"wrong credential", `{"model":"gpt-ok"}`, map[string]string{"Authorization": "Bearer pgw-forged"}, 401, "invalid_api_key"},
		{"no credential", `{"model":"gpt-ok"}`, nil, 401, "invalid_api_key"},
		{"model not allowed", `{"model":"gpt-expensive"}`, auth, 403, "model_not_allowed"},
		{"over budget", `{"model":"gpt-ok"}`, auth, 429, "insufficient_quota"},
	} {
		resp := f.post(t, "/v1/chat/completions", tc.body, tc.hdr)
		var e struct {
			Error struct{ Message, Type, Code string }
		}
		body := readAll(t, resp.Body)
		if resp.StatusCode != tc.status || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != tc.code || e.Error.Message == "" {
			t.Errorf("%s: %d %s; want %d with OpenAI's error shape, code %s", tc.name, resp.StatusCode, body, tc.status, tc.code)
		}
		if tc.status == 429 && !strings.Contains(e.Error.Message, "over its budget") {
			t.Errorf("over budget: message %q does not say so", e.Error.Message)
		}
	}

	gotAuth, gotModels := ms.seen()
	if len(gotAuth) != 3 {
		t.Fatalf("the provider got %d requests (%v), want the 3 allowed ones", len(gotAuth), gotModels)
	}
	for _, a := range gotAuth {
		if a != "Bearer "+realKey {
			t.Errorf("the provider got Authorization %q, want the real key", a)
		}
	}
	checkRecords(t, f, "gpt-ok", 11+7+5+2+3+4)
}

// TestGatewayBudgetAtOnce: calls made together, each still streaming
// when the others check the budget, pass a requests budget exactly as
// many times as it allows: 3 of 8 reach the provider, 5 are 429, and a
// call refused leaves no usage row behind.
func TestGatewayBudgetAtOnce(t *testing.T) {
	ms := newModelServer(t)
	f := setup(t, wire.LLMOpenAI, ms.URL, &backend.GatewayBudget{WorkspaceRequests: 3})
	auth := map[string]string{"Authorization": "Bearer " + f.cred}
	const callers = 8
	codes := make([]int, callers)
	bodies := make([]*http.Response, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			// A passed call answers 200 with its first chunk and then waits
			// for release: it is in flight while the others are checked.
			resp := f.post(t, "/v1/chat/completions", `{"model":"gpt-ok","stream":true,"messages":[]}`, auth)
			codes[i], bodies[i] = resp.StatusCode, resp
		})
	}
	wg.Wait()
	passed := 0
	for i, code := range codes {
		switch code {
		case 200:
			passed++
		case 429:
		default:
			t.Errorf("caller %d: %d %s; want 200 or 429", i, code, readAll(t, bodies[i].Body))
		}
	}
	for range passed { // before any Fatal, so no stream is left waiting
		ms.release <- struct{}{}
	}
	if passed != 3 {
		t.Fatalf("%d of %d calls in flight together passed a budget of 3 requests, want exactly 3 (codes %v)", passed, callers, codes)
	}
	for i, code := range codes {
		if body := readAll(t, bodies[i].Body); code == 200 && !strings.Contains(body, "[DONE]") {
			t.Errorf("caller %d: stream %q did not end", i, body)
		}
	}
	if got, _ := ms.seen(); len(got) != 3 {
		t.Errorf("the provider got %d requests, want the 3 the budget allows", len(got))
	}
	rows, err := f.store.GatewayUsageOf(t.Context(), f.ws.ID)
	must(t, err)
	if len(rows) != 3 {
		t.Fatalf("%d usage rows, want the 3 calls forwarded", len(rows))
	}
	for _, r := range rows {
		if r.Status != 200 || r.InputTokens+r.OutputTokens != 7 {
			t.Errorf("usage row %+v, want status 200 and the stream's 7 tokens", r)
		}
	}
}

// TestGatewayAnthropic: Anthropic's messages stream, with x-api-key, in
// pieces; usage from message_start and message_delta; a model off the
// allowlist and a spent token budget answer in Anthropic's error shape.
func TestGatewayAnthropic(t *testing.T) {
	ms := newModelServer(t)
	f := setup(t, wire.LLMAnthropic, ms.URL, &backend.GatewayBudget{TenantTokens: 10})
	auth := map[string]string{"x-api-key": f.cred, "anthropic-version": "2023-06-01"}
	resp := f.post(t, "/v1/messages", `{"model":"claude-ok","stream":true,"max_tokens":10,"messages":[]}`, auth)
	br := bufio.NewReader(resp.Body)
	var head bytes.Buffer
	for !strings.Contains(head.String(), "message_start") {
		line, err := br.ReadString('\n')
		must(t, err)
		head.WriteString(line)
	}
	ms.release <- struct{}{}
	if rest := readAll(t, br); !strings.Contains(rest, "message_stop") {
		t.Fatalf("rest of the stream %q", rest)
	}
	for _, tc := range []struct {
		model, typ string
		status     int
	}{{"claude-big", "permission_error", 403}, {"claude-ok", "rate_limit_error", 429}} {
		resp := f.post(t, "/v1/messages", `{"model":"`+tc.model+`","max_tokens":10,"messages":[]}`, auth)
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		body := readAll(t, resp.Body)
		if resp.StatusCode != tc.status || json.Unmarshal([]byte(body), &e) != nil || e.Type != "error" || e.Error.Type != tc.typ {
			t.Errorf("model %s: %d %s; want %d with Anthropic's error shape, type %s", tc.model, resp.StatusCode, body, tc.status, tc.typ)
		}
	}
	gotAuth, _ := ms.seen()
	if len(gotAuth) != 1 || gotAuth[0] != realKey {
		t.Fatalf("the provider got keys %q, want the real key once", gotAuth)
	}
	checkRecords(t, f, "claude-ok", 9+6)
}

// checkRecords: usage rows sum to tokens, audit entries name the model and
// never hold the key or the credential.
func checkRecords(t *testing.T, f *fixture, model string, tokens int64) {
	t.Helper()
	spent, err := f.store.GatewaySpendSince(t.Context(), f.ws.TenantID, f.ws.ID, time.Now().Add(-time.Hour))
	must(t, err)
	if spent.Tokens != tokens {
		t.Errorf("recorded %d tokens, want %d", spent.Tokens, tokens)
	}
	entries, err := f.store.ListAudit(t.Context(), models.AuditFilter{TenantID: f.ws.TenantID})
	must(t, err)
	found := false
	for _, e := range entries {
		all := fmt.Sprintf("%+v", e)
		if strings.Contains(all, realKey) || strings.Contains(all, f.cred) {
			t.Errorf("audit entry holds a secret: %s", all)
		}
		if e.Action == "model_gateway.call" && strings.Contains(e.Resource, "/model_gateway/"+model) && e.Status == 200 {
			found = true
		}
	}
	if !found {
		t.Errorf("no audit entry of a 200 call to %s in %+v", model, entries)
	}
}

// TestWorkspaceEnvHoldsNoKey: a gateway workspace's env points at the
// loopback port and holds the credential, never the provider's key.
func TestWorkspaceEnvHoldsNoKey(t *testing.T) {
	ms := newModelServer(t)
	f := setup(t, wire.LLMOpenAI, ms.URL, nil)
	c := &connector.Connector{Store: f.store}
	env, err := c.WorkspaceEnv(t.Context(), f.ws.ID, backend.Common{Env: map[string]string{"A": "b"}, ModelGateway: &backend.ModelGateway{ProviderID: "prov", Models: []string{"m"}, Port: f.port}})
	must(t, err)
	want := "http://127.0.0.1:" + strconv.Itoa(f.port)
	if env["OPENAI_BASE_URL"] != want+"/v1" || env["ANTHROPIC_BASE_URL"] != want || env["OPENAI_API_KEY"] != f.cred || env["ANTHROPIC_API_KEY"] != f.cred || env["A"] != "b" {
		t.Fatalf("env %v", env)
	}
	for k, v := range env {
		if strings.Contains(v, realKey) {
			t.Errorf("env %s holds the provider's key", k)
		}
	}
}

const SessionHeaderForTest = gateway.SessionHeader

// TestGatewayUsageSession: a call is recorded under the session it names
// when that is one of the workspace's, under none when it names another
// workspace's, and under the workspace's one open session when it names
// none.
func TestGatewayUsageSession(t *testing.T) {
	ms := newModelServer(t)
	f := setup(t, wire.LLMOpenAI, ms.URL, nil)
	ctx := t.Context()
	other := &wire.Workspace{ID: "ws-other", TenantID: wire.DefaultTenantID, TemplateID: "tmpl", ProviderID: "lp", Backend: "local", Phase: wire.PhaseRunning}
	must(t, f.store.CreateWorkspace(ctx, other))
	mine := &wire.Session{WorkspaceID: f.ws.ID}
	must(t, f.store.CreateSession(ctx, mine))
	theirs := &wire.Session{WorkspaceID: other.ID}
	must(t, f.store.CreateSession(ctx, theirs))
	for _, named := range []string{"", mine.ID, theirs.ID} {
		hdr := map[string]string{"Authorization": "Bearer " + f.cred}
		if named != "" {
			hdr[gateway.SessionHeader] = named
		}
		resp := f.post(t, "/v1/chat/completions", `{"model":"gpt-ok","messages":[]}`, hdr)
		if body := readAll(t, resp.Body); resp.StatusCode != 200 {
			t.Fatalf("call naming %q: %d %s", named, resp.StatusCode, body)
		}
	}
	rows, err := f.store.GatewayUsageOf(ctx, f.ws.ID)
	must(t, err)
	var got []string
	for _, r := range rows {
		got = append(got, r.SessionID)
	}
	if want := []string{mine.ID, mine.ID, ""}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("usage sessions %q, want %q (the open one, the named one, none for another workspace's)", got, want)
	}
}

// TestGatewayTenantQuota: the tenant's daily quota bounds its calls
// through a template with no budget of its own: the second request over
// max_model_requests_per_day is 429 naming the quota, and raising the
// quota lets calls through again.
func TestGatewayTenantQuota(t *testing.T) {
	ms := newModelServer(t)
	f := setup(t, wire.LLMOpenAI, ms.URL, nil)
	ctx := t.Context()
	tn := &wire.Tenant{ID: wire.DefaultTenantID, Quota: wire.Quota{MaxModelRequestsPerDay: 1}}
	must(t, f.store.CreateTenant(ctx, tn))
	auth := map[string]string{"Authorization": "Bearer " + f.cred}
	call := func() (int, string) {
		resp := f.post(t, "/v1/chat/completions", `{"model":"gpt-ok","messages":[]}`, auth)
		return resp.StatusCode, readAll(t, resp.Body)
	}
	if code, body := call(); code != 200 {
		t.Fatalf("first call under the quota: %d %s", code, body)
	}
	if code, body := call(); code != 429 || !strings.Contains(body, "its daily quota") || !strings.Contains(body, "1 of 1 requests") {
		t.Fatalf("call over the tenant's daily quota: %d %s; want 429 naming the quota", code, body)
	}
	tn.Quota.MaxModelRequestsPerDay = 0
	_, err := f.store.UpdateTenant(ctx, tn)
	must(t, err)
	if code, body := call(); code != 200 {
		t.Fatalf("call once the quota is lifted: %d %s", code, body)
	}
	if got, _ := ms.seen(); len(got) != 2 {
		t.Errorf("the provider got %d requests, want the 2 under the quota", len(got))
	}
}
