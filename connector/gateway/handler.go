package gateway

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// maxRequestBody bounds a request body the gateway reads to find its model.
const maxRequestBody = 32 << 20

// recordTimeout bounds writing a call's usage and audit entry, which run
// after the caller may have gone.
const recordTimeout = 10 * time.Second

// SessionHeader names the session a call belongs to, for usage records.
const SessionHeader = "X-Primer-Session"

// routes are the endpoints the gateway serves: the path a client calls
// (its base URL holds /v1 for OpenAI; Anthropic's adds it), the API kind
// it speaks and the path under the provider's base URL.
var routes = map[string]struct{ kind, upstream string }{
	"/v1/chat/completions": {wire.LLMOpenAI, "/chat/completions"},
	"/v1/responses":        {wire.LLMOpenAI, "/responses"},
	"/v1/messages":         {wire.LLMAnthropic, "/messages"},
}

// forwarded are the caller's headers passed to the provider; the caller's
// credential never is.
var forwarded = []string{"Content-Type", "Accept", "User-Agent", "anthropic-version", "anthropic-beta", "OpenAI-Beta"}

// handler serves one workspace's tunnels.
type handler struct {
	g                     *Gateway
	workspaceID, tenantID string
}

// call is what one request came to, for its usage row and audit entry.
type call struct {
	model  string
	status int
	result string // ok, or the refusal or failure
	// forwarded is set once the provider answered: only such calls are
	// usage (and count towards budgets); every call is audited.
	forwarded bool
	in, out   int64
	// usage is the call's row, written once its budgets let it through
	// (nil until then); record finishes it, or drops it if the call never
	// reached the provider.
	usage *models.GatewayUsage
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, ok := routes[r.URL.Path]
	kind := rt.kind
	if !ok {
		kind = wire.LLMOpenAI
		if r.Header.Get("x-api-key") != "" {
			kind = wire.LLMAnthropic
		}
		notFound(fmt.Sprintf("model gateway: no endpoint %s; it serves POST /v1/chat/completions, /v1/responses and /v1/messages", r.URL.Path)).write(w, kind)
		return
	}
	if r.Method != http.MethodPost {
		badRequest(http.StatusMethodNotAllowed, "model gateway: "+r.URL.Path+" takes POST").write(w, kind)
		return
	}
	c := &call{}
	defer func() { h.record(r, c) }()
	if !h.authorized(r.Context(), r) {
		ref := unauthorized("model gateway: the credential is not this workspace's (use the OPENAI_API_KEY or ANTHROPIC_API_KEY the workspace was given)")
		c.status, c.result = ref.status, ref.openAICode
		ref.write(w, kind)
		return
	}
	if ref := h.serve(w, r, rt.kind, rt.upstream, c); ref != nil {
		c.status, c.result = ref.status, ref.openAICode
		ref.write(w, kind)
	}
}

// authorized checks the caller's credential against the workspace's: an
// OpenAI client sends it as a bearer token, an Anthropic one as x-api-key.
func (h *handler) authorized(ctx context.Context, r *http.Request) bool {
	got := r.Header.Get("x-api-key")
	if got == "" {
		got, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	want, err := h.g.Store.GatewayCredential(ctx, h.workspaceID)
	if err != nil || got == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// serve checks and forwards one call; a refusal is returned to be written
// in the caller's shape, nil once the provider's answer was passed on.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, kind, path string, c *call) *refusal {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		ref := badRequest(http.StatusBadRequest, "model gateway: read the request: "+err.Error())
		return &ref
	}
	if len(body) > maxRequestBody {
		ref := badRequest(http.StatusRequestEntityTooLarge, fmt.Sprintf("model gateway: request body over %d bytes", maxRequestBody))
		return &ref
	}
	var head struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.Model == "" {
		ref := badRequest(http.StatusBadRequest, "model gateway: the body must be a JSON object with a model")
		return &ref
	}
	c.model = head.Model
	ctx := r.Context()
	mg, p, err := h.config(ctx)
	if err != nil {
		ref := upstream(http.StatusServiceUnavailable, "model gateway: "+err.Error())
		return &ref
	}
	if !slices.Contains(mg.Models, head.Model) {
		ref := forbidden(fmt.Sprintf("model gateway: model %q is not allowed for this workspace (allowed: %s)", head.Model, strings.Join(mg.Models, ", ")))
		return &ref
	}
	if p.Kind != kind {
		ref := notFound(fmt.Sprintf("model gateway: this workspace's provider speaks the %s API, not %s", p.Kind, kind))
		return &ref
	}
	if ref := h.reserve(ctx, mg.Budget, c); ref != nil {
		return ref
	}
	if path == "/chat/completions" && head.Stream {
		body = withStreamUsage(body)
	}
	key, err := models.LLMKey(p)
	if err != nil {
		ref := upstream(http.StatusBadGateway, "model gateway: "+err.Error())
		return &ref
	}
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(p.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		ref := upstream(http.StatusBadGateway, "model gateway: the provider's base URL: "+err.Error())
		return &ref
	}
	for _, k := range forwarded {
		if v := r.Header.Values(k); len(v) > 0 {
			up.Header[http.CanonicalHeaderKey(k)] = v
		}
	}
	if kind == wire.LLMAnthropic {
		up.Header.Set("x-api-key", key)
		if up.Header.Get("anthropic-version") == "" {
			up.Header.Set("anthropic-version", "2023-06-01")
		}
	} else {
		up.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := h.g.HTTP.Do(up)
	if err != nil {
		// The transport's error names the URL, never a header: no key.
		ref := upstream(http.StatusBadGateway, "model gateway: reach the provider: "+strings.ReplaceAll(err.Error(), key, "[redacted]"))
		return &ref
	}
	defer resp.Body.Close()
	h.relay(w, resp, c)
	return nil
}

// relay passes the provider's answer on as it arrives, a flush per read,
// so a stream's events reach the caller one by one, metering its usage.
func (h *handler) relay(w http.ResponseWriter, resp *http.Response, c *call) {
	for k, v := range resp.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length", "Set-Cookie":
			continue
		}
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	c.status, c.result, c.forwarded = resp.StatusCode, "ok", true
	if resp.StatusCode >= 400 {
		c.result = "provider_error"
	}
	m := &meter{sse: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")}
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			m.feed(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				c.result = "caller_gone"
				break
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			c.result = "provider_cut"
			break
		}
	}
	m.done()
	c.in, c.out = m.in, m.out
}

// config reads the workspace's gateway settings and provider now, so a
// template change applies to the next call.
func (h *handler) config(ctx context.Context) (*backend.ModelGateway, *wire.LLMProvider, error) {
	ws, err := h.g.Store.GetWorkspace(ctx, h.workspaceID)
	if err != nil {
		return nil, nil, fmt.Errorf("workspace %s: %w", h.workspaceID, err)
	}
	t, err := h.g.Store.GetTemplate(ctx, ws.TemplateID)
	if err != nil {
		return nil, nil, fmt.Errorf("template %s: %w", ws.TemplateID, err)
	}
	var common backend.Common
	if err := json.Unmarshal(t.Backend, &common); err != nil || common.ModelGateway == nil {
		return nil, nil, errs.E(errs.Precondition, "template %s has no model_gateway", t.ID)
	}
	p, err := h.g.Store.GetLLMProvider(ctx, common.ModelGateway.ProviderID)
	if err != nil || p.TenantID != ws.TenantID {
		// Another tenant's provider is as unknown as a missing one.
		return nil, nil, errs.E(errs.NotFound, "llm provider %s not found", common.ModelGateway.ProviderID)
	}
	return common.ModelGateway, p, nil
}

// budgetCheck is one bound on calls: of the workspace (workspace set) or
// of the whole tenant, over period.
type budgetCheck struct {
	who, workspace   string
	tokens, requests int64
	period           time.Duration
}

// reserve writes the call's usage row unless the workspace or its tenant
// has used its tokens or requests of the current period (the template's
// budget b, nil for none, then the tenant's daily quota): then the call is
// refused, 429. The check and the write are one step in the store, so
// calls made at once cannot all take a budget's last request.
func (h *handler) reserve(ctx context.Context, b *backend.GatewayBudget, c *call) *refusal {
	var checks []budgetCheck
	if b != nil {
		checks = append(checks,
			budgetCheck{"workspace " + h.workspaceID, h.workspaceID, b.WorkspaceTokens, b.WorkspaceRequests, b.PeriodOf()},
			budgetCheck{"tenant " + h.tenantID, "", b.TenantTokens, b.TenantRequests, b.PeriodOf()})
	}
	switch t, err := h.g.Store.GetTenant(ctx, h.tenantID); {
	case err == nil:
		checks = append(checks, budgetCheck{"tenant " + h.tenantID + " (its daily quota)", "", t.Quota.MaxModelTokensPerDay, t.Quota.MaxModelRequestsPerDay, 24 * time.Hour})
	case !errs.Is(err, errs.NotFound): // a tenant gone meanwhile has no quota left to apply
		ref := upstream(http.StatusServiceUnavailable, "model gateway: read the tenant's quota: "+err.Error())
		return &ref
	}
	now := h.g.now().UTC()
	bounds := make([]models.GatewayBound, len(checks))
	for i, ck := range checks {
		bounds[i] = models.GatewayBound{WorkspaceID: ck.workspace, Requests: ck.requests, Tokens: ck.tokens, Since: now.Truncate(ck.period)}
	}
	u := &models.GatewayUsage{TenantID: h.tenantID, WorkspaceID: h.workspaceID, Model: clip(c.model, 256), CreatedAt: now}
	over, spent, err := h.g.Store.ReserveGatewayCall(ctx, u, bounds)
	if err != nil {
		ref := upstream(http.StatusServiceUnavailable, "model gateway: check the budget and record the call: "+err.Error())
		return &ref
	}
	if over < 0 {
		c.usage = u
		return nil
	}
	ck, since := checks[over], bounds[over].Since
	why := fmt.Sprintf("%d of %d tokens", spent.Tokens, ck.tokens)
	if ck.requests > 0 && spent.Requests >= ck.requests {
		why = fmt.Sprintf("%d of %d requests", spent.Requests, ck.requests)
	}
	ref := overBudget(fmt.Sprintf("model gateway: %s is over its budget: used %s in the period of %s that began %s; it resets at %s",
		ck.who, why, ck.period, since.Format(time.RFC3339), since.Add(ck.period).Format(time.RFC3339)))
	return &ref
}

// record stores the call's usage and audit entry: model, tokens, status;
// never a body or a key.
func (h *handler) record(r *http.Request, c *call) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), recordTimeout)
	defer cancel()
	switch u := c.usage; {
	case u == nil:
	case c.forwarded:
		u.SessionID, u.Status, u.InputTokens, u.OutputTokens = h.sessionOf(ctx, r.Header.Get(SessionHeader)), c.status, c.in, c.out
		if err := h.g.Store.FinishGatewayUsage(ctx, u); err != nil {
			h.g.logger().Warn("model gateway: record usage", "workspace_id", h.workspaceID, "error", err)
		}
	default:
		if err := h.g.Store.DropGatewayUsage(ctx, u.ID); err != nil {
			h.g.logger().Warn("model gateway: drop the usage of a call not forwarded", "workspace_id", h.workspaceID, "error", err)
		}
	}
	res := fmt.Sprintf("workspaces/%s/model_gateway/%s?input_tokens=%d&output_tokens=%d", h.workspaceID, clip(c.model, 128), c.in, c.out)
	e := &wire.AuditEntry{TenantID: h.tenantID, KeyID: "workspace:" + h.workspaceID, Action: "model_gateway.call",
		Resource: clip(res, 300), Status: c.status, Result: clip(c.result, 32), Address: "sandbox"}
	if err := h.g.Store.AppendAudit(ctx, e); err != nil {
		h.g.logger().Warn("model gateway: audit", "workspace_id", h.workspaceID, "error", err)
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// withStreamUsage asks a streamed chat completion for its usage chunk
// (stream_options.include_usage), without which a stream's tokens cannot
// be counted against a budget. Clients handle the extra chunk (it has no
// choices); one that asked already, or a body that is not an object, is
// left as it is.
func withStreamUsage(body []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	opts := map[string]json.RawMessage{}
	if raw, ok := m["stream_options"]; ok && json.Unmarshal(raw, &opts) != nil {
		return body
	}
	if _, ok := opts["include_usage"]; ok {
		return body
	}
	opts["include_usage"] = json.RawMessage("true")
	b, err := json.Marshal(opts)
	if err != nil {
		return body
	}
	m["stream_options"] = b
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// sessionOf is the session a call is recorded under: the one the caller
// named in X-Primer-Session when it is an open or ended session of this
// workspace, else the workspace's one open session if it has exactly one,
// else none.
func (h *handler) sessionOf(ctx context.Context, named string) string {
	if named != "" {
		if s, err := h.g.Store.GetSession(ctx, named); err == nil && s.WorkspaceID == h.workspaceID {
			return s.ID
		}
		return ""
	}
	open, err := h.g.Store.ListSessions(ctx, models.SessionFilter{TenantID: h.tenantID, WorkspaceID: h.workspaceID, Status: wire.SessionOpen})
	if err != nil || len(open) != 1 {
		return ""
	}
	return open[0].ID
}
