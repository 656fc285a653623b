package models

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// TestTenantScope checks that every list the API serves filters by tenant
// in the query (the API passes the caller's tenant; internal callers pass
// "" and see everything), that shared providers show in every tenant's
// list, and that sessions and events take their workspace's tenant.
func TestTenantScope(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			testTenantScope(t, t.Context(), d.open(t))
		})
	}
}

func testTenantScope(t *testing.T, ctx context.Context, s *Store) {
	for _, id := range []string{"a", "b"} {
		must(t, s.CreateTenant(ctx, &Tenant{ID: id}))
	}
	cfg := json.RawMessage(`{"root_path":"/tmp/x"}`)
	backend := json.RawMessage(`{"kind":"local"}`)
	for _, tn := range []string{"a", "b"} {
		must(t, s.CreateProvider(ctx, &Provider{ID: "p-" + tn, TenantID: tn, Provider: BackendLocal, Config: cfg}))
		must(t, s.CreateTemplate(ctx, &Template{ID: "t-" + tn, TenantID: tn, ProviderID: "p-" + tn, Backend: backend}))
		must(t, s.CreatePool(ctx, &Pool{ID: "pool-" + tn, TenantID: tn, TemplateID: "t-" + tn, Size: 1}))
		must(t, s.CreateWorkspace(ctx, &Workspace{ID: "ws-" + tn, TenantID: tn, TemplateID: "t-" + tn,
			ProviderID: "p-" + tn, Backend: BackendLocal, Phase: PhaseRunning}))
		// The session's tenant comes from its workspace, whatever the caller says.
		must(t, s.CreateSession(ctx, &Session{ID: "ses-" + tn, WorkspaceID: "ws-" + tn, TenantID: "b"}))
		must(t, s.CreateSuite(ctx, &Suite{ID: "s-" + tn, TenantID: tn, TemplateID: "t-" + tn}, newSuiteCases(1)))
		must(t, s.CreateRun(ctx, &Run{ID: "r-" + tn, TenantID: tn, SuiteID: "s-" + tn, Trigger: TriggerUser}, newResults(1)))
	}
	must(t, s.CreateProvider(ctx, &Provider{ID: "p-shared", TenantID: "a", Shared: true, Provider: BackendLocal, Config: cfg}))

	check := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	ps, err := s.ListProviders(ctx, "b")
	must(t, err)
	check("providers of b", idsOf(ps, func(p Provider) string { return p.ID }), "p-b", "p-shared")
	ps, err = s.ListProviders(ctx, "")
	must(t, err)
	check("providers of all", idsOf(ps, func(p Provider) string { return p.ID }), "p-a", "p-b", "p-shared")
	ts, err := s.ListTemplates(ctx, "", "a")
	must(t, err)
	check("templates of a", idsOf(ts, func(x Template) string { return x.ID }), "t-a")
	ts, err = s.ListTemplates(ctx, "p-b", "a")
	must(t, err)
	check("templates of a on p-b", idsOf(ts, func(x Template) string { return x.ID }))
	pools, err := s.ListPools(ctx, "", "b")
	must(t, err)
	check("pools of b", idsOf(pools, func(x Pool) string { return x.ID }), "pool-b")
	pools, err = s.ListPools(ctx, "", "")
	must(t, err)
	check("pools of all", idsOf(pools, func(x Pool) string { return x.ID }), "pool-a", "pool-b")
	ws, err := s.ListWorkspaces(ctx, WorkspaceFilter{TenantID: "a"})
	must(t, err)
	check("workspaces of a", idsOf(ws, func(x Workspace) string { return x.ID }), "ws-a")
	ss, err := s.ListSessions(ctx, SessionFilter{TenantID: "a"})
	must(t, err)
	check("sessions of a", idsOf(ss, func(x Session) string { return x.ID }), "ses-a")
	sus, err := s.ListSuites(ctx, "b")
	must(t, err)
	check("suites of b", idsOf(sus, func(x Suite) string { return x.ID }), "s-b")
	rs, err := s.ListRuns(ctx, RunFilter{TenantID: "b"})
	must(t, err)
	check("runs of b", idsOf(rs, func(x Run) string { return x.ID }), "r-b")
	rs, err = s.ListRuns(ctx, RunFilter{})
	must(t, err)
	check("runs of all", idsOf(rs, func(x Run) string { return x.ID }), "r-b", "r-a")

	// An event takes its workspace's tenant, and keeps it once the row is gone.
	e := &Event{WorkspaceID: "ws-a", Type: EventPhaseChanged}
	must(t, s.AppendEvent(ctx, e))
	must(t, s.DeleteWorkspace(ctx, "ws-a"))
	after := &Event{WorkspaceID: "ws-a", Type: EventDestroyed, TenantID: DefaultTenantID}
	must(t, s.AppendEvent(ctx, after))
	evs, err := s.ListEvents(ctx, "ws-a", 0, 0)
	must(t, err)
	check("event tenants", idsOf(evs, func(x Event) string { return x.TenantID }), "a", "a")
	got, err := s.GetSession(ctx, "ses-a")
	must(t, err)
	if got.TenantID != "a" {
		t.Errorf("session of ws-a has tenant %q, want a", got.TenantID)
	}
}
