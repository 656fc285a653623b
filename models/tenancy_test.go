package models

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/primerhq/primer/wire"
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
		must(t, s.CreateTenant(ctx, &wire.Tenant{ID: id}))
	}
	cfg := json.RawMessage(`{"root_path":"/tmp/x"}`)
	backend := json.RawMessage(`{"kind":"local"}`)
	for _, tn := range []string{"a", "b"} {
		must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p-" + tn, TenantID: tn, Provider: wire.BackendLocal, Config: cfg}))
		must(t, s.CreateTemplate(ctx, &wire.Template{ID: "t-" + tn, TenantID: tn, ProviderID: "p-" + tn, Backend: backend}))
		must(t, s.CreatePool(ctx, &wire.Pool{ID: "pool-" + tn, TenantID: tn, TemplateID: "t-" + tn, Size: 1}))
		must(t, s.CreateWorkspace(ctx, &wire.Workspace{ID: "ws-" + tn, TenantID: tn, TemplateID: "t-" + tn,
			ProviderID: "p-" + tn, Backend: wire.BackendLocal, Phase: wire.PhaseRunning}))
		// The session's tenant comes from its workspace, whatever the caller says.
		must(t, s.CreateSession(ctx, &wire.Session{ID: "ses-" + tn, WorkspaceID: "ws-" + tn, TenantID: "b"}))
		must(t, s.CreateSuite(ctx, &wire.Suite{ID: "s-" + tn, TenantID: tn, TemplateID: "t-" + tn}, newSuiteCases(1)))
		must(t, s.CreateRun(ctx, &wire.Run{ID: "r-" + tn, TenantID: tn, SuiteID: "s-" + tn, Trigger: wire.TriggerUser}, newResults(1)))
	}
	must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p-shared", TenantID: "a", Shared: true, Provider: wire.BackendLocal, Config: cfg}))

	check := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	ps, err := s.ListProviders(ctx, "b")
	must(t, err)
	check("providers of b", idsOf(ps, func(p wire.Provider) string { return p.ID }), "p-b", "p-shared")
	ps, err = s.ListProviders(ctx, "")
	must(t, err)
	check("providers of all", idsOf(ps, func(p wire.Provider) string { return p.ID }), "p-a", "p-b", "p-shared")
	ts, err := s.ListTemplates(ctx, "", "a")
	must(t, err)
	check("templates of a", idsOf(ts, func(x wire.Template) string { return x.ID }), "t-a")
	ts, err = s.ListTemplates(ctx, "p-b", "a")
	must(t, err)
	check("templates of a on p-b", idsOf(ts, func(x wire.Template) string { return x.ID }))
	pools, err := s.ListPools(ctx, "", "b")
	must(t, err)
	check("pools of b", idsOf(pools, func(x wire.Pool) string { return x.ID }), "pool-b")
	pools, err = s.ListPools(ctx, "", "")
	must(t, err)
	check("pools of all", idsOf(pools, func(x wire.Pool) string { return x.ID }), "pool-a", "pool-b")
	ws, err := s.ListWorkspaces(ctx, WorkspaceFilter{TenantID: "a"})
	must(t, err)
	check("workspaces of a", idsOf(ws, func(x wire.Workspace) string { return x.ID }), "ws-a")
	ss, err := s.ListSessions(ctx, SessionFilter{TenantID: "a"})
	must(t, err)
	check("sessions of a", idsOf(ss, func(x wire.Session) string { return x.ID }), "ses-a")
	sus, err := s.ListSuites(ctx, "b")
	must(t, err)
	check("suites of b", idsOf(sus, func(x wire.Suite) string { return x.ID }), "s-b")
	rs, err := s.ListRuns(ctx, RunFilter{TenantID: "b"})
	must(t, err)
	check("runs of b", idsOf(rs, func(x wire.Run) string { return x.ID }), "r-b")
	rs, err = s.ListRuns(ctx, RunFilter{})
	must(t, err)
	check("runs of all", idsOf(rs, func(x wire.Run) string { return x.ID }), "r-b", "r-a")

	// An event takes its workspace's tenant, and keeps it once the row is gone.
	e := &wire.Event{WorkspaceID: "ws-a", Type: wire.EventPhaseChanged}
	must(t, s.AppendEvent(ctx, e))
	must(t, s.DeleteWorkspace(ctx, "ws-a"))
	after := &wire.Event{WorkspaceID: "ws-a", Type: wire.EventDestroyed, TenantID: wire.DefaultTenantID}
	must(t, s.AppendEvent(ctx, after))
	evs, err := s.ListEvents(ctx, "ws-a", 0, 0)
	must(t, err)
	check("event tenants", idsOf(evs, func(x wire.Event) string { return x.TenantID }), "a", "a")
	got, err := s.GetSession(ctx, "ses-a")
	must(t, err)
	if got.TenantID != "a" {
		t.Errorf("session of ws-a has tenant %q, want a", got.TenantID)
	}
}
