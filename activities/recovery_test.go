package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	rtclient "github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/wire"
)

// Replace keeps the workspace's data, writes template files only where
// missing, runs init again, and mints a new token: the old one no longer
// reaches the replacement.
func TestReplaceKeepsDataWithNewToken(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.workspace(t, "ws-0a01", fullTemplate)
	out, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-0a01"})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := r.store.GetWorkspace(ctx, "ws-0a01")
	// The agent's work: a changed template file and a new one.
	if err := os.WriteFile(filepath.Join(out.Handle.Path, "hello.txt"), []byte("changed by the agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out.Handle.Path, "work.txt"), []byte("results\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(out.Handle.Path, "conf/app.toml")); err != nil {
		t.Fatal(err)
	}
	r.mem.Kill("ws-0a01")

	h := out.Handle
	rep, err := r.a.Replace(ctx, ReplaceInput{WorkspaceID: "ws-0a01", Handle: &h})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := r.store.GetWorkspace(ctx, "ws-0a01")
	if after.RuntimeToken == before.RuntimeToken || len(after.RuntimeToken) != 64 {
		t.Errorf("token not replaced")
	}
	if r.mem.Teardowns("ws-0a01") != 1 {
		t.Errorf("teardowns = %d, want 1", r.mem.Teardowns("ws-0a01"))
	}
	for rel, want := range map[string]string{
		"hello.txt":     "changed by the agent\n",   // kept: the workspace had it
		"work.txt":      "results\n",                // kept
		"conf/app.toml": "x = 1\n",                  // missing, so written again
		"init.out":      "hello from env\n",         // init ran again
		"harness.toml":  "[model]\nname = \"m1\"\n", // kept
	} {
		got, err := os.ReadFile(filepath.Join(rep.Handle.Path, rel))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", rel, got, err, want)
		}
	}
	// The replacement answers with the new token only.
	cl, err := r.a.Connector.Client(ctx, after)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Ping(ctx); err != nil {
		t.Errorf("ping replacement: %v", err)
	}
	// Whoever kept the old token (the old sandbox's processes) is refused
	// by the replacement's runtime.
	var h2 backend.Handle
	if err := json.Unmarshal(after.Handle, &h2); err != nil {
		t.Fatal(err)
	}
	ep, err := r.mem.Endpoint(ctx, h2, after.RuntimeToken)
	if err != nil {
		t.Fatal(err)
	}
	if old, err := rtclient.Dial(ctx, ep.URL, before.RuntimeToken); err == nil {
		if err := old.Ping(ctx); err == nil {
			t.Error("the old token still reaches the replacement")
		}
		old.Close()
	}
	r.a.Connector.Drop("ws-0a01")
	r.noSecret(t, "ws-0a01", after.RuntimeToken)
}

// A teardown that fails is the attempt's error, without the token.
func TestReplaceTeardownFailure(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.workspace(t, "ws-0a02", `{"kind":"memory"}`)
	if _, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-0a02"}); err != nil {
		t.Fatal(err)
	}
	r.mem.FailTeardown(errs.E(errs.Unavailable, "engine is down"))
	_, err := r.a.Replace(ctx, ReplaceInput{WorkspaceID: "ws-0a02"})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.NonRetryable() || !strings.Contains(appErr.Message(), "tear down: ") || !strings.Contains(appErr.Message(), "engine is down") {
		t.Fatalf("err = %v, want a retryable tear-down error", err)
	}
}

// Recovered resumes each session lost since the failure once, linked to
// the lost one, and says so in workspace.recovered.
func TestRecoveredResumesLostSessions(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.workspace(t, "ws-0a03", `{"kind":"memory"}`)
	var lost []string
	for _, agent := range []string{"a1", "a2"} {
		s := &wire.Session{WorkspaceID: "ws-0a03", Agent: agent, Metadata: map[string]string{"run": agent}}
		if err := r.store.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		lost = append(lost, s.ID)
	}
	failedAt := time.Now()
	if _, err := r.a.SetPhase(ctx, SetPhaseInput{WorkspaceID: "ws-0a03", From: "running", To: wire.PhaseFailed, Reason: "gone"}); err != nil {
		t.Fatal(err)
	}
	out, err := r.a.Recovered(ctx, RecoveredInput{WorkspaceID: "ws-0a03", Attempt: 1, LostSince: failedAt})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Sessions) != 2 {
		t.Fatalf("resumed = %+v", out.Sessions)
	}
	var from []string
	for _, s := range out.Sessions {
		from = append(from, s.ResumedFrom)
		got, err := r.store.GetSession(ctx, s.ID)
		if err != nil || got.Status != wire.SessionOpen || got.ResumedFrom != s.ResumedFrom {
			t.Errorf("session %s = %+v (%v)", s.ID, got, err)
		}
	}
	slices.Sort(from)
	slices.Sort(lost)
	if !slices.Equal(from, lost) {
		t.Errorf("resumed from %v, want %v", from, lost)
	}
	evs := r.events(t, "ws-0a03")
	last := evs[len(evs)-1]
	if last.Type != wire.EventRecovered || !strings.Contains(string(last.Data), lost[0]) {
		t.Errorf("last event = %s %s", last.Type, last.Data)
	}
	// A retried activity resumes nothing twice.
	again, err := r.a.Recovered(ctx, RecoveredInput{WorkspaceID: "ws-0a03", Attempt: 1, LostSince: failedAt})
	if err != nil || len(again.Sessions) != 0 {
		t.Errorf("second call resumed %+v (%v)", again.Sessions, err)
	}
}

// The webhook gets a JSON notice; errors name the host only, never the
// URL's token; a 4xx is final, a 5xx is retried.
func TestNotifyWebhook(t *testing.T) {
	var mu sync.Mutex
	var got []map[string]any
	status := http.StatusNoContent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		mu.Lock()
		got = append(got, m)
		st := status
		mu.Unlock()
		if req.Header.Get("Content-Type") != "application/json" || req.URL.Query().Get("token") != "hook-secret-42" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(st)
	}))
	defer srv.Close()
	r := newRig(t)
	ctx := context.Background()
	r.workspace(t, "ws-0a04", `{"kind":"memory","recovery":{"max_attempts":1,"webhook_url":"`+srv.URL+`/hook?token=hook-secret-42"}}`)
	in := WebhookInput{WorkspaceID: "ws-0a04", Event: wire.EventEscalated, Phase: wire.PhaseEscalated, Reason: "gave up", Attempts: 1}

	out, err := r.a.NotifyWebhook(ctx, in)
	if err != nil || out.Status != http.StatusNoContent {
		t.Fatalf("deliver: %+v, %v", out, err)
	}
	if len(got) != 1 || got[0]["workspace_id"] != "ws-0a04" || got[0]["event"] != wire.EventEscalated ||
		got[0]["reason"] != "gave up" || got[0]["attempts"] != float64(1) || got[0]["phase"] != wire.PhaseEscalated {
		t.Errorf("received %v", got)
	}

	for _, tc := range []struct {
		status    int
		retryable bool
	}{{http.StatusInternalServerError, true}, {http.StatusGone, false}} {
		mu.Lock()
		status = tc.status
		mu.Unlock()
		_, err := r.a.NotifyWebhook(ctx, in)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.NonRetryable() == tc.retryable {
			t.Errorf("status %d: err = %v, want retryable=%v", tc.status, err, tc.retryable)
			continue
		}
		if strings.Contains(appErr.Message(), "hook-secret-42") || !strings.Contains(appErr.Message(), srv.URL) {
			t.Errorf("status %d: message %q must name the host and not the token", tc.status, appErr.Message())
		}
	}
	// A receiver that is down: retryable, still without the token.
	srv.Close()
	_, err = r.a.NotifyWebhook(ctx, in)
	if err == nil || strings.Contains(err.Error(), "hook-secret-42") {
		t.Errorf("down receiver: err = %v", err)
	}
}

// The reconciler removes a sandbox no workspace owns once it is older than
// the grace period, keeps those with a row, and reports a running
// workspace whose sandbox is gone.
func TestReconcile(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	// An orphan: made on the backend, no row.
	if _, err := r.mem.Provision(ctx, backend.ProvisionRequest{WorkspaceID: "ws-0bad", Template: json.RawMessage(`{"kind":"memory"}`), Token: "t"}); err != nil {
		t.Fatal(err)
	}
	// A workspace with its sandbox.
	r.workspace(t, "ws-0a05", `{"kind":"memory"}`)
	if _, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-0a05"}); err != nil {
		t.Fatal(err)
	}
	// A running workspace whose sandbox vanished.
	r.workspace(t, "ws-0a06", `{"kind":"memory"}`)
	if err := r.store.SetWorkspacePhase(ctx, "ws-0a06", wire.PhaseRunning, "runtime answered"); err != nil {
		t.Fatal(err)
	}

	// Within the grace period nothing is removed.
	out, err := r.a.Reconcile(ctx, ReconcileInput{Grace: time.Hour})
	if err != nil || len(out.Removed) != 0 || len(out.Missing) != 0 {
		t.Fatalf("within grace: %+v, %v", out, err)
	}
	out, err = r.a.Reconcile(ctx, ReconcileInput{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Removed, []string{"ws-0bad"}) || len(out.Errors) != 0 {
		t.Errorf("removed = %v, errors = %v", out.Removed, out.Errors)
	}
	if !slices.Equal(out.Missing, []string{"ws-0a06"}) {
		t.Errorf("missing = %v, want ws-0a06", out.Missing)
	}
	if r.mem.Provisioned("ws-0bad") || !r.mem.Provisioned("ws-0a05") {
		t.Errorf("orphan still there or owned sandbox removed")
	}
	evs := r.events(t, "ws-0a06")
	if len(evs) == 0 || evs[len(evs)-1].Type != wire.EventSandboxMissing {
		t.Errorf("events of the missing workspace = %+v", evs)
	}
	if got := counter(t, r.m.OrphansRemoved); got != 1 {
		t.Errorf("orphans removed metric = %v", got)
	}
	// The next pass still finds it missing, and says so once only.
	out, err = r.a.Reconcile(ctx, ReconcileInput{})
	if err != nil || !slices.Equal(out.Missing, []string{"ws-0a06"}) {
		t.Fatalf("second pass: %+v, %v", out, err)
	}
	n := 0
	for _, e := range r.events(t, "ws-0a06") {
		if e.Type == wire.EventSandboxMissing {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d sandbox_missing events after two passes, want 1", n)
	}
}

// fakeLifecycle records what the pool activity asks for and stores rows
// the way the real one does.
type fakeLifecycle struct {
	store    *models.Store
	created  []string
	deleted  []string
	returned []string
	adopted  []string
	// signalled are the snapshots asked for, as snapshot@workspace.
	signalled []string
}

func (f *fakeLifecycle) CreateWorkspace(ctx context.Context, req CreateWorkspaceRequest) (*wire.Workspace, error) {
	w := &wire.Workspace{ID: models.NewID("ws"), TemplateID: req.TemplateID, ProviderID: "mem", Backend: memory.Type,
		Phase: wire.PhasePending, PoolID: req.PoolID, PoolState: wire.PoolIdle}
	if err := f.store.CreateWorkspace(ctx, w); err != nil {
		return nil, err
	}
	f.created = append(f.created, w.ID)
	return w, nil
}

func (f *fakeLifecycle) DeleteWorkspace(ctx context.Context, w *wire.Workspace, reason string) error {
	f.deleted = append(f.deleted, w.ID)
	return f.store.SetWorkspacePhase(ctx, w.ID, wire.PhaseTerminating, reason)
}

func (f *fakeLifecycle) NotifyPool(context.Context, string) error { return nil }

func (f *fakeLifecycle) ReturnWorkspace(ctx context.Context, w *wire.Workspace) error {
	f.returned = append(f.returned, w.ID)
	return nil
}

func (f *fakeLifecycle) AdoptWorkspace(ctx context.Context, w *wire.Workspace) (bool, error) {
	f.adopted = append(f.adopted, w.ID)
	return true, nil
}

// SignalSnapshot records the ask and marks the row, as the real one does.
func (f *fakeLifecycle) SignalSnapshot(ctx context.Context, w *wire.Workspace, snap *wire.Snapshot) error {
	f.signalled = append(f.signalled, snap.ID+"@"+w.ID)
	return f.store.SetSnapshotSignalled(ctx, snap.ID)
}

// poolRig is a pool "warm" of the given size on template "pt", with a fake
// lifecycle whose creates and deletes the tests count.
type poolRig struct {
	*rig
	lc  *fakeLifecycle
	ctx context.Context
}

func newPoolRig(t *testing.T, size int) *poolRig {
	t.Helper()
	r := newRig(t)
	ctx := context.Background()
	lc := &fakeLifecycle{store: r.store}
	r.a.Lifecycle = lc
	if err := r.store.CreateTemplate(ctx, &wire.Template{ID: "pt", ProviderID: "mem", Backend: json.RawMessage(`{"kind":"memory"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := r.store.CreatePool(ctx, &wire.Pool{ID: "warm", TemplateID: "pt", Size: size}); err != nil {
		t.Fatal(err)
	}
	return &poolRig{rig: r, lc: lc, ctx: ctx}
}

// pass runs one pass and checks what it created and removed.
func (r *poolRig) pass(t *testing.T, wantCreated, wantRemoved int) ReconcilePoolOutput {
	t.Helper()
	r.lc.created, r.lc.deleted = nil, nil
	out, err := r.a.ReconcilePool(r.ctx, ReconcilePoolInput{PoolID: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Created != wantCreated || out.Removed != wantRemoved {
		t.Fatalf("pass = %+v, want %d created and %d removed", out, wantCreated, wantRemoved)
	}
	return out
}

// runAll brings the pending members up, as their workflows would.
func (r *poolRig) runAll(t *testing.T) {
	t.Helper()
	ws, err := r.store.ListWorkspaces(r.ctx, models.WorkspaceFilter{PoolID: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Phase == wire.PhasePending {
			if err := r.store.SetWorkspacePhase(r.ctx, w.ID, wire.PhaseRunning, "up"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// ready counts the members a lease can take now: idle and running.
func (r *poolRig) ready(t *testing.T) int {
	t.Helper()
	ws, err := r.store.ListWorkspaces(r.ctx, models.WorkspaceFilter{PoolID: "warm", PoolState: wire.PoolIdle, Phase: wire.PhaseRunning})
	if err != nil {
		t.Fatal(err)
	}
	return len(ws)
}

func (r *poolRig) lease(t *testing.T) *wire.Workspace {
	t.Helper()
	w, err := r.store.LeaseWorkspace(r.ctx, "warm")
	if err != nil || w == nil {
		t.Fatalf("lease: %v, %v", w, err)
	}
	return w
}

// giveBack moves a leased member to returning (the API's return) and then
// to idle (its workflow's reset), with a pass after each step.
func (r *poolRig) giveBack(t *testing.T, id string) {
	t.Helper()
	if err := r.store.SetPoolState(r.ctx, id, wire.PoolLeased, wire.PoolReturning); err != nil {
		t.Fatal(err)
	}
	r.pass(t, 0, 0) // a returning member still counts: nothing goes
	if err := r.store.SetPoolState(r.ctx, id, wire.PoolReturning, wire.PoolIdle); err != nil {
		t.Fatal(err)
	}
}

// A pool pass fills the pool, counts leased members toward its size (a
// lease makes no create, a return no delete), replaces failed idle
// members and leased ones their lessee deleted, rolls over to a new
// template version one workspace at a time, shrinks by idle members only,
// and on deletion removes the idle members and leaves leased ones to their
// lessees.
func TestReconcilePool(t *testing.T) {
	r := newPoolRig(t, 2)
	ctx := r.ctx

	r.pass(t, 2, 0)
	r.pass(t, 0, 0) // starting ones count
	r.runAll(t)

	// A lease takes one out; it still counts toward the size.
	leased := r.lease(t)
	if out := r.pass(t, 0, 0); out.Leased != 1 || out.Idle != 1 {
		t.Errorf("after a lease: %+v, want 1 leased and 1 idle", out)
	}

	// An idle member that failed is replaced.
	idle, _ := r.store.ListWorkspaces(ctx, models.WorkspaceFilter{PoolID: "warm", PoolState: wire.PoolIdle})
	_ = r.store.SetWorkspacePhase(ctx, idle[0].ID, wire.PhaseFailed, "dead")
	r.pass(t, 1, 1)
	r.runAll(t)

	// A template change rolls the idle members over one at a time: never
	// fewer ready than the pool holds at rest (its size minus those
	// leased). The leased member is rolled over once it is back.
	tmpl, _ := r.store.GetTemplate(ctx, "pt")
	tmpl.Description = "v2"
	if err := r.store.UpdateTemplate(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	roll := func(wantReady int) {
		t.Helper()
		r.pass(t, 1, 0) // surge: one new
		r.pass(t, 0, 0) // wait for it to run
		if got := r.ready(t); got < wantReady {
			t.Fatalf("%d ready while the new one starts, want at least %d", got, wantReady)
		}
		r.runAll(t)
		r.pass(t, 0, 1) // then one old goes
		if got := r.ready(t); got < wantReady {
			t.Fatalf("%d ready after an old one went, want at least %d", got, wantReady)
		}
	}
	roll(1)
	if out := r.pass(t, 0, 0); out.Idle != 1 || out.Stale != 0 || out.Leased != 1 {
		t.Errorf("after rolling the idle member: %+v", out)
	}
	r.giveBack(t, leased.ID)
	roll(2)
	if out := r.pass(t, 0, 0); out.Idle != 2 || out.Stale != 0 || out.Leased != 0 {
		t.Errorf("after the roll-over: %+v", out)
	}

	// A leased member its lessee deletes no longer counts: it is replaced.
	gone := r.lease(t)
	r.pass(t, 0, 0)
	_ = r.store.SetWorkspacePhase(ctx, gone.ID, wire.PhaseTerminating, "deleted by its lessee")
	r.pass(t, 1, 0)
	r.runAll(t)

	// A smaller size removes idle members only; a leased one stays, and
	// goes when it comes back idle if the pool is still too big.
	leased = r.lease(t)
	if err := r.store.UpdatePool(ctx, &wire.Pool{ID: "warm", TemplateID: "pt", Size: 1}); err != nil {
		t.Fatal(err)
	}
	if out := r.pass(t, 0, 1); out.Leased != 1 {
		t.Errorf("after the size cut: %+v", out)
	}
	w, _ := r.store.GetWorkspace(ctx, leased.ID)
	if w.Phase != wire.PhaseRunning || w.PoolState != wire.PoolLeased {
		t.Errorf("leased member after the size cut = %s, %s", w.Phase, w.PoolState)
	}
	r.giveBack(t, leased.ID)
	if out := r.pass(t, 0, 0); out.Idle != 1 {
		t.Errorf("after the return: %+v", out)
	}

	// Deleting the pool removes the idle members; the leased one stays,
	// detached.
	if err := r.store.UpdatePool(ctx, &wire.Pool{ID: "warm", TemplateID: "pt", Size: 3}); err != nil {
		t.Fatal(err)
	}
	r.pass(t, 2, 0)
	r.runAll(t)
	leased = r.lease(t)
	if err := r.store.DeletePool(ctx, "warm"); err != nil {
		t.Fatal(err)
	}
	out, err := r.a.ReconcilePool(ctx, ReconcilePoolInput{PoolID: "warm"})
	if err != nil || !out.Gone || out.Removed != 2 {
		t.Fatalf("gone pass = %+v, %v", out, err)
	}
	w, _ = r.store.GetWorkspace(ctx, leased.ID)
	if w.PoolID != "" || w.PoolState != "" || w.Phase != wire.PhaseRunning {
		t.Errorf("leased workspace after the pool went = %+v", w)
	}
}

// A lease/return loop does not churn the pool: over 100 cycles on a pool
// of 4, with a pass after every step, nothing is created or deleted after
// the initial fill, and the pool keeps the same four workspaces.
func TestReconcilePoolLeaseReturnNoChurn(t *testing.T) {
	const size, cycles = 4, 100
	r := newPoolRig(t, size)
	r.pass(t, size, 0)
	r.runAll(t)
	members := func() []string {
		ws, err := r.store.ListWorkspaces(r.ctx, models.WorkspaceFilter{PoolID: "warm"})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, 0, len(ws))
		for _, w := range ws {
			ids = append(ids, w.ID)
		}
		slices.Sort(ids)
		return ids
	}
	first := members()

	created, removed := 0, 0
	count := func(out ReconcilePoolOutput) {
		created += out.Created
		removed += out.Removed
	}
	for i := range cycles {
		// Lease one or more (up to the whole pool), then return them all.
		n := 1 + i%size
		var out []*wire.Workspace
		for range n {
			out = append(out, r.lease(t))
			count(r.pass(t, 0, 0))
		}
		for _, w := range out {
			r.giveBack(t, w.ID)
			count(r.pass(t, 0, 0))
		}
		if got := r.ready(t); got != size {
			t.Fatalf("cycle %d: %d ready, want %d", i, got, size)
		}
	}
	if created != 0 || removed != 0 {
		t.Errorf("%d cycles: %d created, %d removed, want none", cycles, created, removed)
	}
	if got := members(); !slices.Equal(got, first) {
		t.Errorf("members after %d cycles = %v, want the first ones %v", cycles, got, first)
	}
}

// A replacement that does not come up (its init fails) is torn down again,
// keeping the data: an escalated workspace holds no running sandbox.
func TestReplaceTearsDownAFailedReplacement(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.workspace(t, "ws-0a07", `{"kind":"memory","init":["test ! -f .poison"]}`)
	out, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-0a07"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out.Handle.Path, ".poison"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = r.a.Replace(ctx, ReplaceInput{WorkspaceID: "ws-0a07", Handle: &out.Handle})
	if err == nil || !strings.Contains(err.Error(), "init[0]") {
		t.Fatalf("replace = %v, want the init failure", err)
	}
	if n := r.mem.Teardowns("ws-0a07"); n != 2 {
		t.Errorf("teardowns = %d, want 2 (the old sandbox, then the failed replacement)", n)
	}
	if _, err := os.Stat(filepath.Join(out.Handle.Path, ".poison")); err != nil {
		t.Errorf("data lost with the failed replacement: %v", err)
	}
}

// Provisioning that runs out of its start timeout says what it was doing,
// and is final.
func TestProvisionStartTimeoutNamesTheStep(t *testing.T) {
	r := newRig(t)
	r.workspace(t, "ws-0a08", `{"kind":"memory","init":["sleep 30"]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-0a08"})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != StartTimeoutType || !appErr.NonRetryable() {
		t.Fatalf("err = %v, want a final %s error", err, StartTimeoutType)
	}
	if want := `still running init[0] "sleep 30" when the start timeout ran out`; !strings.Contains(appErr.Message(), want) {
		t.Errorf("message %q lacks %q", appErr.Message(), want)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %s, want before the deadline", d)
	}
}

// A backend that said why it was still waiting when the start timeout ran
// out keeps its reason in the final error; a bare context error does not
// clutter it.
func TestTimedOutKeepsTheBackendsReason(t *testing.T) {
	why := errs.E(errs.Timeout, "pod p did not run within 9s: it is pending: Unschedulable: 0/1 nodes are available")
	err := timedOut(why, true, "ws-1", "replace", "creating the sandbox")
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != StartTimeoutType || !appErr.NonRetryable() {
		t.Fatalf("err = %v, want a final %s error", err, StartTimeoutType)
	}
	if msg := appErr.Message(); !strings.Contains(msg, "still creating the sandbox when the start timeout ran out: ") || !strings.Contains(msg, "Unschedulable") {
		t.Errorf("message %q lacks the step or the backend's reason", msg)
	}
	err = timedOut(fmt.Errorf("dial: %w", context.DeadlineExceeded), true, "ws-1", "provision", "creating the sandbox")
	if errors.As(err, &appErr); strings.Contains(appErr.Message(), "deadline") {
		t.Errorf("message %q repeats the context's error", appErr.Message())
	}
	if err := timedOut(why, false, "ws-1", "provision", "creating the sandbox"); errors.As(err, &appErr) && appErr.Type() == StartTimeoutType {
		t.Errorf("not run out: err %v, want the backend's own error", err)
	}
}
