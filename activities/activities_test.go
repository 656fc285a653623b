package activities

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.temporal.io/sdk/temporal"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/wire"
)

// rig is a real Store on SQLite and a memory backend with real runtimes.
type rig struct {
	a     *Activities
	store *models.Store
	mem   *memory.Backend
	m     *metrics.Metrics
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store, err := models.Open(ctx, models.Config{SQLitePath: filepath.Join(dir, "primer.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	host := local.NewHost(nil)
	t.Cleanup(func() { _ = host.Close() })
	mem := memory.New(host, filepath.Join(dir, "sandboxes"))
	reg := backend.NewRegistry(map[string]backend.Factory{memory.Type: mem.Factory()})
	pool := client.NewPool()
	t.Cleanup(pool.Close)
	m := metrics.New()
	a := &Activities{
		Store:        store,
		Backends:     reg,
		Connector:    &connector.Connector{Store: store, Backends: reg, Pool: pool},
		Metrics:      m,
		ProbeTimeout: 2 * time.Second,
		RuntimeWait:  3 * time.Second,
		// The test model servers and webhook receivers listen on 127.0.0.1.
		Outbound: loopbackPolicy(t),
	}
	if err := store.CreateProvider(ctx, &wire.Provider{ID: "mem", Provider: memory.Type, Config: json.RawMessage(`{"kind":"memory"}`)}); err != nil {
		t.Fatal(err)
	}
	return &rig{a: a, store: store, mem: mem, m: m}
}

// workspace creates a template with the given backend document and a
// pending workspace from it.
func (r *rig) workspace(t *testing.T, id, tmplDoc string) *wire.Workspace {
	t.Helper()
	ctx := context.Background()
	tmplID := "tmpl-" + id
	if err := r.store.CreateTemplate(ctx, &wire.Template{ID: tmplID, ProviderID: "mem", Backend: json.RawMessage(tmplDoc)}); err != nil {
		t.Fatal(err)
	}
	ws := &wire.Workspace{ID: id, TemplateID: tmplID, ProviderID: "mem", Backend: memory.Type, Phase: wire.PhasePending}
	if err := r.store.CreateWorkspace(ctx, ws); err != nil {
		t.Fatal(err)
	}
	return ws
}

func (r *rig) events(t *testing.T, id string) []wire.Event {
	t.Helper()
	evs, err := r.store.ListEvents(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func eventData(t *testing.T, e wire.Event) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("event %s data %s: %v", e.Type, e.Data, err)
	}
	return d
}

// noSecret fails if token appears in any stored event of the workspace.
func (r *rig) noSecret(t *testing.T, id, token string) {
	t.Helper()
	if token == "" {
		t.Fatal("no token to look for")
	}
	for _, e := range r.events(t, id) {
		if strings.Contains(string(e.Data), token) {
			t.Errorf("event %s carries the runtime token: %s", e.Type, e.Data)
		}
	}
}

func counter(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func summary(t *testing.T, s interface{ Write(*dto.Metric) error }) (count uint64, sum float64) {
	t.Helper()
	var m dto.Metric
	if err := s.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetSummary().GetSampleCount(), m.GetSummary().GetSampleSum()
}

// appError asserts err is a Temporal application error of the given type
// and retryability.
func appError(t *testing.T, err error, wantType string, wantRetryable bool) *temporal.ApplicationError {
	t.Helper()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an application error", err, err)
	}
	if ae.Type() != wantType || ae.NonRetryable() == wantRetryable {
		t.Errorf("error type %q retryable %v, want %q retryable %v: %v", ae.Type(), !ae.NonRetryable(), wantType, wantRetryable, err)
	}
	return ae
}

const fullTemplate = `{"kind":"memory",
	"env":{"GREETING":"hello from env"},
	"files":{"hello.txt":"hi\n","conf/app.toml":"x = 1\n"},
	"config_toml":"[model]\nname = \"m1\"\n",
	"init":["echo \"$GREETING\" > init.out","mkdir -p made && cat hello.txt > made/copy.txt","cat harness.toml > made/harness.copy"]}`

func TestProvision(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.workspace(t, "ws-prov", fullTemplate)

	out, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-prov"})
	if err != nil {
		t.Fatal(err)
	}
	h := out.Handle
	if h.Backend != memory.Type || h.WorkspaceID != "ws-prov" || h.Path == "" {
		t.Fatalf("handle = %+v", h)
	}
	ws, err := r.store.GetWorkspace(ctx, "ws-prov")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws.RuntimeToken) != 64 {
		t.Errorf("stored token has %d characters, want 64", len(ws.RuntimeToken))
	}
	if ws.Path != h.Path {
		t.Errorf("row path = %q, want %q", ws.Path, h.Path)
	}
	var stored backend.Handle
	if err := json.Unmarshal(ws.Handle, &stored); err != nil || stored.Path != h.Path || stored.Backend != h.Backend {
		t.Errorf("row handle = %s (%v)", ws.Handle, err)
	}

	// Files written and init run, in order, with the template's env.
	for rel, want := range map[string]string{
		"hello.txt":     "hi\n",
		"conf/app.toml": "x = 1\n",
		"init.out":      "hello from env\n",
		"made/copy.txt": "hi\n",
		// config_toml, written before init runs.
		"harness.toml":      "[model]\nname = \"m1\"\n",
		"made/harness.copy": "[model]\nname = \"m1\"\n",
	} {
		got, err := os.ReadFile(filepath.Join(h.Path, rel))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", rel, got, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(h.Path, "harness.toml")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("harness.toml: %v (%v), want mode 0600", fi.Mode(), err)
	}

	evs := r.events(t, "ws-prov")
	if len(evs) != 1 || evs[0].Type != wire.EventProvisioned {
		t.Fatalf("events = %+v", evs)
	}
	d := eventData(t, evs[0])
	if d["workspace_type"] != memory.Type || d["workspace_path"] != h.Path || len(d) != 2 {
		t.Errorf("provisioned data = %v", d)
	}
	r.noSecret(t, "ws-prov", ws.RuntimeToken)

	// A retry (the activity ran but its result was lost) keeps the token
	// and finds the same sandbox.
	out2, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-prov"})
	if err != nil {
		t.Fatal(err)
	}
	ws2, _ := r.store.GetWorkspace(ctx, "ws-prov")
	if ws2.RuntimeToken != ws.RuntimeToken || out2.Handle.Path != h.Path {
		t.Errorf("retry changed token or handle: %+v", out2.Handle)
	}
	if r.mem.Count() != 1 {
		t.Errorf("sandboxes = %d, want 1", r.mem.Count())
	}
}

func TestProvisionFailures(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name          string
		tmpl          string
		failProvision error
		workspaceID   string // default: the created workspace
		wantType      string
		wantRetryable bool
		wantInMessage []string
		// wantNotInMessage is a secret the message must not carry.
		wantNotInMessage string
	}{
		{
			name:          "init command exits non-zero",
			tmpl:          `{"kind":"memory","init":["true","echo oops-on-stderr >&2; exit 3"]}`,
			wantType:      "invalid",
			wantInMessage: []string{"init[1]", "exit status 3", "oops-on-stderr"},
		},
		{
			name:          "backend unavailable is retried",
			tmpl:          `{"kind":"memory"}`,
			failProvision: errs.E(errs.Unavailable, "daemon down"),
			wantType:      "unavailable",
			wantRetryable: true,
			wantInMessage: []string{"daemon down"},
		},
		{
			// Refused by the API; a template stored before the check, or
			// by hand, is refused again here.
			name:             "config_toml holds an env value",
			tmpl:             `{"kind":"memory","env":{"API_KEY":"sk-test-0123"},"config_toml":"[model]\napi_key = \"sk-test-0123\"\n"}`,
			wantType:         "invalid",
			wantInMessage:    []string{"config_toml", "model.api_key", "env API_KEY"},
			wantNotInMessage: "sk-test-0123",
		},
		{
			name:          "bad template document",
			tmpl:          `{"kind":"memory","bogus":1}`,
			wantType:      "invalid",
			wantInMessage: []string{"bogus"},
		},
		{
			name:          "unknown workspace",
			tmpl:          `{"kind":"memory"}`,
			workspaceID:   "ws-nope",
			wantType:      "not_found",
			wantInMessage: []string{"ws-nope"},
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			id := "ws-fail" + string(rune('a'+i))
			r.workspace(t, id, tc.tmpl)
			r.mem.FailProvision(tc.failProvision)
			target := id
			if tc.workspaceID != "" {
				target = tc.workspaceID
			}
			_, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: target})
			if err == nil {
				t.Fatal("provision succeeded")
			}
			ae := appError(t, err, tc.wantType, tc.wantRetryable)
			for _, s := range tc.wantInMessage {
				if !strings.Contains(ae.Message(), s) {
					t.Errorf("message %q lacks %q", ae.Message(), s)
				}
			}
			if tc.wantNotInMessage != "" && strings.Contains(ae.Message(), tc.wantNotInMessage) {
				t.Errorf("message %q carries a secret", ae.Message())
			}
			ws, gerr := r.store.GetWorkspace(ctx, id)
			if gerr != nil {
				t.Fatal(gerr)
			}
			if target == id {
				// The token is stored before the backend is asked, so a
				// retry starts the runtime with the same one.
				if ws.RuntimeToken == "" {
					t.Error("no token stored before provisioning")
				} else if strings.Contains(ae.Message(), ws.RuntimeToken) {
					t.Error("error carries the runtime token")
				}
			}
			for _, e := range r.events(t, id) {
				if e.Type == wire.EventProvisioned {
					t.Error("provisioned event recorded for a failed provisioning")
				}
			}
		})
	}
}

// A provisioning that failed at the backend keeps its token for the retry.
func TestProvisionRetryReusesToken(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.workspace(t, "ws-retry", `{"kind":"memory"}`)
	r.mem.FailProvision(errs.E(errs.Unavailable, "not yet"))
	if _, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-retry"}); err == nil {
		t.Fatal("provision succeeded")
	}
	before, _ := r.store.GetWorkspace(ctx, "ws-retry")
	r.mem.FailProvision(nil)
	if _, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-retry"}); err != nil {
		t.Fatal(err)
	}
	after, _ := r.store.GetWorkspace(ctx, "ws-retry")
	if before.RuntimeToken == "" || after.RuntimeToken != before.RuntimeToken {
		t.Errorf("token changed across the retry")
	}
	// The runtime really accepts the stored token.
	cl, err := r.a.Connector.Client(ctx, after)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestProbe(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.workspace(t, "ws-probe", `{"kind":"memory"}`)
	out, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-probe"})
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := r.store.GetWorkspace(ctx, "ws-probe")

	probe := func(scheduled time.Time) ProbeOutput {
		t.Helper()
		res, err := r.a.Probe(ctx, ProbeInput{WorkspaceID: "ws-probe", Handle: out.Handle, ScheduledAt: scheduled})
		if err != nil {
			t.Fatalf("probe returned an error: %v", err)
		}
		return res
	}

	if res := probe(time.Now().Add(-2 * time.Second)); !res.Hit || res.Reason != "" {
		t.Fatalf("probe of a live runtime = %+v", res)
	}
	if n, sum := summary(t, r.m.ProbeLateness); n != 1 || sum < 2 || sum > 10 {
		t.Errorf("lateness: %d samples, sum %.3f s; want 1 sample of about 2 s", n, sum)
	}

	r.mem.Kill("ws-probe")
	start := time.Now()
	res := probe(time.Now())
	if res.Hit || res.Reason == "" {
		t.Fatalf("probe of a killed runtime = %+v", res)
	}
	if !strings.Contains(res.Reason, "runtime") {
		t.Errorf("miss reason %q does not say what failed", res.Reason)
	}
	if strings.Contains(res.Reason, ws.RuntimeToken) {
		t.Error("miss reason carries the token")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a miss took %s, more than the probe timeout", d)
	}

	if err := r.mem.Revive("ws-probe"); err != nil {
		t.Fatal(err)
	}
	if res := probe(time.Now()); !res.Hit {
		t.Fatalf("probe after revive = %+v", res)
	}

	if hits, misses := counter(t, r.m.Probes.WithLabelValues("hit")), counter(t, r.m.Probes.WithLabelValues("miss")); hits != 2 || misses != 1 {
		t.Errorf("probes counted hit=%v miss=%v, want 2 and 1", hits, misses)
	}
	if n, _ := summary(t, r.m.ProbeDuration); n != 3 {
		t.Errorf("probe durations observed = %d, want 3", n)
	}

	// A deleted workspace is a miss with a reason, not an error.
	if res, err := r.a.Probe(ctx, ProbeInput{WorkspaceID: "ws-gone"}); err != nil || res.Hit || !strings.Contains(res.Reason, "not found") {
		t.Errorf("probe of an unknown workspace = %+v, %v", res, err)
	}
}

func TestSetPhase(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.workspace(t, "ws-phase", `{"kind":"memory"}`)
	open1 := &wire.Session{WorkspaceID: "ws-phase", Agent: "a1"}
	open2 := &wire.Session{WorkspaceID: "ws-phase", Agent: "a2"}
	ended := &wire.Session{WorkspaceID: "ws-phase", Agent: "a3"}
	for _, s := range []*wire.Session{open1, open2, ended} {
		if err := r.store.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.store.EndSession(ctx, ended.ID, wire.ReasonEndedByUser); err != nil {
		t.Fatal(err)
	}

	// running keeps sessions open.
	if _, err := r.a.SetPhase(ctx, SetPhaseInput{WorkspaceID: "ws-phase", From: "pending", To: "running", Reason: "runtime answered"}); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.store.GetSession(ctx, open1.ID); s.Status != wire.SessionOpen {
		t.Errorf("running ended a session: %+v", s)
	}

	if _, err := r.a.SetPhase(ctx, SetPhaseInput{WorkspaceID: "ws-phase", From: "running", To: "failed", Reason: "runtime ping: refused"}); err != nil {
		t.Fatal(err)
	}
	ws, _ := r.store.GetWorkspace(ctx, "ws-phase")
	if ws.Phase != wire.PhaseFailed || ws.Reason != "runtime ping: refused" {
		t.Errorf("row phase = %q reason = %q", ws.Phase, ws.Reason)
	}
	for _, tc := range []struct {
		id, status, reason string
	}{
		{open1.ID, wire.SessionEnded, wire.ReasonWorkspaceLost},
		{open2.ID, wire.SessionEnded, wire.ReasonWorkspaceLost},
		{ended.ID, wire.SessionEnded, wire.ReasonEndedByUser},
	} {
		s, err := r.store.GetSession(ctx, tc.id)
		if err != nil || s.Status != tc.status || s.EndReason != tc.reason {
			t.Errorf("session %s = %+v (%v), want %s/%s", tc.id, s, err, tc.status, tc.reason)
		}
	}

	evs := r.events(t, "ws-phase")
	if len(evs) != 2 {
		t.Fatalf("events = %d, want 2", len(evs))
	}
	d := eventData(t, evs[1])
	if evs[1].Type != wire.EventPhaseChanged || d["from"] != "running" || d["to"] != "failed" || d["reason"] != "runtime ping: refused" {
		t.Errorf("phase_changed = %s %v", evs[1].Type, d)
	}
	if v := counter(t, r.m.PhaseChanges.WithLabelValues("failed")); v != 1 {
		t.Errorf("phase changes to failed = %v", v)
	}

	_, err := r.a.SetPhase(ctx, SetPhaseInput{WorkspaceID: "ws-none", From: "running", To: "failed"})
	appError(t, err, "not_found", false)
}

func TestRecordEvent(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.workspace(t, "ws-ev", `{"kind":"memory"}`)
	out, err := r.a.RecordEvent(ctx, RecordEventInput{WorkspaceID: "ws-ev", Type: wire.EventProvisionFailed,
		Data: map[string]any{"workspace_type": "memory", "error": "boom"}})
	if err != nil || out.EventID == 0 {
		t.Fatalf("record = %+v, %v", out, err)
	}
	evs := r.events(t, "ws-ev")
	if len(evs) != 1 || evs[0].ID != out.EventID || eventData(t, evs[0])["error"] != "boom" {
		t.Errorf("events = %+v", evs)
	}
	_, err = r.a.RecordEvent(ctx, RecordEventInput{WorkspaceID: "ws-ev"})
	appError(t, err, "invalid", false)
}

func TestDestroy(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.workspace(t, "ws-d", fullTemplate)
	prov, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-d"})
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := r.store.GetWorkspace(ctx, "ws-d")
	ses := &wire.Session{WorkspaceID: "ws-d"}
	if err := r.store.CreateSession(ctx, ses); err != nil {
		t.Fatal(err)
	}
	// A pooled connection exists and must not outlive the workspace.
	cl, err := r.a.Connector.Client(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}

	// No handle in the input: the row's handle is used.
	out, err := r.a.Destroy(ctx, DestroyInput{WorkspaceID: "ws-d"})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Destroyed || out.Path != prov.Handle.Path {
		t.Errorf("destroy = %+v", out)
	}
	if r.mem.Provisioned("ws-d") {
		t.Error("sandbox still exists")
	}
	if _, err := os.Stat(prov.Handle.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("workspace directory still there: %v", err)
	}
	if _, err := r.store.GetWorkspace(ctx, "ws-d"); !errs.Is(err, errs.NotFound) {
		t.Errorf("row after destroy: %v", err)
	}
	if s, _ := r.store.GetSession(ctx, ses.ID); s == nil || s.Status != wire.SessionEnded || s.EndReason != wire.ReasonWorkspaceDeleted {
		t.Errorf("session after destroy = %+v", s)
	}
	select {
	case <-cl.Done():
	case <-time.After(2 * time.Second):
		t.Error("pooled runtime connection still open after destroy")
	}

	evs := r.events(t, "ws-d")
	last := evs[len(evs)-1]
	d := eventData(t, last)
	if last.Type != wire.EventDestroyed || d["workspace_type"] != memory.Type || d["workspace_path"] != prov.Handle.Path {
		t.Errorf("destroyed event = %s %v", last.Type, d)
	}
	if _, ok := d["error"]; ok {
		t.Errorf("successful destroy recorded an error: %v", d)
	}
	r.noSecret(t, "ws-d", ws.RuntimeToken)

	// Idempotent: a second call (a retry after a lost result) is fine and
	// records nothing more.
	if _, err := r.a.Destroy(ctx, DestroyInput{WorkspaceID: "ws-d", Handle: &prov.Handle}); err != nil {
		t.Fatalf("second destroy: %v", err)
	}
	if n := len(r.events(t, "ws-d")); n != len(evs) {
		t.Errorf("second destroy recorded %d more events", n-len(evs))
	}
}

func TestDestroyVariants(t *testing.T) {
	ctx := context.Background()

	t.Run("never provisioned: nothing on the backend, row deleted", func(t *testing.T) {
		r := newRig(t)
		r.workspace(t, "ws-new", `{"kind":"memory"}`)
		out, err := r.a.Destroy(ctx, DestroyInput{WorkspaceID: "ws-new"})
		if err != nil || out.Destroyed {
			t.Fatalf("destroy = %+v, %v", out, err)
		}
		if _, err := r.store.GetWorkspace(ctx, "ws-new"); !errs.Is(err, errs.NotFound) {
			t.Errorf("row: %v", err)
		}
		evs := r.events(t, "ws-new")
		if len(evs) != 1 || evs[0].Type != wire.EventDestroyed {
			t.Errorf("events = %+v", evs)
		}
	})

	t.Run("keep row: backend cleaned, row and events untouched", func(t *testing.T) {
		r := newRig(t)
		r.workspace(t, "ws-keep", `{"kind":"memory","init":["exit 1"]}`)
		if _, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-keep"}); err == nil {
			t.Fatal("provision with a failing init succeeded")
		}
		if !r.mem.Provisioned("ws-keep") {
			t.Fatal("the failed provisioning left no sandbox to clean up")
		}
		out, err := r.a.Destroy(ctx, DestroyInput{WorkspaceID: "ws-keep", KeepRow: true})
		if err != nil || !out.Destroyed {
			t.Fatalf("destroy = %+v, %v", out, err)
		}
		if r.mem.Provisioned("ws-keep") {
			t.Error("sandbox left behind")
		}
		if _, err := r.store.GetWorkspace(ctx, "ws-keep"); err != nil {
			t.Errorf("row gone: %v", err)
		}
		if evs := r.events(t, "ws-keep"); len(evs) != 0 {
			t.Errorf("events = %+v", evs)
		}
	})

	t.Run("backend failure: error event on the last attempt, row kept", func(t *testing.T) {
		r := newRig(t)
		r.workspace(t, "ws-stuck", `{"kind":"memory"}`)
		if _, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-stuck"}); err != nil {
			t.Fatal(err)
		}
		ws, _ := r.store.GetWorkspace(ctx, "ws-stuck")
		r.mem.FailDestroy(errs.E(errs.Unavailable, "device busy"))
		_, err := r.a.Destroy(ctx, DestroyInput{WorkspaceID: "ws-stuck"})
		appError(t, err, "unavailable", true)
		if _, err := r.store.GetWorkspace(ctx, "ws-stuck"); err != nil {
			t.Errorf("row deleted although destroy failed: %v", err)
		}
		evs := r.events(t, "ws-stuck")
		last := evs[len(evs)-1]
		d := eventData(t, last)
		if last.Type != wire.EventDestroyed || !strings.Contains(d["error"].(string), "device busy") || d["workspace_type"] != memory.Type {
			t.Errorf("destroyed event = %s %v", last.Type, d)
		}
		r.noSecret(t, "ws-stuck", ws.RuntimeToken)

		r.mem.FailDestroy(nil)
		if _, err := r.a.Destroy(ctx, DestroyInput{WorkspaceID: "ws-stuck"}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.store.GetWorkspace(ctx, "ws-stuck"); !errs.Is(err, errs.NotFound) {
			t.Errorf("row after the successful retry: %v", err)
		}
	})
}

func TestConnector(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ws := r.workspace(t, "ws-conn", `{"kind":"memory"}`)
	if _, err := r.a.Connector.Client(ctx, ws); !errs.Is(err, errs.Precondition) {
		t.Errorf("client of an unprovisioned workspace: %v, want precondition", err)
	}
	if _, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-conn"}); err != nil {
		t.Fatal(err)
	}
	ws, _ = r.store.GetWorkspace(ctx, "ws-conn")
	c1, err := r.a.Connector.Client(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := r.a.Connector.Client(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 {
		t.Error("two calls made two connections; the pool should share one")
	}
	if err := c1.WriteFile(ctx, "a.txt", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := c2.ReadFile(ctx, "a.txt")
	if err != nil || string(got) != "x" {
		t.Errorf("read back %q, %v", got, err)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err           error
		wantType      string
		wantRetryable bool
	}{
		{errs.E(errs.Invalid, "bad"), "invalid", false},
		{errs.E(errs.NotFound, "gone"), "not_found", false},
		{errs.E(errs.Forbidden, "no"), "forbidden", false},
		{errs.E(errs.Unavailable, "down"), "unavailable", true},
		{errs.E(errs.Conflict, "busy"), "conflict", true},
		{errors.New("plain"), "internal", true},
	}
	for _, tc := range tests {
		appError(t, Classify(tc.err), tc.wantType, tc.wantRetryable)
	}
	if Classify(nil) != nil {
		t.Error("Classify(nil) != nil")
	}
}

// loopbackPolicy allowlists 127.0.0.1, where the tests' fake servers listen.
func loopbackPolicy(t *testing.T) *outbound.Policy {
	t.Helper()
	p, err := outbound.Parse("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return p
}
