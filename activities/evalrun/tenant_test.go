package evalrun

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// tenantLifecycle creates rows in the tenant the request names, as
// starter.Starter does, and records the requests.
type tenantLifecycle struct {
	*evalLifecycle
	mu   sync.Mutex
	reqs []activities.CreateWorkspaceRequest
}

func (l *tenantLifecycle) CreateWorkspace(ctx context.Context, req activities.CreateWorkspaceRequest) (*wire.Workspace, error) {
	l.mu.Lock()
	l.reqs = append(l.reqs, req)
	l.mu.Unlock()
	w := &wire.Workspace{ID: models.NewID("ws"), TenantID: req.TenantID, TemplateID: req.TemplateID, ProviderID: "mem",
		Backend: memory.Type, Phase: wire.PhaseRunning, Labels: req.Labels, PoolID: req.PoolID}
	if req.PoolID != "" {
		w.PoolState = wire.PoolIdle
	}
	if err := l.r.store.CreateWorkspace(ctx, w); err != nil {
		return nil, err
	}
	return w, nil
}

// An eval run's workspaces belong to its suite's tenant, and count
// against its quota.
func TestRunWorkspacesInSuiteTenant(t *testing.T) {
	r := newEvalRig(t)
	ctx := context.Background()
	lc := &tenantLifecycle{evalLifecycle: r.lc}
	r.a.Lifecycle = lc
	if err := r.store.CreateTenant(ctx, &wire.Tenant{ID: "acme"}); err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(eval.SuiteSpec{ID: "acme-suite", TemplateID: "et"})
	raw, _ := json.Marshal(eval.Case{ID: "a", Command: script("true")})
	if err := r.store.CreateSuite(ctx, &wire.Suite{ID: "acme-suite", TenantID: "acme", TemplateID: "et", Spec: spec},
		[]wire.SuiteCase{{SuiteID: "acme-suite", CaseID: "a", Spec: raw}}); err != nil {
		t.Fatal(err)
	}
	run, err := CreateRun(ctx, r.store, CreateRunSpec{RunID: "run-acme", SuiteID: "acme-suite", Trigger: wire.TriggerUser, TriggeredBy: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	if run.TenantID != "acme" {
		t.Errorf("run tenant %q, want acme", run.TenantID)
	}
	ws := r.acquire(t, "run-acme", 0)
	w, err := r.store.GetWorkspace(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if w.TenantID != "acme" || len(lc.reqs) != 1 || lc.reqs[0].TenantID != "acme" {
		t.Errorf("run workspace tenant %q, requests %+v; want acme", w.TenantID, lc.reqs)
	}
}
