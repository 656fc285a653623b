package api

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// expectSignal makes the mocked Temporal take one signal-with-start of
// signal and keeps its payload in *got.
func expectSignal[T any](h *harness, signal string, got *T) {
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, mock.Anything, signal, mock.Anything,
		mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) { *got = args.Get(3).(T) }).Return(&mocks.WorkflowRun{}, nil).Once()
}

// tenantWorkspace inserts a workspace of tenant on the default template.
func (h *harness) tenantWorkspace(tenant, phase string) *wire.Workspace {
	h.t.Helper()
	id := models.NewID("ws")
	w := &wire.Workspace{ID: id, TenantID: tenant, TemplateID: wire.DefaultTemplateID, ProviderID: wire.LocalProviderID,
		Backend: wire.BackendLocal, Phase: phase, WorkflowID: workflows.WorkflowID(id)}
	if err := h.store.CreateWorkspace(context.Background(), w); err != nil {
		h.t.Fatalf("create workspace: %v", err)
	}
	return w
}

func TestSnapshotCreateGetListDelete(t *testing.T) {
	h := newHarness(t)
	w := h.workspace(wire.PhaseRunning)

	var sig workflows.SnapshotSignal
	expectSignal(h, workflows.SignalSnapshot, &sig)
	var snap wire.Snapshot
	h.do("POST", "/v1/workspaces/"+w.ID+"/snapshots", `{"labels":{"k":"v"}}`).expect(t, 202).decode(t, &snap)
	if snap.Phase != wire.SnapshotCreating || snap.Mode != wire.SnapshotModeFilesystem || snap.WorkspaceID != w.ID ||
		snap.Backend != wire.BackendLocal || snap.Labels["k"] != "v" || sig.SnapshotID != snap.ID || sig.Mode != snap.Mode {
		t.Fatalf("snapshot %+v, signal %+v", snap, sig)
	}
	// The row says the workflow was asked: the reconciler asks only for
	// those a killed request stored without asking.
	if stored, err := h.store.GetSnapshot(context.Background(), snap.ID); err != nil || !stored.Signalled {
		t.Fatalf("stored snapshot %+v, %v; want it marked signalled", stored, err)
	}

	// The local backend takes no full snapshots: 400 with its reason.
	h.do("POST", "/v1/workspaces/"+w.ID+"/snapshots", `{"mode":"full"}`).expectError(t, 400, "invalid", "mode", "full")
	h.do("POST", "/v1/workspaces/"+w.ID+"/snapshots", `{"mode":"disk"}`).expectError(t, 400, "invalid", "mode", "disk")
	pending := h.workspace(wire.PhasePending)
	h.do("POST", "/v1/workspaces/"+pending.ID+"/snapshots", nil).expectError(t, 409, "failed_precondition", "", "pending")

	// Temporal down: 503, and the snapshot is failed, not left creating.
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything,
		mock.Anything, mock.Anything, mock.Anything).Return(nil, errors.New("deadline exceeded")).Once()
	h.do("POST", "/v1/workspaces/"+w.ID+"/snapshots", nil).expectError(t, 503, "unavailable", "", "signal snapshot")
	failed, err := h.store.ListSnapshots(context.Background(), models.SnapshotFilter{Phase: wire.SnapshotFailed})
	if err != nil || len(failed) != 1 || failed[0].Signalled {
		t.Fatalf("failed snapshots = %+v, %v; want the one whose signal failed, not marked signalled", failed, err)
	}

	var got wire.Snapshot
	h.do("GET", "/v1/snapshots/"+snap.ID, nil).expect(t, 200).decode(t, &got)
	if got.ID != snap.ID || got.Phase != wire.SnapshotCreating {
		t.Fatalf("get = %+v", got)
	}
	var items wire.Items[wire.Snapshot]
	h.do("GET", "/v1/snapshots?phase=creating&workspace_id="+w.ID, nil).expect(t, 200).decode(t, &items)
	if len(items.Items) != 1 || items.Items[0].ID != snap.ID {
		t.Fatalf("list = %+v", items)
	}
	h.do("GET", "/v1/snapshots?phase=gone", nil).expectError(t, 400, "invalid", "phase", "gone")

	h.do("DELETE", "/v1/snapshots/"+snap.ID, nil).expect(t, 202).decode(t, &got)
	if got.Phase != wire.SnapshotDeleting {
		t.Fatalf("deleted = %+v, want phase deleting", got)
	}
	h.do("GET", "/v1/snapshots/"+models.NewID("snap"), nil).expectError(t, 404, "not_found", "", "not found")
}

// TestCreateWorkspaceFromSnapshot: a creating (or ready) snapshot of the
// caller's tenant starts a cold workspace carrying its id; another
// tenant's is 404 and a failed one 400, both naming snapshot_id.
func TestCreateWorkspaceFromSnapshot(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if err := h.store.CreateTenant(ctx, &wire.Tenant{ID: tenantB}); err != nil {
		t.Fatal(err)
	}
	// The default tenant's admin owns the source (the default template is
	// on the host, so a member could not use it).
	memberA, memberB := h.adminKey, h.newKey(tenantB, wire.RoleMember)
	src := h.workspace(wire.PhaseRunning)
	snap := &wire.Snapshot{ID: models.NewID("snap"), WorkspaceID: src.ID, TemplateID: src.TemplateID,
		ProviderID: src.ProviderID, Backend: src.Backend, Mode: wire.SnapshotModeFilesystem}
	if err := h.store.CreateSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}

	var in workflows.WorkspaceInput
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) { in = args.Get(3).(workflows.WorkspaceInput) }).Return(&mocks.WorkflowRun{}, nil).Once()
	var created wire.Created
	h.doAs(memberA, "POST", "/v1/workspaces", `{"snapshot_id":"`+snap.ID+`"}`).expect(t, 201).decode(t, &created)
	stored, err := h.store.GetWorkspace(ctx, created.Workspace.ID)
	if err != nil || stored.SnapshotID != snap.ID || stored.TemplateID != src.TemplateID || stored.TenantID != wire.DefaultTenantID ||
		created.Source != CreateCold || in.WorkspaceID != stored.ID {
		t.Fatalf("workspace = %+v (%v), source %s", stored, err, created.Source)
	}

	h.doAs(memberB, "POST", "/v1/workspaces", `{"snapshot_id":"`+snap.ID+`"}`).
		expectError(t, 404, "not_found", "snapshot_id", "not found")
	h.doAs(memberB, "GET", "/v1/snapshots/"+snap.ID, nil).expectError(t, 404, "not_found", "", "not found")
	h.doAs(memberB, "DELETE", "/v1/snapshots/"+snap.ID, nil).expectError(t, 404, "not_found", "", "not found")
	var items wire.Items[wire.Snapshot]
	h.doAs(memberB, "GET", "/v1/snapshots", nil).expect(t, 200).decode(t, &items)
	if len(items.Items) != 0 {
		t.Fatalf("tenant B lists %+v", items.Items)
	}

	if err := h.store.SetSnapshotFailed(ctx, snap.ID, "broken"); err != nil {
		t.Fatal(err)
	}
	h.doAs(memberA, "POST", "/v1/workspaces", `{"snapshot_id":"`+snap.ID+`"}`).
		expectError(t, 400, "invalid", "snapshot_id", "failed")
}

// withMemory adds a memory backend (no snapshots, no pause) next to local,
// with a provider "mem" and a template "mem" on it.
func withMemory(t *testing.T) harnessOpt {
	return func(c *Config) {
		host := local.NewHost(nil)
		t.Cleanup(func() { _ = host.Close() })
		mem := memory.New(host, filepath.Join(t.TempDir(), "mem"))
		c.Backends = backend.NewRegistry(map[string]backend.Factory{
			wire.BackendLocal: local.Factory(host, nil), memory.Type: mem.Factory(),
		})
	}
}

func memoryWorkspace(t *testing.T, h *harness, phase string) *wire.Workspace {
	t.Helper()
	ctx := context.Background()
	if _, err := h.store.GetProvider(ctx, "mem"); err != nil {
		if err := h.store.CreateProvider(ctx, &wire.Provider{ID: "mem", Provider: memory.Type}); err != nil {
			t.Fatal(err)
		}
		if err := h.store.CreateTemplate(ctx, &wire.Template{ID: "mem", ProviderID: "mem", Backend: json.RawMessage(`{"kind":"memory"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	id := models.NewID("ws")
	w := &wire.Workspace{ID: id, TemplateID: "mem", ProviderID: "mem", Backend: memory.Type, Phase: phase, WorkflowID: workflows.WorkflowID(id)}
	if err := h.store.CreateWorkspace(ctx, w); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestSnapshotCapabilities(t *testing.T) {
	h := newHarness(t, withMemory(t))
	w := memoryWorkspace(t, h, wire.PhaseRunning)
	h.do("POST", "/v1/workspaces/"+w.ID+"/snapshots", nil).expectError(t, 400, "invalid", "mode", "does not take filesystem snapshots")
	h.do("POST", "/v1/workspaces/"+w.ID+"/fork", `{"count":2}`).expectError(t, 400, "invalid", "mode", "does not take filesystem snapshots")
	h.do("POST", "/v1/workspaces/"+w.ID+"/pause", nil).expectError(t, 400, "invalid", "", "cannot pause")

	// A template on another backend does not start from a local snapshot.
	src := h.workspace(wire.PhaseRunning)
	snap := &wire.Snapshot{ID: models.NewID("snap"), WorkspaceID: src.ID, TemplateID: src.TemplateID,
		ProviderID: src.ProviderID, Backend: src.Backend, Mode: wire.SnapshotModeFilesystem}
	if err := h.store.CreateSnapshot(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	h.do("POST", "/v1/workspaces", `{"snapshot_id":"`+snap.ID+`","template_id":"mem"}`).
		expectError(t, 400, "invalid", "template_id", "backend memory")
}

func TestForkWorkspace(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if err := h.store.CreateTenant(ctx, &wire.Tenant{ID: "small", Quota: wire.Quota{MaxWorkspaces: 4}}); err != nil {
		t.Fatal(err)
	}
	// An admin: the default template is on the host.
	member := h.newKey("small", wire.RoleAdmin)
	parent := h.tenantWorkspace("small", wire.PhaseRunning)

	for _, body := range []string{`{"count":0}`, `{"count":101}`, `{}`} {
		h.doAs(member, "POST", "/v1/workspaces/"+parent.ID+"/fork", body).expectError(t, 400, "invalid", "count", "count")
	}

	// Room for 3 more, 10 asked: 429 and nothing is made.
	h.doAs(member, "POST", "/v1/workspaces/"+parent.ID+"/fork", `{"count":10}`).
		expectError(t, 429, "resource_exhausted", "", "max_workspaces")
	snaps, err := h.store.ListSnapshots(ctx, models.SnapshotFilter{TenantID: "small"})
	if err != nil || len(snaps) != 0 {
		t.Fatalf("snapshots after a refused fork = %+v, %v", snaps, err)
	}
	ws, err := h.store.ListWorkspaces(ctx, models.WorkspaceFilter{TenantID: "small"})
	if err != nil || len(ws) != 1 {
		t.Fatalf("workspaces after a refused fork = %d, %v; want the parent only", len(ws), err)
	}

	// The parent cannot be signalled: the snapshot fails and no child is
	// left (none had a workflow yet).
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, mock.Anything, workflows.SignalSnapshot, mock.Anything,
		mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Return(nil, errors.New("temporal down")).Once()
	if r := h.doAs(member, "POST", "/v1/workspaces/"+parent.ID+"/fork", `{"count":2}`); r.status < 500 {
		t.Fatalf("fork with the parent unreachable: %d %s, want 5xx", r.status, r.body)
	}
	if ws, err := h.store.ListWorkspaces(ctx, models.WorkspaceFilter{TenantID: "small"}); err != nil || len(ws) != 1 {
		t.Fatalf("workspaces after a fork whose signal failed = %d, %v; want the parent only", len(ws), err)
	}
	snaps, err = h.store.ListSnapshots(ctx, models.SnapshotFilter{TenantID: "small"})
	if err != nil || len(snaps) != 1 || snaps[0].Phase != wire.SnapshotFailed {
		t.Fatalf("snapshots after a fork whose signal failed = %+v, %v; want one failed", snaps, err)
	}

	// Three fit: the parent is asked for the snapshot first, then the
	// children start (a kill in between leaves pending children the
	// reconciler adopts, waiting for a capture being taken).
	var order []string
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) {
			order = append(order, args.Get(3).(workflows.WorkspaceInput).WorkspaceID)
		}).
		Return(&mocks.WorkflowRun{}, nil).Times(3)
	var sig workflows.SnapshotSignal
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, mock.Anything, workflows.SignalSnapshot, mock.Anything,
		mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) {
			sig = args.Get(3).(workflows.SnapshotSignal)
			order = append(order, "signal")
		}).Return(&mocks.WorkflowRun{}, nil).Once()
	var forked wire.Forked
	h.doAs(member, "POST", "/v1/workspaces/"+parent.ID+"/fork", `{"count":3,"labels":{"f":"1"}}`).expect(t, 201).decode(t, &forked)
	if forked.Snapshot == nil || !forked.Snapshot.Implicit || sig.SnapshotID != forked.Snapshot.ID || len(forked.Workspaces) != 3 || len(order) != 4 || order[0] != "signal" {
		t.Fatalf("forked %+v, signal %+v, order %v; want the signal, then 3 starts", forked, sig, order)
	}
	if stored, err := h.store.GetSnapshot(ctx, forked.Snapshot.ID); err != nil || !stored.Signalled {
		t.Fatalf("fork's stored snapshot %+v, %v; want it marked signalled", stored, err)
	}
	for _, c := range forked.Workspaces {
		got, err := h.store.GetWorkspace(ctx, c.ID)
		if err != nil || got.SnapshotID != forked.Snapshot.ID || got.TenantID != "small" || got.Phase != wire.PhasePending || got.Labels["f"] != "1" {
			t.Fatalf("child %+v, %v", got, err)
		}
	}
	// The tenant is full now: one more is refused.
	h.doAs(member, "POST", "/v1/workspaces/"+parent.ID+"/fork", `{"count":1}`).
		expectError(t, 429, "resource_exhausted", "", "max_workspaces")
}

func TestPauseResume(t *testing.T) {
	h := newHarness(t)
	w := h.workspace(wire.PhaseRunning)
	h.do("POST", "/v1/workspaces/"+w.ID+"/resume", nil).expectError(t, 409, "failed_precondition", "", "only a paused")
	h.do("POST", "/v1/workspaces/"+w.ID+"/pause", `{"mode":"full"}`).expectError(t, 400, "invalid", "mode", "full")
	h.do("POST", "/v1/workspaces/"+w.ID+"/pause", `{"mode":"x"}`).expectError(t, 400, "invalid", "mode", "x")

	var ps workflows.PauseSignal
	expectSignal(h, workflows.SignalPause, &ps)
	var got wire.Workspace
	h.do("POST", "/v1/workspaces/"+w.ID+"/pause", nil).expect(t, 202).decode(t, &got)
	if got.ID != w.ID || ps.Mode != wire.SnapshotModeFilesystem || ps.Reason != "paused by "+keyIDOf(t, h.adminKey) {
		t.Fatalf("pause answered %+v, signalled %+v", got, ps)
	}

	if err := h.store.SetWorkspacePhase(context.Background(), w.ID, wire.PhasePaused, "paused"); err != nil {
		t.Fatal(err)
	}
	h.do("POST", "/v1/workspaces/"+w.ID+"/pause", nil).expectError(t, 409, "failed_precondition", "", "only a running")
	var rs workflows.ResumeSignal
	expectSignal(h, workflows.SignalResume, &rs)
	h.do("POST", "/v1/workspaces/"+w.ID+"/resume", nil).expect(t, 202).decode(t, &got)
	if got.Phase != wire.PhasePaused || rs.Reason == "" {
		t.Fatalf("resume answered %+v, signalled %+v", got, rs)
	}
	var items wire.Items[wire.Workspace]
	h.do("GET", "/v1/workspaces?phase=paused", nil).expect(t, 200).decode(t, &items)
	if len(items.Items) != 1 || items.Items[0].ID != w.ID {
		t.Fatalf("paused list = %+v", items)
	}
}

// TestPoolSnapshot: a pool names a ready snapshot of its tenant taken on
// its template's backend.
func TestPoolSnapshot(t *testing.T) {
	h := newHarness(t, withMemory(t))
	ctx := context.Background()
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, mock.Anything, workflows.SignalPoolChanged, mock.Anything,
		mock.Anything, workflows.PoolWorkflowName, mock.Anything).Return(&mocks.WorkflowRun{}, nil).Maybe()
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.PoolWorkflowName, mock.Anything).
		Return(&mocks.WorkflowRun{}, nil).Maybe()
	src := h.workspace(wire.PhaseRunning)
	snap := &wire.Snapshot{ID: models.NewID("snap"), WorkspaceID: src.ID, TemplateID: src.TemplateID,
		ProviderID: src.ProviderID, Backend: src.Backend, Mode: wire.SnapshotModeFilesystem}
	if err := h.store.CreateSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	h.do("POST", "/v1/pools", `{"id":"p1","template_id":"default","snapshot_id":"`+snap.ID+`"}`).
		expectError(t, 400, "invalid", "snapshot_id", "ready")
	if err := h.store.SetSnapshotReady(ctx, snap.ID, json.RawMessage(`{}`), 1); err != nil {
		t.Fatal(err)
	}
	memoryWorkspace(t, h, wire.PhaseRunning)
	h.do("POST", "/v1/pools", `{"id":"p1","template_id":"mem","snapshot_id":"`+snap.ID+`"}`).
		expectError(t, 400, "invalid", "snapshot_id", "backend memory")
	h.do("POST", "/v1/pools", `{"id":"p1","template_id":"default","snapshot_id":"`+models.NewID("snap")+`"}`).
		expectError(t, 404, "not_found", "snapshot_id", "not found")
	h.do("POST", "/v1/pools", `{"id":"p1","template_id":"default","size":1,"snapshot_id":"`+snap.ID+`"}`).expect(t, 201)
	p, err := h.store.GetPool(ctx, "p1")
	if err != nil || p.SnapshotID != snap.ID {
		t.Fatalf("pool = %+v, %v", p, err)
	}
}

// TestDeleteSnapshotOfPool: a snapshot a pool fills from is not deleted:
// 409 naming the pool, and the pool still fills from a ready snapshot;
// once the pool is gone the delete goes ahead.
func TestDeleteSnapshotOfPool(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	src := h.workspace(wire.PhaseRunning)
	snap := &wire.Snapshot{ID: models.NewID("snap"), WorkspaceID: src.ID, TemplateID: src.TemplateID,
		ProviderID: src.ProviderID, Backend: src.Backend, Mode: wire.SnapshotModeFilesystem}
	if err := h.store.CreateSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if err := h.store.SetSnapshotReady(ctx, snap.ID, json.RawMessage(`{}`), 1); err != nil {
		t.Fatal(err)
	}
	if err := h.store.CreatePool(ctx, &wire.Pool{ID: "from-snap", TemplateID: wire.DefaultTemplateID, Size: 1, SnapshotID: snap.ID}); err != nil {
		t.Fatal(err)
	}
	h.do("DELETE", "/v1/snapshots/"+snap.ID, nil).expectError(t, 409, "conflict", "", "pool from-snap fills from it")
	if got, err := h.store.GetSnapshot(ctx, snap.ID); err != nil || got.Phase != wire.SnapshotReady {
		t.Fatalf("snapshot after the refused delete = %+v, %v; want ready", got, err)
	}
	if err := h.store.DeletePool(ctx, "from-snap"); err != nil {
		t.Fatal(err)
	}
	var got wire.Snapshot
	h.do("DELETE", "/v1/snapshots/"+snap.ID, nil).expect(t, 202).decode(t, &got)
	if got.Phase != wire.SnapshotDeleting {
		t.Fatalf("delete once no pool names it = %+v", got)
	}
}
