package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// Tenants of the route matrix: alpha owns one of every resource, bravo
// holds the keys that try to reach them.
const (
	tenantA = "alpha"
	tenantB = "bravo"
)

// tenancyFixture is what the route matrix runs against.
type tenancyFixture struct {
	// ids maps a route's resource (the path segment before :id) to
	// tenant A's id of it; unknown to an id of the same shape nobody has.
	ids, unknown map[string]string
	// memberB and viewerB are tenant B's keys.
	memberB, viewerB string
	// badKeys are Authorization values (empty: none sent) that must all
	// answer 401.
	badKeys []badKey
}

type badKey struct{ name, header string }

// otherParams fills the route parameters that are not a resource id.
var otherParams = map[string]string{
	"tool":    ToolRead,
	"path":    "/a.txt",
	"pid":     "1",
	"port":    "8080",
	"preview": "pv-0000000000000000",
}

// matrixQueries are query strings a route needs so that it gets past its
// own parameter checks to the lookup of its resource.
func matrixQueries(fx *tenancyFixture) map[string]string {
	return map[string]string{
		"GET /v1/runs/:id/compare":       "base=" + fx.ids["runs"],
		"GET /v1/sessions/:id/diff":      "commit=" + strings.Repeat("ab", 20),
		"GET /v1/workspaces/:id/events":  "follow=true", // the SSE stream
		"GET /v1/workspaces/:id/files":   "stat=true",
		"GET /v1/workspaces/:id/files/*": "stat=true",
	}
}

// matrixBodies are valid bodies of every write route, so that a request
// reaches the handler's lookup rather than stopping at input checks. A
// write route without one fails the test: a new route must be added here.
// Creates (no :id) map to the body referencing tenant A's resources; "{}"
// for a create that references none.
func matrixBodies(fx *tenancyFixture) map[string]string {
	suite := func(id, ref string) string {
		return `{` + id + ref + `,"cases":[{"id":"a","command":"true"}]}`
	}
	return map[string]string{
		"POST /v1/providers":                                 `{"id":"bravo-prov","provider":"container","config":{"root_path":"/tmp/bravo"}}`,
		"PUT /v1/providers/:id":                              `{"provider":"container","config":{"root_path":"/tmp/x"}}`,
		"POST /v1/templates":                                 `{"id":"bravo-tmpl","provider_id":"` + fx.ids["providers"] + `","backend":{"kind":"local"}}`,
		"PUT /v1/templates/:id":                              `{"provider_id":"` + fx.ids["providers"] + `","backend":{"kind":"local"}}`,
		"POST /v1/workspaces":                                `{"template_id":"` + fx.ids["templates"] + `"}`,
		"POST /v1/llm-providers":                             `{"id":"bravo-llm","kind":"openai","base_url":"http://127.0.0.1:1/v1","api_key":"k"}`,
		"PUT /v1/llm-providers/:id":                          `{"kind":"openai","base_url":"http://127.0.0.1:1/v1","api_key":"k"}`,
		"POST /v1/agents":                                    `{"id":"bravo-agent","model":{"provider_id":"` + fx.ids["llm-providers"] + `","model_name":"m"}}`,
		"PUT /v1/agents/:id":                                 `{"model":{"provider_id":"` + fx.ids["llm-providers"] + `","model_name":"m"}}`,
		"PUT /v1/workspaces/:id/files/*path":                 "x",
		"POST /v1/workspaces/:id/ports/:port/*path":          "x",
		"PUT /v1/workspaces/:id/ports/:port/*path":           "x",
		"PATCH /v1/workspaces/:id/ports/:port/*path":         "x",
		"OPTIONS /v1/workspaces/:id/ports/:port/*path":       "",
		"POST /v1/workspaces/:id/previews":                   `{"port":8080}`,
		"POST /v1/workspaces/:id/exec":                       `{"command":["true"]}`,
		"POST /v1/workspaces/:id/processes":                  `{"command":["true"]}`,
		"POST /v1/workspaces/:id/processes/:pid/input":       `{"data":"x"}`,
		"POST /v1/workspaces/:id/processes/:pid/signal":      `{"signal":"TERM"}`,
		"POST /v1/workspaces/:id/processes/:pid/resize":      `{"cols":80,"rows":24}`,
		"POST /v1/workspaces/:id/processes/:pid/close-stdin": `{}`,
		"POST /v1/workspaces/:id/return":                     `{}`,
		"POST /v1/workspaces/:id/recover":                    `{}`,
		"POST /v1/workspaces/:id/extend":                     `{"by":"1m"}`,
		"POST /v1/workspaces/:id/snapshots":                  `{}`,
		"POST /v1/workspaces/:id/fork":                       `{"count":1}`,
		"POST /v1/workspaces/:id/pause":                      `{}`,
		"POST /v1/workspaces/:id/resume":                     `{}`,
		"POST /v1/pools":                                     `{"id":"bravo-pool","template_id":"` + fx.ids["templates"] + `"}`,
		"PUT /v1/pools/:id":                                  `{"template_id":"` + fx.ids["templates"] + `","size":1}`,
		"POST /v1/pools/:id/lease":                           `{}`,
		"POST /v1/suites":                                    suite(`"id":"bravo-suite",`, `"template_id":"`+fx.ids["templates"]+`"`),
		"PUT /v1/suites/:id":                                 suite("", `"template_id":"`+fx.ids["templates"]+`"`),
		"POST /v1/suites/:id/schedule/pause":                 `{}`,
		"POST /v1/suites/:id/schedule/resume":                `{}`,
		"POST /v1/suites/:id/schedule/trigger":               `{}`,
		"POST /v1/suites/:id/runs":                           `{}`,
		"POST /v1/runs/:id/cancel":                           `{}`,
		"POST /v1/sessions":                                  `{"workspace_id":"` + fx.ids["workspaces"] + `"}`,
		"POST /v1/sessions/:id/end":                          `{}`,
		"POST /v1/sessions/:id/tools/:tool":                  `{"path":"a.txt"}`,
		"POST /v1/sessions/:id/restore":                      `{"commit":"` + strings.Repeat("ab", 20) + `"}`,
		"POST /v1/sessions/:id/run":                          `{"agent":"` + fx.ids["agents"] + `","instructions":"x"}`,
		"POST /v1/sessions/:id/cancel":                       `{}`,
		"POST /v1/tenants":                                   `{"id":"bravo-2"}`,
		"PUT /v1/tenants/:id":                                `{"description":"x"}`,
		"POST /v1/apikeys":                                   `{"tenant_id":"` + tenantA + `","role":"member"}`,
		"POST /v1/apikeys/:id/revoke":                        `{}`,
	}
}

// createRefs lists, for creates that reference another resource, the
// resource kind whose id their body names: the matrix sends the body with
// tenant A's id and with an unknown one and wants the same 404.
var createRefs = map[string]string{
	"POST /v1/templates":  "providers",
	"POST /v1/agents":     "llm-providers",
	"POST /v1/workspaces": "templates",
	"POST /v1/pools":      "templates",
	"POST /v1/suites":     "templates",
	"POST /v1/sessions":   "workspaces",
	"POST /v1/apikeys":    "tenants",
}

// matrixClient bounds every request, so an SSE stream that leaks (and so
// never ends) is a violation rather than a hung test.
var matrixClient = &http.Client{Timeout: 5 * time.Second}

// reply is one matrix request's outcome.
type reply struct {
	status int
	code   string
	msg    string
	body   string
}

func matrixSend(base, method, path, body, auth string) reply {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		return reply{status: -1, msg: err.Error()}
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := matrixClient.Do(req)
	if err != nil {
		return reply{status: -1, msg: err.Error()}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil && res.StatusCode < 300 {
		// A stream cut by the client timeout: it was answering.
		return reply{status: res.StatusCode, body: string(data)}
	}
	var env struct {
		Error *wire.ErrorBody `json:"error"`
	}
	out := reply{status: res.StatusCode, body: string(data)}
	if json.Unmarshal(data, &env) == nil && env.Error != nil {
		out.code, out.msg = env.Error.Code, env.Error.Message
	}
	return out
}

// fillRoute replaces a route's parameters: :id by ids[the segment before
// it], the others from otherParams. idParam says the route has an :id;
// missing names a parameter that cannot be filled.
func fillRoute(route string, ids map[string]string) (path string, idParam bool, missing string) {
	segs := strings.Split(route, "/")
	for i, seg := range segs {
		if seg == "" || (seg[0] != ':' && seg[0] != '*') {
			continue
		}
		name := seg[1:]
		if name == "id" && i > 0 {
			v, ok := ids[segs[i-1]]
			if !ok {
				return "", false, seg + " after " + segs[i-1]
			}
			segs[i] = v
			idParam = true
			continue
		}
		v, ok := otherParams[name]
		if !ok {
			return "", false, seg
		}
		segs[i] = strings.TrimPrefix(v, "/")
	}
	return strings.Join(segs, "/"), idParam, ""
}

// sameAnswer reports whether two error replies say the same, once the id
// each names is taken out.
func sameAnswer(a reply, aID string, b reply, bID string) bool {
	return a.status == b.status && a.code == b.code &&
		strings.ReplaceAll(a.msg, aID, "<id>") == strings.ReplaceAll(b.msg, bID, "<id>")
}

// routeMatrix runs every /v1 route of engine (served at base) with bad
// keys, a viewer key and another tenant's member key, and returns every
// answer that is not the right 401, 403 or 404.
func routeMatrix(t *testing.T, engine *gin.Engine, base string, fx *tenancyFixture) []string {
	t.Helper()
	var violations []string
	bad := func(route, format string, args ...any) {
		violations = append(violations, route+": "+fmt.Sprintf(format, args...))
	}
	bodies := matrixBodies(fx)
	queries := matrixQueries(fx)
	routes := engine.Routes()

	// Lists first: nothing of A may show in B's lists, and B's later
	// requests must not be what fills them (its own audit entries).
	for _, rt := range routes {
		if !strings.HasPrefix(rt.Path, "/v1/") || rt.Method != http.MethodGet || strings.ContainsAny(rt.Path, ":*") {
			continue
		}
		key := rt.Method + " " + rt.Path
		r := matrixSend(base, rt.Method, rt.Path, "", "Bearer "+fx.memberB)
		if r.status != http.StatusOK {
			bad(key, "tenant B's list: status %d (%s), want 200", r.status, r.msg)
			continue
		}
		for kind, id := range fx.ids {
			if strings.Contains(r.body, id) {
				bad(key, "tenant B's list shows tenant A's %s %s", kind, id)
			}
		}
	}

	for _, rt := range routes {
		if !strings.HasPrefix(rt.Path, "/v1/") || rt.Path == "/v1/openapi.json" {
			continue // /healthz, /readyz, /metrics, the API's description: open by design
		}
		key := rt.Method + " " + rt.Path
		path, idParam, missing := fillRoute(rt.Path, fx.ids)
		if missing != "" {
			t.Errorf("%s: the matrix cannot fill %s; add it to tenancyFixture.ids or otherParams", key, missing)
			continue
		}
		if q := queries[key]; q != "" {
			path += "?" + q
		}
		body, hasBody := bodies[key]
		write := !readOnly(rt.Method)
		if write && rt.Method != http.MethodDelete && !hasBody {
			t.Errorf("%s: no body in matrixBodies; add a valid one", key)
			continue
		}

		for _, k := range fx.badKeys {
			r := matrixSend(base, rt.Method, path, body, k.header)
			// A HEAD answer has no body to carry the code: its status says it.
			if r.status != http.StatusUnauthorized || (r.code != "unauthenticated" && rt.Method != http.MethodHead) {
				bad(key, "%s: status %d code %q, want 401 unauthenticated", k.name, r.status, r.code)
			}
		}
		if write {
			r := matrixSend(base, rt.Method, path, body, "Bearer "+fx.viewerB)
			if r.status != http.StatusForbidden {
				bad(key, "viewer write: status %d (%s), want 403", r.status, r.msg)
			}
		}

		// Another tenant's member: A's resource must answer exactly as an
		// unknown id does, and that is 404 (403 only where the route is
		// refused to a member whatever the id, e.g. admin only).
		switch {
		case idParam:
			r := matrixSend(base, rt.Method, path, body, "Bearer "+fx.memberB)
			upath, _, _ := fillRoute(rt.Path, fx.unknown)
			if q := queries[key]; q != "" {
				upath += "?" + q
			}
			u := matrixSend(base, rt.Method, upath, body, "Bearer "+fx.memberB)
			kind := routeResource(rt.Path)
			checkHidden(bad, key, "tenant B on A's "+kind, r, fx.ids[kind], u, fx.unknown[kind])
		case write && createRefs[key] != "":
			kind := createRefs[key]
			r := matrixSend(base, rt.Method, path, body, "Bearer "+fx.memberB)
			u := matrixSend(base, rt.Method, path, strings.ReplaceAll(body, fx.ids[kind], fx.unknown[kind]), "Bearer "+fx.memberB)
			checkHidden(bad, key, "tenant B's create naming A's "+kind, r, fx.ids[kind], u, fx.unknown[kind])
		}
	}
	return violations
}

// routeResource is the segment before the last :id of route.
func routeResource(route string) string {
	segs := strings.Split(route, "/")
	for i := len(segs) - 1; i > 0; i-- {
		if segs[i] == ":id" {
			return segs[i-1]
		}
	}
	return ""
}

// checkHidden wants r (about A's id) to be 404, or 403 when the unknown id
// is refused the same way, and to say what u (about an unknown id) says.
func checkHidden(bad func(string, string, ...any), key, what string, r reply, id string, u reply, uid string) {
	switch {
	case r.status != http.StatusNotFound && !(r.status == http.StatusForbidden && u.status == http.StatusForbidden):
		bad(key, "%s: status %d (%s), want 404", what, r.status, r.msg)
	case !sameAnswer(r, id, u, uid):
		bad(key, "%s: answers %d %q, an unknown id %d %q; they must not differ", what, r.status, r.msg, u.status, u.msg)
	}
}

// newTenancyFixture makes tenant A with one of every resource (a running
// local workspace, so exec and files reach a runtime) and tenant B's keys,
// and the bad keys.
func newTenancyFixture(h *harness) *tenancyFixture {
	t := h.t
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{tenantA, tenantB} {
		must(h.store.CreateTenant(ctx, &wire.Tenant{ID: id}))
	}
	root := filepath.Join(h.dir, "alpha")
	prov := &wire.Provider{ID: "alpha-prov", TenantID: tenantA, Provider: wire.BackendLocal,
		Config: json.RawMessage(fmt.Sprintf(`{"root_path":%q}`, root))}
	must(h.store.CreateProvider(ctx, prov))
	tmpl := &wire.Template{ID: "alpha-tmpl", TenantID: tenantA, ProviderID: prov.ID, Backend: json.RawMessage(`{"kind":"local"}`)}
	must(h.store.CreateTemplate(ctx, tmpl))
	must(h.store.CreatePool(ctx, &wire.Pool{ID: "alpha-pool", TenantID: tenantA, TemplateID: tmpl.ID, Size: 1}))

	// A running workspace of A, provisioned as its workflow would.
	w := &wire.Workspace{ID: models.NewID("ws"), TenantID: tenantA, TemplateID: tmpl.ID, ProviderID: prov.ID,
		Backend: wire.BackendLocal, Phase: wire.PhasePending}
	w.WorkflowID = workflows.WorkflowID(w.ID)
	must(h.store.CreateWorkspace(ctx, w))
	b, err := h.backends.For(prov)
	must(err)
	token := models.NewToken()
	handle, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: w.ID, Template: tmpl.Backend, Token: token})
	must(err)
	t.Cleanup(func() { _ = b.Destroy(context.Background(), handle) })
	raw, err := json.Marshal(handle)
	must(err)
	must(h.store.SetWorkspaceRuntime(ctx, w.ID, raw, handle.Path, token))
	must(h.store.SetWorkspacePhase(ctx, w.ID, wire.PhaseRunning, ""))
	must(h.store.AppendEvent(ctx, &wire.Event{WorkspaceID: w.ID, Type: wire.EventProvisioned, Data: json.RawMessage(`{}`)}))

	snap := &wire.Snapshot{ID: models.NewID("snap"), TenantID: tenantA, WorkspaceID: w.ID, TemplateID: tmpl.ID,
		ProviderID: prov.ID, Backend: wire.BackendLocal, Mode: wire.SnapshotModeFilesystem}
	must(h.store.CreateSnapshot(ctx, snap))

	llmp := &wire.LLMProvider{ID: "alpha-llm", TenantID: tenantA, Kind: wire.LLMOpenAI, BaseURL: "http://127.0.0.1:1/v1", APIKey: "k"}
	must(h.store.CreateLLMProvider(ctx, llmp))
	agent := &wire.Agent{ID: "alpha-agent", TenantID: tenantA, Model: wire.AgentModel{ProviderID: llmp.ID, ModelName: "m"}}
	must(h.store.CreateAgent(ctx, agent))

	ses := &wire.Session{WorkspaceID: w.ID}
	must(h.store.CreateSession(ctx, ses))
	su := &wire.Suite{ID: "alpha-suite", TenantID: tenantA, TemplateID: tmpl.ID,
		Spec: json.RawMessage(`{"id":"alpha-suite","template_id":"alpha-tmpl"}`)}
	must(h.store.CreateSuite(ctx, su, []wire.SuiteCase{{CaseID: "a", Spec: json.RawMessage(`{"id":"a","command":"true"}`)}}))
	run := &wire.Run{ID: models.NewID("run"), TenantID: tenantA, SuiteID: su.ID, Trigger: wire.TriggerUser}
	must(h.store.CreateRun(ctx, run, []wire.CaseResult{{Ordinal: 0, CaseID: "a", Spec: json.RawMessage(`{"id":"a"}`)}}))

	keyA := h.newKey(tenantA, wire.RoleMember)
	keyAID, err := models.ParseAPIKey(keyA)
	must(err)
	unknownKeyID, unknownKey, _ := models.NewAPIKey()

	revoked := h.newKey(tenantA, wire.RoleAdmin)
	revokedID, err := models.ParseAPIKey(revoked)
	must(err)
	_, _, err = h.store.RevokeAPIKey(ctx, revokedID)
	must(err)
	expiredID, expired, hash := models.NewAPIKey()
	past := time.Now().Add(-time.Minute)
	must(h.store.CreateAPIKey(ctx, &wire.APIKey{ID: expiredID, TenantID: tenantA, Role: wire.RoleAdmin, Hash: hash, ExpiresAt: &past}))

	return &tenancyFixture{
		ids: map[string]string{
			"providers": prov.ID, "templates": tmpl.ID, "pools": "alpha-pool", "workspaces": w.ID,
			"sessions": ses.ID, "suites": su.ID, "runs": run.ID, "tenants": tenantA, "apikeys": keyAID,
			"llm-providers": llmp.ID, "agents": agent.ID, "snapshots": snap.ID,
		},
		unknown: map[string]string{
			"providers": "ghost-prov", "templates": "ghost-tmpl", "pools": "ghost-pool", "workspaces": models.NewID("ws"),
			"sessions": models.NewID("ses"), "suites": "ghost-suite", "runs": models.NewID("run"), "tenants": "ghost",
			"apikeys": unknownKeyID, "llm-providers": "ghost-llm", "agents": "ghost-agent",
			"snapshots": models.NewID("snap"),
		},
		memberB: h.newKey(tenantB, wire.RoleMember),
		viewerB: h.newKey(tenantB, wire.RoleViewer),
		badKeys: []badKey{
			{"no key", ""},
			{"not bearer", "Basic " + keyA},
			{"empty bearer", "Bearer "},
			{"malformed key", "Bearer not-a-key"},
			{"wrong secret", "Bearer pmr." + keyAID + "." + strings.Repeat("0", 64)},
			{"unknown key id", "Bearer " + unknownKey},
			{"revoked key", "Bearer " + revoked},
			{"expired key", "Bearer " + expired},
		},
	}
}

// tenancyHarness is a harness whose failed-authentication throttle never
// trips: the matrix sends hundreds of bad keys from one address on
// purpose. Its registry also serves "container" providers (with the local
// backend), so a member can make a provider that is not on the host.
func tenancyHarness(t *testing.T) *harness {
	h := newHarness(t, func(c *Config) {
		host := local.NewHost(nil)
		t.Cleanup(func() { _ = host.Close() })
		c.Backends = backend.NewRegistry(map[string]backend.Factory{
			wire.BackendLocal:     local.Factory(host, nil),
			wire.BackendContainer: local.Factory(host, nil),
		}).WithConfigs(map[string]any{wire.BackendLocal: local.ProviderConfig{}, wire.BackendContainer: localAsContainer{}})
		c.Connector.Backends = c.Backends
	})
	h.backends = h.srv.cfg.Backends
	h.srv.authFails = newFailLimiter(1<<30, 1e9)
	return h
}

// localAsContainer is the tenancy harness's "container" provider config:
// the local backend's, whose root_path members may set here (the host
// rule is not what these tests are about; provider_access_test.go is).
type localAsContainer struct {
	Kind     string `json:"kind,omitempty" access:"any"`
	RootPath string `json:"root_path" access:"any"`
}

// TestTenancyRouteMatrix runs every route of the router (enumerated, not
// listed, so a new route cannot skip the checks) with no, malformed, wrong,
// unknown, revoked and expired keys (401), a viewer's write (403) and
// another tenant's member on tenant A's resources (404, as an unknown id).
func TestTenancyRouteMatrix(t *testing.T) {
	h := tenancyHarness(t)
	fx := newTenancyFixture(h)
	for _, v := range routeMatrix(t, h.engine, h.url, fx) {
		t.Error(v)
	}
}

// TestTenancyRouteMatrixCatchesALeak shows the matrix fails when one
// handler skips the check: a route that reads the workspace straight from
// the store is reported.
func TestTenancyRouteMatrixCatchesALeak(t *testing.T) {
	h := tenancyHarness(t)
	fx := newTenancyFixture(h)
	engine := h.srv.routes().(*gin.Engine)
	const leak = "GET /v1/workspaces/:id/leak"
	engine.GET("/v1/workspaces/:id/leak", h.srv.authenticate, func(c *gin.Context) {
		w, err := h.srv.cfg.Store.GetWorkspace(c.Request.Context(), c.Param("id"))
		if err != nil {
			h.srv.fail(c, err)
			return
		}
		c.JSON(http.StatusOK, w)
	})
	ts := httptest.NewServer(engine)
	t.Cleanup(ts.Close)
	var found bool
	for _, v := range routeMatrix(t, engine, ts.URL, fx) {
		if strings.HasPrefix(v, leak+": tenant B on A's workspaces") {
			found = true
			continue
		}
		t.Errorf("unexpected violation: %s", v)
	}
	if !found {
		t.Fatalf("the matrix did not report the unscoped route %s", leak)
	}
}

// doAs sends a request with key.
func (h *harness) doAs(key, method, path string, body any) response {
	h.t.Helper()
	return h.do(method, path, body, "Authorization", "Bearer "+key)
}

// TestSharedProviders: only an admin shares a provider; every tenant then
// sees it without its config and builds templates on it; only its owner
// changes it.
func TestSharedProviders(t *testing.T) {
	h := tenancyHarness(t)
	ctx := context.Background()
	for _, id := range []string{tenantA, tenantB} {
		if err := h.store.CreateTenant(ctx, &wire.Tenant{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	memberA := h.newKey(tenantA, wire.RoleMember)
	memberB := h.newKey(tenantB, wire.RoleMember)
	cfg := fmt.Sprintf(`"config":{"root_path":%q}`, filepath.Join(h.dir, "shared"))

	h.doAs(memberA, "POST", "/v1/providers", `{"id":"a-prov","provider":"container",`+cfg+`,"shared":true}`).
		expectError(t, 403, "forbidden", "", "only an admin may share")
	h.doAs(memberA, "POST", "/v1/providers", `{"id":"a-host","provider":"local",`+cfg+`}`).
		expectError(t, 403, "forbidden", "", "runs code on the Primer host")
	var own wire.Provider
	h.doAs(memberA, "POST", "/v1/providers", `{"id":"a-prov","provider":"container",`+cfg+`}`).expect(t, 201).decode(t, &own)
	if own.TenantID != tenantA || own.Shared {
		t.Fatalf("member's provider = %+v, want tenant %s, not shared", own, tenantA)
	}
	h.doAs(memberB, "GET", "/v1/providers/a-prov", nil).expectError(t, 404, "not_found", "", "provider a-prov: not found")

	// The admin shares it: B sees it, without config, and builds on it.
	h.do("PUT", "/v1/providers/a-prov", `{"provider":"container",`+cfg+`,"shared":true}`).expect(t, 200)
	var seen map[string]any
	h.doAs(memberB, "GET", "/v1/providers/a-prov", nil).expect(t, 200).decode(t, &seen)
	if seen["config"] != nil || seen["shared"] != true {
		t.Fatalf("tenant B sees the shared provider as %v; want shared, config null", seen)
	}
	var listed struct{ Items []map[string]any }
	h.doAs(memberB, "GET", "/v1/providers", nil).expect(t, 200).decode(t, &listed)
	if len(listed.Items) != 1 || listed.Items[0]["id"] != "a-prov" || listed.Items[0]["config"] != nil {
		t.Fatalf("tenant B's providers = %v; want only a-prov, config null", listed.Items)
	}
	h.doAs(memberA, "GET", "/v1/providers/a-prov", nil).expect(t, 200).decode(t, &seen)
	if seen["config"] == nil {
		t.Fatalf("the owner sees no config: %v", seen)
	}
	// An admin's shared local provider: B sees it but, being on the host,
	// may not build a template on it (templates_rules_test.go has the rest).
	h.do("POST", "/v1/providers", `{"id":"shared-local","provider":"local",`+cfg+`,"shared":true}`).expect(t, 201)
	h.doAs(memberB, "POST", "/v1/templates", `{"id":"b-tmpl","provider_id":"shared-local","backend":{"kind":"local"}}`).
		expectError(t, 403, "forbidden", "spec.provider_id", "runs code on the Primer host")
	h.doAs(memberB, "PUT", "/v1/providers/a-prov", `{"provider":"container",`+cfg+`}`).
		expectError(t, 403, "forbidden", "", "only its owner")
	h.doAs(memberB, "DELETE", "/v1/providers/a-prov", nil).expectError(t, 403, "forbidden", "", "only its owner")
	// Shared means read-only: its owner tenant's members may neither
	// change nor delete it (an admin's providers live in the default
	// tenant, whose members must not repoint them).
	h.doAs(memberA, "PUT", "/v1/providers/a-prov", `{"provider":"container",`+cfg+`}`).
		expectError(t, 403, "forbidden", "", "provider a-prov: shared; only an admin may change it")
	h.doAs(memberA, "DELETE", "/v1/providers/a-prov", nil).
		expectError(t, 403, "forbidden", "", "provider a-prov: shared; only an admin may delete it")
	// An admin's update keeps it shared (absent shared: unchanged).
	h.do("PUT", "/v1/providers/a-prov", `{"provider":"container",`+cfg+`}`).expect(t, 200).decode(t, &seen)
	if seen["shared"] != true {
		t.Fatalf("admin's update unshared the provider: %v", seen)
	}
}

// TestHostBackendsAdminOnly: a member may not create workspaces, pools,
// leases or suites on a local (host) template, even its own tenant's.
func TestHostBackendsAdminOnly(t *testing.T) {
	h := tenancyHarness(t)
	ctx := context.Background()
	if err := h.store.CreateTenant(ctx, &wire.Tenant{ID: tenantB}); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(h.store.CreateProvider(ctx, &wire.Provider{ID: "b-host", TenantID: tenantB, Provider: wire.BackendLocal,
		Config: json.RawMessage(`{"root_path":"/tmp/b-host"}`)}))
	must(h.store.CreateTemplate(ctx, &wire.Template{ID: "b-host", TenantID: tenantB, ProviderID: "b-host",
		Backend: json.RawMessage(`{"kind":"local"}`)}))
	must(h.store.CreatePool(ctx, &wire.Pool{ID: "b-host", TenantID: tenantB, TemplateID: "b-host", Size: 1}))
	member := h.newKey(tenantB, wire.RoleMember)
	tests := []struct{ name, method, path, body string }{
		{"workspace", "POST", "/v1/workspaces", `{"template_id":"b-host"}`},
		{"pool", "POST", "/v1/pools", `{"id":"b-pool","template_id":"b-host"}`},
		{"lease", "POST", "/v1/pools/b-host/lease", `{}`},
		{"suite on template", "POST", "/v1/suites", `{"id":"s","template_id":"b-host","cases":[{"id":"a","command":"true"}]}`},
		{"suite on pool", "POST", "/v1/suites", `{"id":"s","pool_id":"b-host","cases":[{"id":"a","command":"true"}]}`},
		{"provider", "PUT", "/v1/providers/b-host", `{"provider":"local","config":{"root_path":"/tmp/b-host"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.doAs(member, tt.method, tt.path, tt.body).expectError(t, 403, "forbidden", "", "runs code on the Primer host")
		})
	}
	ws, err := h.store.ListWorkspaces(ctx, models.WorkspaceFilter{})
	must(err)
	if len(ws) != 0 {
		t.Fatalf("refused requests left %d workspaces", len(ws))
	}
}

// TestTenantCreatesAndLists: a member's creates land in its tenant, and
// its lists hold only its tenant's rows while an admin's hold all.
func TestTenantCreatesAndLists(t *testing.T) {
	h := tenancyHarness(t)
	ctx := context.Background()
	for _, id := range []string{tenantA, tenantB} {
		if err := h.store.CreateTenant(ctx, &wire.Tenant{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	memberB := h.newKey(tenantB, wire.RoleMember)
	wsA := tenantAWorkspace(h)
	var p wire.Provider
	h.doAs(memberB, "POST", "/v1/providers", `{"id":"b-prov","provider":"container","config":{"root_path":"/tmp/b"}}`).
		expect(t, 201).decode(t, &p)
	if p.TenantID != tenantB {
		t.Fatalf("provider tenant %q, want %s", p.TenantID, tenantB)
	}
	var lb, la struct{ Items []wire.Workspace }
	h.doAs(memberB, "GET", "/v1/workspaces", nil).expect(t, 200).decode(t, &lb)
	if len(lb.Items) != 0 {
		t.Fatalf("tenant B lists %d workspaces, want 0", len(lb.Items))
	}
	h.do("GET", "/v1/workspaces", nil).expect(t, 200).decode(t, &la)
	if len(la.Items) != 1 || la.Items[0].ID != wsA {
		t.Fatalf("admin lists %v, want [%s]", la.Items, wsA)
	}
	h.do("GET", "/v1/workspaces?tenant="+tenantB, nil).expect(t, 200).decode(t, &la)
	if len(la.Items) != 0 {
		t.Fatalf("admin's ?tenant=%s lists %d workspaces, want 0", tenantB, len(la.Items))
	}

	// The events across workspaces (GET /v1/events) follow the same rule.
	if err := h.store.AppendEvent(ctx, &wire.Event{WorkspaceID: wsA, Type: wire.EventPhaseChanged, Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key, query string
		want       int
	}{{memberB, "", 0}, {h.adminKey, "", 1}, {h.adminKey, "?tenant=" + tenantB, 0}, {h.adminKey, "?tenant=" + tenantA, 1}} {
		var le struct {
			Items    []wire.Event
			LatestID uint64 `json:"latest_id"`
		}
		h.doAs(tc.key, "GET", "/v1/events"+tc.query, nil).expect(t, 200).decode(t, &le)
		if len(le.Items) != tc.want || (tc.want == 0) != (le.LatestID == 0) {
			t.Errorf("events%s: %d, latest %d; want %d", tc.query, len(le.Items), le.LatestID, tc.want)
		}
	}
}

// tenantAWorkspace stores one workspace row of tenant A and returns its id.
func tenantAWorkspace(h *harness) string {
	w := &wire.Workspace{ID: models.NewID("ws"), TenantID: tenantA, TemplateID: wire.DefaultTemplateID,
		ProviderID: wire.LocalProviderID, Backend: wire.BackendLocal, Phase: wire.PhaseRunning}
	if err := h.store.CreateWorkspace(context.Background(), w); err != nil {
		h.t.Fatal(err)
	}
	return w.ID
}
