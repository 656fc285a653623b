package starter

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// Every workflow Primer starts carries its tenant as PrimerTenant: a
// workspace's (from its row, through WorkspaceInput), a pool's, a run's
// and a schedule's runs; a resource without one is the default tenant's.
func TestTenantSearchAttribute(t *testing.T) {
	s := &Starter{}
	ws := func(tenant string) temporal.SearchAttributes {
		in := s.WorkspaceInput(&wire.Workspace{ID: "ws-1", TenantID: tenant, TemplateID: "t"}, nil)
		return workflows.StartOptions(in).TypedSearchAttributes
	}
	for _, tc := range []struct {
		name  string
		attrs temporal.SearchAttributes
		want  string
	}{
		{"workspace", ws("acme"), "acme"},
		{"workspace without tenant", ws(""), wire.DefaultTenantID},
		{"pool", workflows.PoolStartOptions("warm", "acme").TypedSearchAttributes, "acme"},
		{"pool without tenant", workflows.PoolStartOptions("warm", "").TypedSearchAttributes, wire.DefaultTenantID},
		{"run", workflows.RunStartOptions("acme", "nightly", "run-1").TypedSearchAttributes, "acme"},
		{"run without tenant", workflows.RunStartOptions("", "nightly", "run-1").TypedSearchAttributes, wire.DefaultTenantID},
		{"scheduled run", scheduleAction("nightly", "acme").TypedSearchAttributes, "acme"},
	} {
		got, ok := tc.attrs.GetKeyword(workflows.SearchAttrTenant)
		if !ok || got != tc.want {
			t.Errorf("%s: PrimerTenant = %q (set %v), want %q", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := workflows.SearchAttributes()[workflows.SearchAttrTenant.GetName()]; !ok {
		t.Errorf("%s is not registered", workflows.SearchAttrTenant.GetName())
	}
}

// templateLimits reads the limits of container and kubernetes templates
// from their documents; a template without them has none.
func TestTemplateLimits(t *testing.T) {
	for _, tc := range []struct {
		doc string
		cpu float64
		mem int64
	}{
		{`{"kind":"container","image":"x","cpu_cores":1.5,"memory_bytes":536870912}`, 1.5, 536870912},
		{`{"kind":"kubernetes","image":"x","cpu_limit":"500m","memory_limit":"1Gi"}`, 0.5, 1 << 30},
		{`{"kind":"kubernetes","image":"x","cpu_limit":"2","memory_limit":"512M"}`, 2, 512e6},
		{`{"kind":"container","image":"x","cpu_cores":2}`, 2, 0},
		{`{"kind":"vm","cpu":1.5,"memory":"2Gi"}`, 1.5, 2 << 30},
		{`{"kind":"local"}`, 0, 0},
		{``, 0, 0},
		{`{"kind":"kubernetes","cpu_limit":"lots"}`, 0, 0},
	} {
		cpu, mem := templateLimits(json.RawMessage(tc.doc))
		if cpu != tc.cpu || mem != tc.mem {
			t.Errorf("templateLimits(%s) = %v, %d; want %v, %d", tc.doc, cpu, mem, tc.cpu, tc.mem)
		}
	}
}

// The starter puts a workspace, a pool's workflow and a run in the
// caller's (or the suite's) tenant: the row holds the tenant and the
// template's limits, the workflow its PrimerTenant, and the tenant's quota
// refuses a create past it before any workflow starts.
func TestStarterTenant(t *testing.T) {
	s, tc := starterWithSuite(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Store.CreateTenant(ctx, &wire.Tenant{ID: "acme", Quota: wire.Quota{MaxWorkspaces: 1, MaxCPUCores: 4, MaxMemoryBytes: 1 << 30}}))
	must(s.Store.CreateProvider(ctx, &wire.Provider{ID: "docker", TenantID: "acme", Provider: wire.BackendContainer}))
	must(s.Store.CreateTemplate(ctx, &wire.Template{ID: "box", TenantID: "acme", ProviderID: "docker",
		Backend: json.RawMessage(`{"kind":"container","image":"x","cpu_cores":1.5,"memory_bytes":536870912}`)}))
	must(s.Store.CreatePool(ctx, &wire.Pool{ID: "warm", TenantID: "acme", TemplateID: "box"}))
	spec, _ := json.Marshal(eval.SuiteSpec{ID: "acme-suite", TemplateID: "box"})
	raw, _ := json.Marshal(eval.Case{ID: "one", Command: eval.Command{Script: "true"}})
	must(s.Store.CreateSuite(ctx, &wire.Suite{ID: "acme-suite", TenantID: "acme", TemplateID: "box", Spec: spec},
		[]wire.SuiteCase{{SuiteID: "acme-suite", CaseID: "one", Spec: raw}}))

	started := map[string]client.StartWorkflowOptions{}
	record := func(args mock.Arguments) {
		o := args.Get(1).(client.StartWorkflowOptions)
		started[o.ID] = o
	}
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).Run(record).Return(&mocks.WorkflowRun{}, nil)

	w, err := s.CreateWorkspace(ctx, activities.CreateWorkspaceRequest{TenantID: "acme", TemplateID: "box"})
	must(err)
	got, err := s.Store.GetWorkspace(ctx, w.ID)
	must(err)
	if got.TenantID != "acme" || got.CPUCores != 1.5 || got.MemoryBytes != 536870912 {
		t.Errorf("stored workspace: tenant %q cpu %v memory %d; want acme, 1.5, 536870912", got.TenantID, got.CPUCores, got.MemoryBytes)
	}
	_, err = s.CreateWorkspace(ctx, activities.CreateWorkspaceRequest{TenantID: "acme", TemplateID: "box"})
	if !errs.Is(err, errs.Exhausted) || !strings.Contains(err.Error(), "tenant acme: quota max_workspaces: limit 1, in use 1") {
		t.Errorf("create past the quota = %v, want exhausted naming max_workspaces", err)
	}
	def, err := s.CreateWorkspace(ctx, activities.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
	must(err)
	if def.TenantID != wire.DefaultTenantID {
		t.Errorf("workspace without a tenant: %q, want %q", def.TenantID, wire.DefaultTenantID)
	}
	must(s.StartPool(ctx, "warm"))
	run, err := s.CreateRun(ctx, CreateRunRequest{SuiteID: "acme-suite", TriggeredBy: "an admin of another tenant"})
	must(err)
	if run.TenantID != "acme" {
		t.Errorf("run of an acme suite: tenant %q, want acme", run.TenantID)
	}

	for id, want := range map[string]string{
		workflows.WorkflowID(w.ID):       "acme",
		workflows.WorkflowID(def.ID):     wire.DefaultTenantID,
		workflows.PoolWorkflowID("warm"): "acme",
		run.ID:                           "acme",
	} {
		o, ok := started[id]
		if !ok {
			t.Errorf("workflow %s not started", id)
			continue
		}
		if got, _ := o.TypedSearchAttributes.GetKeyword(workflows.SearchAttrTenant); got != want {
			t.Errorf("workflow %s: PrimerTenant %q, want %q", id, got, want)
		}
	}
	if len(started) != 4 {
		t.Errorf("%d workflows started, want 4 (none for the refused create)", len(started))
	}
}
