package api

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// expectPoolStart expects the pool workflow of id to be started once and
// answers with err.
func (h *harness) expectPoolStart(id string, err error) {
	var run any = &mocks.WorkflowRun{}
	if err != nil {
		run = nil
	}
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool {
		return o.ID == workflows.PoolWorkflowID(id)
	}), workflows.PoolWorkflowName, mock.Anything).Return(run, err).Once()
}

// expectNotify expects the pool workflow of id to be woken (signal with
// start) times times, and counts the calls.
func (h *harness) expectNotify(id string, times int) *int {
	n := new(int)
	var mu sync.Mutex
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, workflows.PoolWorkflowID(id), workflows.SignalPoolChanged,
		mock.Anything, mock.Anything, workflows.PoolWorkflowName, mock.Anything).
		Run(func(mock.Arguments) { mu.Lock(); *n++; mu.Unlock() }).
		Return(&mocks.WorkflowRun{}, nil).Times(times)
	return n
}

// pool stores a pool directly, without its workflow.
func (h *harness) pool(id string, size int) *wire.Pool {
	h.t.Helper()
	p := &wire.Pool{ID: id, TemplateID: wire.DefaultTemplateID, Size: size}
	if err := h.store.CreatePool(context.Background(), p); err != nil {
		h.t.Fatalf("create pool: %v", err)
	}
	return p
}

// member stores a workspace of pool in phase and pool state.
func (h *harness) member(poolID, phase, state string) *wire.Workspace {
	h.t.Helper()
	id := models.NewID("ws")
	w := &wire.Workspace{
		ID: id, TemplateID: wire.DefaultTemplateID, ProviderID: wire.LocalProviderID,
		Backend: wire.BackendLocal, Phase: phase, WorkflowID: workflows.WorkflowID(id),
		PoolID: poolID, PoolState: state,
	}
	if err := h.store.CreateWorkspace(context.Background(), w); err != nil {
		h.t.Fatalf("create workspace: %v", err)
	}
	return w
}

func TestPoolCRUD(t *testing.T) {
	h := newHarness(t)

	h.expectPoolStart("warm", nil)
	var p wire.PoolView
	r := h.do("POST", "/v1/pools", `{"id":"warm","template_id":"default"}`).expect(t, 201)
	r.decode(t, &p)
	if p.ID != "warm" || p.TemplateID != "default" || p.Size != wire.DefaultPoolSize {
		t.Fatalf("created pool = %+v", p)
	}
	if loc := r.header.Get("Location"); loc != "/v1/pools/warm" {
		t.Fatalf("Location = %q", loc)
	}

	bad := []struct {
		name, method, path, body string
		status                   int
		code, field, msg         string
	}{
		{"negative size", "POST", "/v1/pools", `{"id":"p","template_id":"default","size":-1}`, 400, "invalid", "size", "size"},
		{"size too big", "POST", "/v1/pools", `{"id":"p","template_id":"default","size":101}`, 400, "invalid", "size", "100"},
		{"unknown template", "POST", "/v1/pools", `{"id":"p","template_id":"nope"}`, 404, "not_found", "template_id", "nope"},
		{"missing template", "POST", "/v1/pools", `{"id":"p"}`, 400, "invalid", "template_id", "required"},
		{"bad id", "POST", "/v1/pools", `{"id":"Bad!","template_id":"default"}`, 400, "invalid", "id", "not a valid id"},
		{"missing id", "POST", "/v1/pools", `{"template_id":"default"}`, 400, "invalid", "id", "required"},
		{"duplicate", "POST", "/v1/pools", `{"id":"warm","template_id":"default"}`, 409, "conflict", "", "warm"},
		{"malformed", "POST", "/v1/pools", `{"id":`, 400, "invalid", "", "malformed"},
		{"unknown field", "POST", "/v1/pools", `{"id":"p","template_id":"default","image":"x"}`, 400, "invalid", "image", "unknown field"},
		{"size wrong type", "POST", "/v1/pools", `{"id":"p","template_id":"default","size":"3"}`, 400, "invalid", "size", "number"},
		{"get unknown", "GET", "/v1/pools/ghost", ``, 404, "not_found", "", "ghost"},
		{"update unknown", "PUT", "/v1/pools/ghost", `{"template_id":"default","size":2}`, 404, "not_found", "", "ghost"},
		{"update id mismatch", "PUT", "/v1/pools/warm", `{"id":"other","template_id":"default"}`, 400, "invalid", "id", "does not match"},
		{"update bad size", "PUT", "/v1/pools/warm", `{"template_id":"default","size":1000}`, 400, "invalid", "size", ""},
		{"update unknown template", "PUT", "/v1/pools/warm", `{"template_id":"nope"}`, 404, "not_found", "template_id", "nope"},
		{"delete unknown", "DELETE", "/v1/pools/ghost", ``, 404, "not_found", "", "ghost"},
		{"lease unknown", "POST", "/v1/pools/ghost/lease", ``, 404, "not_found", "", "ghost"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.body != "" {
				body = tt.body
			}
			h.do(tt.method, tt.path, body).expectError(t, tt.status, tt.code, tt.field, tt.msg)
		})
	}

	// Live counts come from the pool's workspaces.
	h.member("warm", wire.PhaseRunning, wire.PoolIdle)
	h.member("warm", wire.PhaseRunning, wire.PoolIdle)
	h.member("warm", wire.PhasePending, wire.PoolIdle)
	h.member("warm", wire.PhaseRunning, wire.PoolLeased)
	h.member("warm", wire.PhaseFailed, wire.PoolIdle) // being replaced: not counted
	h.do("GET", "/v1/pools/warm", nil).expect(t, 200).decode(t, &p)
	if p.Status != (wire.PoolStatus{Idle: 2, Starting: 1, Leased: 1}) {
		t.Fatalf("status = %+v", p.Status)
	}

	// A second template and pool, for the filter.
	h.do("POST", "/v1/templates", `{"id":"other","provider_id":"local","backend":{"kind":"local"}}`).expect(t, 201)
	h.pool("cold-only", 1)
	var l wire.Items[wire.PoolView]
	h.do("GET", "/v1/pools", nil).expect(t, 200).decode(t, &l)
	if len(l.Items) != 2 || l.Items[0].ID != "cold-only" || l.Items[1].ID != "warm" || l.Items[1].Status.Idle != 2 {
		t.Fatalf("pools = %+v", l.Items)
	}
	h.do("GET", "/v1/pools?template_id=other", nil).expect(t, 200).decode(t, &l)
	if len(l.Items) != 0 {
		t.Fatalf("pools of template other = %+v", l.Items)
	}

	// Update: stored, and the pool is woken to act on it.
	n := h.expectNotify("cold-only", 1)
	h.do("PUT", "/v1/pools/cold-only", `{"template_id":"other","size":5}`).expect(t, 200).decode(t, &p)
	if p.TemplateID != "other" || p.Size != 5 || *n != 1 {
		t.Fatalf("updated pool = %+v, notified %d times", p, *n)
	}

	// A template update wakes every pool on it; a template a pool uses
	// cannot be deleted.
	n = h.expectNotify("cold-only", 1)
	h.do("PUT", "/v1/templates/other", `{"provider_id":"local","description":"v2","backend":{"kind":"local"}}`).expect(t, 200)
	if *n != 1 {
		t.Fatalf("template update notified the pool %d times, want 1", *n)
	}
	h.do("DELETE", "/v1/templates/other", nil).expectError(t, 409, "conflict", "", "in use by pool cold-only")

	// Delete: 202, the pool is woken to clean up, and it is gone.
	n = h.expectNotify("cold-only", 1)
	h.do("DELETE", "/v1/pools/cold-only", nil).expect(t, 202).decode(t, &p)
	if p.ID != "cold-only" || *n != 1 {
		t.Fatalf("deleted pool = %+v, notified %d times", p, *n)
	}
	h.do("GET", "/v1/pools/cold-only", nil).expectError(t, 404, "not_found", "", "cold-only")
	h.do("DELETE", "/v1/templates/other", nil).expect(t, 204)
}

func TestCreatePoolTemporalDown(t *testing.T) {
	h := newHarness(t)
	h.expectPoolStart("p", errors.New("connection refused"))
	h.do("POST", "/v1/pools", `{"id":"p","template_id":"default","size":2}`).expectError(t, 503, "unavailable", "", "connection refused")
	if _, err := h.store.GetPool(context.Background(), "p"); err == nil {
		t.Fatal("a pool whose workflow did not start was kept")
	}
}

func TestLeaseWarmAndCold(t *testing.T) {
	h := newHarness(t)
	h.pool("p", 2)
	idle := h.member("p", wire.PhaseRunning, wire.PoolIdle)
	h.member("p", wire.PhasePending, wire.PoolIdle) // not leasable yet
	notified := h.expectNotify("p", 2)

	// Warm: the idle running workspace, now leased, with the lessee's labels.
	var lr wire.Lease
	h.do("POST", "/v1/pools/p/lease", `{"labels":{"run":"6"}}`).expect(t, 200).decode(t, &lr)
	if lr.Source != LeaseWarm || lr.Workspace == nil || lr.Workspace.ID != idle.ID || lr.Workspace.PoolState != wire.PoolLeased ||
		lr.Workspace.Labels["run"] != "6" {
		t.Fatalf("warm lease = %+v %+v", lr, lr.Workspace)
	}
	if got, err := h.store.GetWorkspace(context.Background(), idle.ID); err != nil || got.Labels["run"] != "6" {
		t.Fatalf("stored labels after a warm lease = %+v (%v)", got, err)
	}

	// Cold: nothing idle and running; a plain workspace of the template.
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Return(&mocks.WorkflowRun{}, nil).Once()
	r := h.do("POST", "/v1/pools/p/lease", `{"labels":{"run":"7"}}`).expect(t, 201)
	lr = wire.Lease{}
	r.decode(t, &lr)
	if lr.Source != LeaseCold || lr.Workspace.PoolID != "" || lr.Workspace.PoolState != "" ||
		lr.Workspace.Phase != wire.PhasePending || lr.Workspace.TemplateID != "default" || lr.Workspace.Labels["run"] != "7" {
		t.Fatalf("cold lease = %+v %+v", lr, lr.Workspace)
	}
	if loc := r.header.Get("Location"); loc != "/v1/workspaces/"+lr.Workspace.ID {
		t.Fatalf("Location = %q", loc)
	}
	h.do("POST", "/v1/pools/p/lease", `{"labels":{"a":"b\nc"}}`).expectError(t, 400, "invalid", "labels.a", "")
	h.do("POST", "/v1/pools/p/lease", `{"labels":`).expectError(t, 400, "invalid", "", "malformed")

	// After the answers: the pool was woken and the leases recorded.
	h.srv.bg.Wait()
	if *notified != 2 {
		t.Fatalf("pool woken %d times, want 2", *notified)
	}
	for _, id := range []string{idle.ID, lr.Workspace.ID} {
		evs, err := h.store.ListEvents(context.Background(), id, 0, 0)
		if err != nil || len(evs) != 1 || evs[0].Type != wire.EventLeased || !strings.Contains(string(evs[0].Data), `"pool_id":"p"`) {
			t.Fatalf("events of %s = %+v (%v)", id, evs, err)
		}
	}
	m := string(h.do("GET", "/metrics", nil).expect(t, 200).body)
	for _, want := range []string{`primer_pool_leases_total{source="warm"} 1`, `primer_pool_leases_total{source="cold"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestConcurrentLeasesGetDistinctWorkspaces(t *testing.T) {
	h := newHarness(t)
	const n = 8
	h.pool("p", n)
	for range n {
		h.member("p", wire.PhaseRunning, wire.PoolIdle)
	}
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, workflows.PoolWorkflowID("p"), workflows.SignalPoolChanged,
		mock.Anything, mock.Anything, workflows.PoolWorkflowName, mock.Anything).Return(&mocks.WorkflowRun{}, nil)

	var wg sync.WaitGroup
	got := make([]wire.Lease, n)
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.do("POST", "/v1/pools/p/lease", nil)
			statuses[i] = r.status
			if r.status == 200 {
				r.decode(t, &got[i])
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if statuses[i] != 200 || got[i].Source != LeaseWarm {
			t.Fatalf("lease %d: status %d source %q", i, statuses[i], got[i].Source)
		}
		if seen[got[i].Workspace.ID] {
			t.Fatalf("workspace %s leased twice", got[i].Workspace.ID)
		}
		seen[got[i].Workspace.ID] = true
	}
	left, err := h.store.ListWorkspaces(context.Background(), models.WorkspaceFilter{PoolID: "p", PoolState: wire.PoolIdle})
	if err != nil || len(left) != 0 {
		t.Fatalf("idle after %d leases: %d (%v)", n, len(left), err)
	}
}

func TestReturnWorkspace(t *testing.T) {
	h := newHarness(t)
	h.pool("p", 1)
	plain := h.workspace(wire.PhaseRunning)
	idle := h.member("p", wire.PhaseRunning, wire.PoolIdle)
	leased := h.member("p", wire.PhaseRunning, wire.PoolLeased)

	h.do("POST", "/v1/workspaces/"+plain.ID+"/return", nil).expectError(t, 409, "failed_precondition", "", "not in a pool")
	h.do("POST", "/v1/workspaces/"+idle.ID+"/return", nil).expectError(t, 409, "failed_precondition", "", "pool state is idle, not leased")
	h.do("POST", "/v1/workspaces/ws-0000000000000000/return", nil).expectError(t, 404, "not_found", "", "")

	// Temporal down: 503 and the workspace stays leased.
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, leased.WorkflowID, workflows.SignalReturn, mock.Anything,
		mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).Return(nil, errors.New("connection refused")).Once()
	h.do("POST", "/v1/workspaces/"+leased.ID+"/return", nil).expectError(t, 503, "unavailable", "", "connection refused")
	if w, _ := h.store.GetWorkspace(context.Background(), leased.ID); w.PoolState != wire.PoolLeased {
		t.Fatalf("pool state after a failed return = %q, want leased", w.PoolState)
	}

	var sig any
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, leased.WorkflowID, workflows.SignalReturn, mock.Anything,
		mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) { sig = args.Get(3) }).Return(&mocks.WorkflowRun{}, nil).Once()
	var got wire.Workspace
	h.do("POST", "/v1/workspaces/"+leased.ID+"/return", nil).expect(t, 202).decode(t, &got)
	if got.ID != leased.ID || got.PoolState != wire.PoolReturning {
		t.Fatalf("returned = %+v", got)
	}
	if _, ok := sig.(workflows.ReturnSignal); !ok {
		t.Fatalf("signal payload = %#v", sig)
	}
	if w, _ := h.store.GetWorkspace(context.Background(), leased.ID); w.PoolState != wire.PoolReturning {
		t.Fatalf("stored pool state = %q, want returning", w.PoolState)
	}
	// Returning it again is refused: it is no longer leased.
	h.do("POST", "/v1/workspaces/"+leased.ID+"/return", nil).expectError(t, 409, "failed_precondition", "", "returning")
}

func TestRecoverWorkspace(t *testing.T) {
	h := newHarness(t)
	running := h.workspace(wire.PhaseRunning)
	h.do("POST", "/v1/workspaces/"+running.ID+"/recover", nil).expectError(t, 409, "failed_precondition", "", "is running")

	for _, phase := range []string{wire.PhaseEscalated, wire.PhaseFailed} {
		w := h.workspace(phase)
		var sig workflows.RecoverSignal
		h.temporal.On("SignalWithStartWorkflow", mock.Anything, w.WorkflowID, workflows.SignalRecover, mock.Anything,
			mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
			Run(func(args mock.Arguments) { sig = args.Get(3).(workflows.RecoverSignal) }).Return(&mocks.WorkflowRun{}, nil).Once()
		var got wire.Workspace
		h.do("POST", "/v1/workspaces/"+w.ID+"/recover", nil).expect(t, 202).decode(t, &got)
		if got.ID != w.ID || sig.Reason != "requested by user" {
			t.Fatalf("%s: recovered %+v with signal %+v", phase, got, sig)
		}
	}

	// Escalated is a phase the list filter knows.
	var l wire.Items[wire.Workspace]
	h.do("GET", "/v1/workspaces?phase=escalated", nil).expect(t, 200).decode(t, &l)
	if len(l.Items) != 1 || l.Items[0].Phase != wire.PhaseEscalated {
		t.Fatalf("escalated workspaces = %+v", l.Items)
	}
}

func TestDeleteIdlePoolMemberWakesThePool(t *testing.T) {
	h := newHarness(t)
	h.pool("p", 1)
	w := h.member("p", wire.PhaseRunning, wire.PoolIdle)
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, w.WorkflowID, workflows.SignalDelete, mock.Anything,
		mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).Return(&mocks.WorkflowRun{}, nil).Once()
	n := h.expectNotify("p", 1)
	h.do("DELETE", "/v1/workspaces/"+w.ID, nil).expect(t, 202)
	h.srv.bg.Wait()
	if *n != 1 {
		t.Fatalf("pool woken %d times, want 1", *n)
	}
}

// A worktree workspace is a checkout of the user's repository; a return
// would empty it, so pools on worktree templates are refused.
func TestPoolOnWorktreeRefused(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if err := h.store.CreateProvider(ctx, &wire.Provider{ID: "wt", Provider: wire.BackendWorktree, Config: json.RawMessage(`{"kind":"worktree"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := h.store.CreateTemplate(ctx, &wire.Template{ID: "wt-t", ProviderID: "wt", Backend: json.RawMessage(`{"kind":"worktree"}`)}); err != nil {
		t.Fatal(err)
	}
	h.do("POST", "/v1/pools", `{"id":"wp","template_id":"wt-t"}`).expectError(t, 400, "invalid", "template_id", "worktree")
	if _, err := h.store.GetPool(ctx, "wp"); err == nil {
		t.Fatal("a refused pool was stored")
	}
}
