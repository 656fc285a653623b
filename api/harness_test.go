package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/starter"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// harness is one API server over a real SQLite store, a real backend
// registry with the local backend, and a mocked Temporal client.
type harness struct {
	t        *testing.T
	dir      string // the test's temp dir; the local provider's root is dir/workspaces
	root     string
	store    *models.Store
	temporal *mocks.Client
	backends *backend.Registry
	metrics  *metrics.Metrics
	srv      *server
	engine   *gin.Engine
	url      string
	// adminKey is an admin key of the default tenant, sent by do unless
	// the request names its own Authorization header.
	adminKey string
	// checked is do's HTTP client: every answer is checked against the
	// OpenAPI document (openapi_check_test.go); made on first use, under
	// checkedMu (tests call do from many goroutines at once).
	checkedMu sync.Mutex
	checked   *http.Client
}

type harnessOpt func(*Config)

func newHarness(t *testing.T, opts ...harnessOpt) *harness {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store, err := models.Open(ctx, models.Config{SQLitePath: filepath.Join(dir, "primer.db")})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	root := filepath.Join(dir, "workspaces")
	if err := store.EnsureDefaults(ctx, root); err != nil {
		t.Fatalf("ensure defaults: %v", err)
	}
	host := local.NewHost(nil)
	t.Cleanup(func() { _ = host.Close() })
	reg := backend.NewRegistry(map[string]backend.Factory{wire.BackendLocal: local.Factory(host, nil)})
	pool := client.NewPool()
	t.Cleanup(pool.Close)
	m := metrics.New()
	tc := mocks.NewClient(t)
	cfg := Config{
		Store:        store,
		Temporal:     tc,
		Starter:      &starter.Starter{Temporal: tc, Store: store, ProbeInterval: 7 * time.Second},
		Connector:    &connector.Connector{Store: store, Backends: reg, Pool: pool},
		Backends:     reg,
		Metrics:      m,
		MaxFileBytes: 64 << 10,
		// The model providers the tests write name these two loopback
		// ports (nothing listens); every other internal address is refused.
		Outbound: testOutbound,
	}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := newServer(cfg)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	s.eventPoll = 20 * time.Millisecond
	// Generous: the route matrix sends hundreds of bad keys from one
	// address; ratelimit_test.go sets tight limits of its own.
	s.authFails = newFailLimiter(1<<20, 1<<20)
	// Work left running after a response (pool wake-ups, lease events)
	// must end before the mocks are checked and the store is closed.
	t.Cleanup(s.bg.Wait)
	engine := s.routes().(*gin.Engine)
	ts := httptest.NewServer(engine)
	t.Cleanup(ts.Close)
	h := &harness{t: t, dir: dir, root: root, store: store, temporal: tc, backends: reg, metrics: m,
		srv: s, engine: engine, url: ts.URL}
	h.adminKey = h.newKey(wire.DefaultTenantID, wire.RoleAdmin)
	return h
}

// newKey stores a fresh key of tenant with role and returns it.
func (h *harness) newKey(tenant, role string) string {
	h.t.Helper()
	id, key, hash := models.NewAPIKey()
	if err := h.store.CreateAPIKey(context.Background(), &wire.APIKey{ID: id, TenantID: tenant, Role: role, Hash: hash}); err != nil {
		h.t.Fatalf("create api key: %v", err)
	}
	return key
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request. body is sent as is when it is a string, []byte or
// io.Reader, and as JSON otherwise; nil sends none.
func (h *harness) do(method, path string, body any, header ...string) response {
	h.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	case io.Reader:
		r = b
	default:
		data, err := json.Marshal(b)
		if err != nil {
			h.t.Fatalf("marshal body: %v", err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, h.url+path, r)
	if err != nil {
		h.t.Fatalf("new request: %v", err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if _, named := req.Header["Authorization"]; !named {
		req.Header.Set("Authorization", "Bearer "+h.adminKey)
	}
	res, err := h.http().Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

// decode unmarshals the body into v, failing the test on error.
func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
}

// envelope returns the error envelope of the response, failing the test if
// the body is not one.
func (r response) envelope(t *testing.T) wire.ErrorBody {
	t.Helper()
	var env struct {
		Error *wire.ErrorBody `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || env.Error == nil || env.Error.Code == "" || env.Error.Message == "" {
		t.Fatalf("status %d: body %q is not an error envelope (err %v)", r.status, r.body, err)
	}
	return *env.Error
}

// expectError checks status, code and (when not empty) the field and a
// message fragment.
func (r response) expectError(t *testing.T, status int, code, field, msg string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	e := r.envelope(t)
	if e.Code != code {
		t.Fatalf("code %q, want %q; body %s", e.Code, code, r.body)
	}
	if field != "" && e.Details["field"] != field {
		t.Fatalf("field %q, want %q; body %s", e.Details["field"], field, r.body)
	}
	if msg != "" && !strings.Contains(e.Message, msg) {
		t.Fatalf("message %q does not contain %q", e.Message, msg)
	}
}

// expect checks a success status.
func (r response) expect(t *testing.T, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	return r
}

// workspace inserts a workspace row on the default template in phase.
func (h *harness) workspace(phase string) *wire.Workspace {
	h.t.Helper()
	id := models.NewID("ws")
	w := &wire.Workspace{
		ID: id, TemplateID: wire.DefaultTemplateID, ProviderID: wire.LocalProviderID,
		Backend: wire.BackendLocal, Phase: phase, WorkflowID: workflows.WorkflowID(id),
	}
	if err := h.store.CreateWorkspace(context.Background(), w); err != nil {
		h.t.Fatalf("create workspace: %v", err)
	}
	return w
}

// runningWorkspace provisions a local workspace through the backend, as the
// workflow would, stores its runtime and marks it running. No Temporal is
// involved: files and exec only need the runtime.
func (h *harness) runningWorkspace() (*wire.Workspace, string) {
	h.t.Helper()
	ctx := context.Background()
	w := h.workspace(wire.PhasePending)
	p, err := h.store.GetProvider(ctx, wire.LocalProviderID)
	if err != nil {
		h.t.Fatal(err)
	}
	tmpl, err := h.store.GetTemplate(ctx, wire.DefaultTemplateID)
	if err != nil {
		h.t.Fatal(err)
	}
	b, err := h.backends.For(p)
	if err != nil {
		h.t.Fatal(err)
	}
	token := models.NewToken()
	handle, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: w.ID, Template: tmpl.Backend, Token: token})
	if err != nil {
		h.t.Fatalf("provision: %v", err)
	}
	h.t.Cleanup(func() { _ = b.Destroy(context.Background(), handle) })
	raw, err := json.Marshal(handle)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.store.SetWorkspaceRuntime(ctx, w.ID, raw, handle.Path, token); err != nil {
		h.t.Fatal(err)
	}
	if err := h.store.SetWorkspacePhase(ctx, w.ID, wire.PhaseRunning, ""); err != nil {
		h.t.Fatal(err)
	}
	w.Phase = wire.PhaseRunning
	return w, handle.Path
}

// testOutbound allowlists the loopback addresses the tests' model providers
// name (llm_test.go, tenancy_test.go, session_runs_test.go).
var testOutbound = func() *outbound.Policy {
	p, err := outbound.Parse("127.0.0.1:9,127.0.0.1:1")
	if err != nil {
		panic(err)
	}
	return p
}()
