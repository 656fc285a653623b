package models

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/wire"
)

// storeCase is one behaviour of the Store, run against every dialect on a
// fresh, empty database.
type storeCase struct {
	name string
	run  func(t *testing.T, ctx context.Context, s *Store)
}

// dialects open a fresh Store per case.
var dialects = []struct {
	name string
	open func(t *testing.T) *Store
}{
	{DialectSQLite, openTestSQLite},
	{DialectPostgres, openTestPostgres},
}

func TestStore(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			for _, tc := range storeCases {
				t.Run(tc.name, func(t *testing.T) {
					s := d.open(t)
					if got := s.Dialect(); got != d.name {
						t.Fatalf("Dialect() = %q, want %q", got, d.name)
					}
					tc.run(t, t.Context(), s)
				})
			}
		})
	}
}

// openTestSQLite opens a SQLite file in a directory that does not exist yet,
// so Open must create it.
func openTestSQLite(t *testing.T) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data", "primer.db")
	s, err := Open(t.Context(), Config{SQLitePath: path})
	if err != nil {
		t.Fatalf("Open(sqlite %s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("sqlite file not created: %v", err)
	}
	return s
}

// openTestPostgres opens a Store on a fresh schema of its own in the
// database of PRIMER_TEST_DATABASE_URL (testenv.PostgresURL).
func openTestPostgres(t *testing.T) *Store {
	t.Helper()
	url := testenv.PostgresURL(t)
	s, err := Open(t.Context(), Config{URL: url})
	if err != nil {
		t.Fatalf("Open(postgres): %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var storeCases = []storeCase{
	{"providers", testProviders},
	{"templates", testTemplates},
	{"template in use", testTemplateInUse},
	{"workspaces", testWorkspaces},
	{"previews", testPreviews},
	{"workspace filters", testWorkspaceFilters},
	{"workspace phase and runtime", testWorkspacePhaseRuntime},
	{"sessions", testSessions},
	{"delete workspace ends sessions", testDeleteWorkspace},
	{"events", testEvents},
	{"ensure defaults", testEnsureDefaults},
	{"concurrent writes", testConcurrentWrites},
	{"json round trip", testJSONRoundTrip},
	{"no orphans under concurrency", testNoOrphans},
	{"escalated phase", testEscalatedPhase},
	{"template generation", testTemplateGeneration},
	{"resume lost sessions", testResumeLostSessions},
	{"resume lost sessions concurrently", testResumeConcurrent},
	{"pools", testPools},
	{"pool workspaces", testPoolWorkspaces},
	{"lease workspace", testLeaseWorkspace},
	{"lease workspace concurrently", testLeaseConcurrent},
	{"set pool state", testSetPoolState},
	{"detach pool", testDetachPool},
	{"lifetimes", testLifetimes},
	{"lease with labels", testLeaseLabelled},
}

func testProviders(t *testing.T, ctx context.Context, s *Store) {
	for _, id := range []string{"zeta", "alpha"} {
		p := &wire.Provider{ID: id, Provider: wire.BackendWorktree, Config: json.RawMessage(`{"kind":"worktree","root_path":"/srv/` + id + `"}`)}
		must(t, s.CreateProvider(ctx, p))
		if p.CreatedAt.IsZero() || p.UpdatedAt.IsZero() {
			t.Errorf("CreateProvider(%s) left timestamps zero: %+v", id, p)
		}
	}
	wantErr(t, s.CreateProvider(ctx, &wire.Provider{ID: "alpha", Provider: wire.BackendLocal}), errs.Conflict, "provider alpha: already exists")
	wantField(t, s.CreateProvider(ctx, &wire.Provider{ID: "bad", Provider: wire.BackendLocal, Config: json.RawMessage(`{"kind":`)}), "config")
	wantField(t, s.CreateProvider(ctx, &wire.Provider{Provider: wire.BackendLocal}), "id")

	got, err := s.GetProvider(ctx, "alpha")
	must(t, err)
	if got.Provider != wire.BackendWorktree {
		t.Errorf("provider = %q, want %q", got.Provider, wire.BackendWorktree)
	}
	jsonEq(t, got.Config, `{"kind":"worktree","root_path":"/srv/alpha"}`)
	_, err = s.GetProvider(ctx, "nope")
	wantErr(t, err, errs.NotFound, "provider nope: not found")

	list, err := s.ListProviders(ctx, "")
	must(t, err)
	if ids := idsOf(list, func(p wire.Provider) string { return p.ID }); !slices.Equal(ids, []string{"alpha", "zeta"}) {
		t.Errorf("ListProviders ids = %v, want [alpha zeta]", ids)
	}

	time.Sleep(2 * time.Millisecond) // so UpdatedAt can move
	upd := &wire.Provider{ID: "alpha", Provider: wire.BackendLocal, Config: json.RawMessage(`{"kind":"local","root_path":"/new"}`)}
	must(t, s.UpdateProvider(ctx, upd))
	if !upd.CreatedAt.Equal(got.CreatedAt) || !upd.UpdatedAt.After(got.UpdatedAt) {
		t.Errorf("UpdateProvider timestamps: created %v -> %v, updated %v -> %v; want created kept, updated later",
			got.CreatedAt, upd.CreatedAt, got.UpdatedAt, upd.UpdatedAt)
	}
	got, err = s.GetProvider(ctx, "alpha")
	must(t, err)
	if got.Provider != wire.BackendLocal {
		t.Errorf("after update provider = %q, want local", got.Provider)
	}
	jsonEq(t, got.Config, `{"kind":"local","root_path":"/new"}`)
	wantErr(t, s.UpdateProvider(ctx, &wire.Provider{ID: "nope", Provider: wire.BackendLocal}), errs.NotFound, "provider nope: not found")

	must(t, s.DeleteProvider(ctx, "alpha"))
	_, err = s.GetProvider(ctx, "alpha")
	wantErr(t, err, errs.NotFound, "")
	wantErr(t, s.DeleteProvider(ctx, "alpha"), errs.NotFound, "provider alpha: not found")
}

func testTemplates(t *testing.T, ctx context.Context, s *Store) {
	err := s.CreateTemplate(ctx, &wire.Template{ID: "t1", ProviderID: "ghost", Backend: json.RawMessage(`{"kind":"local"}`)})
	wantField(t, err, "provider_id")
	if !strings.Contains(err.Error(), "ghost") {
		t.Errorf("error %q does not name the missing provider", err)
	}

	for _, id := range []string{"p1", "p2"} {
		must(t, s.CreateProvider(ctx, &wire.Provider{ID: id, Provider: wire.BackendLocal}))
	}
	for _, tp := range []*wire.Template{
		{ID: "t2", ProviderID: "p1", Description: "second", Backend: json.RawMessage(`{"kind":"local","env":{"A":"1"}}`)},
		{ID: "t1", ProviderID: "p1", Backend: json.RawMessage(`{"kind":"local"}`)},
		{ID: "t3", ProviderID: "p2", Backend: json.RawMessage(`{"kind":"local"}`)},
	} {
		must(t, s.CreateTemplate(ctx, tp))
	}
	wantErr(t, s.CreateTemplate(ctx, &wire.Template{ID: "t1", ProviderID: "p1"}), errs.Conflict, "template t1: already exists")
	wantField(t, s.CreateTemplate(ctx, &wire.Template{ID: "t9", ProviderID: "p1", Backend: json.RawMessage(`nope`)}), "backend")

	got, err := s.GetTemplate(ctx, "t2")
	must(t, err)
	if got.ProviderID != "p1" || got.Description != "second" {
		t.Errorf("GetTemplate(t2) = %+v", got)
	}
	jsonEq(t, got.Backend, `{"kind":"local","env":{"A":"1"}}`)
	_, err = s.GetTemplate(ctx, "nope")
	wantErr(t, err, errs.NotFound, "template nope: not found")

	for _, tc := range []struct {
		provider string
		want     []string
	}{
		{"", []string{"t1", "t2", "t3"}},
		{"p1", []string{"t1", "t2"}},
		{"p2", []string{"t3"}},
		{"p3", []string{}},
	} {
		list, err := s.ListTemplates(ctx, tc.provider, "")
		must(t, err)
		if ids := idsOf(list, func(t wire.Template) string { return t.ID }); !slices.Equal(ids, tc.want) {
			t.Errorf("ListTemplates(%q) = %v, want %v", tc.provider, ids, tc.want)
		}
	}

	wantField(t, s.UpdateTemplate(ctx, &wire.Template{ID: "t1", ProviderID: "ghost"}), "provider_id")
	wantErr(t, s.UpdateTemplate(ctx, &wire.Template{ID: "nope", ProviderID: "p1"}), errs.NotFound, "template nope: not found")
	upd := &wire.Template{ID: "t1", ProviderID: "p2", Description: "moved", Backend: json.RawMessage(`{"kind":"worktree"}`)}
	must(t, s.UpdateTemplate(ctx, upd))
	if upd.CreatedAt.IsZero() {
		t.Errorf("UpdateTemplate did not load created_at")
	}
	got, err = s.GetTemplate(ctx, "t1")
	must(t, err)
	if got.ProviderID != "p2" || got.Description != "moved" {
		t.Errorf("after update = %+v", got)
	}
	jsonEq(t, got.Backend, `{"kind":"worktree"}`)

	wantErr(t, s.DeleteProvider(ctx, "p2"), errs.Conflict, "provider p2: in use by template t1")
	for _, id := range []string{"t1", "t3"} {
		must(t, s.DeleteTemplate(ctx, id))
	}
	wantErr(t, s.DeleteTemplate(ctx, "t1"), errs.NotFound, "template t1: not found")
	must(t, s.DeleteProvider(ctx, "p2"))
}

func testTemplateInUse(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendLocal}))
	must(t, s.CreateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p"}))
	w := newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, w))
	wantErr(t, s.DeleteTemplate(ctx, "t"), errs.Conflict, "template t: in use by workspace "+w.ID)
	wantErr(t, s.DeleteProvider(ctx, "p"), errs.Conflict, "provider p: in use by template t")
	must(t, s.DeleteWorkspace(ctx, w.ID))
	must(t, s.DeleteTemplate(ctx, "t"))
	must(t, s.DeleteProvider(ctx, "p"))
}

func testWorkspaces(t *testing.T, ctx context.Context, s *Store) {
	w := newWorkspace("t", "p")
	w.ID = ""
	must(t, s.CreateWorkspace(ctx, w))
	if !regexp.MustCompile(`^ws-[0-9a-f]{16}$`).MatchString(w.ID) {
		t.Errorf("generated id %q, want ws-<16 hex>", w.ID)
	}
	dup := newWorkspace("t", "p")
	dup.ID = w.ID
	wantErr(t, s.CreateWorkspace(ctx, dup), errs.Conflict, "workspace "+w.ID+": already exists")

	got, err := s.GetWorkspace(ctx, w.ID)
	must(t, err)
	if got.TemplateID != "t" || got.ProviderID != "p" || got.Phase != wire.PhasePending || got.Backend != wire.BackendLocal || got.WorkflowID != w.WorkflowID {
		t.Errorf("GetWorkspace = %+v", got)
	}
	if !got.CreatedAt.Equal(w.CreatedAt) {
		t.Errorf("created_at read back %v, written %v", got.CreatedAt, w.CreatedAt)
	}
	_, err = s.GetWorkspace(ctx, "ws-1")
	wantErr(t, err, errs.NotFound, "workspace ws-1: not found")
	wantErr(t, s.DeleteWorkspace(ctx, "ws-1"), errs.NotFound, "workspace ws-1: not found")
}

func testWorkspaceFilters(t *testing.T, ctx context.Context, s *Store) {
	// Mixed zones: SQLite compares timestamps as text, so the store must
	// normalise them for newest-first to hold.
	base := time.Now().Truncate(time.Second).Add(-time.Hour)
	zones := []*time.Location{time.UTC, time.FixedZone("east", 5*3600), time.FixedZone("west", -8*3600)}
	specs := []struct{ id, template, provider, backend, phase string }{
		{"ws-a", "t1", "p1", wire.BackendLocal, wire.PhasePending},
		{"ws-b", "t1", "p1", wire.BackendLocal, wire.PhaseRunning},
		{"ws-c", "t2", "p2", wire.BackendWorktree, wire.PhaseRunning},
		{"ws-d", "t2", "p2", wire.BackendWorktree, wire.PhaseFailed},
	}
	for i, sp := range specs {
		w := &wire.Workspace{ID: sp.id, TemplateID: sp.template, ProviderID: sp.provider, Backend: sp.backend, Phase: sp.phase,
			CreatedAt: base.Add(time.Duration(i) * time.Minute).In(zones[i%len(zones)])}
		must(t, s.CreateWorkspace(ctx, w))
	}
	for _, tc := range []struct {
		name string
		f    WorkspaceFilter
		want []string
	}{
		{"all newest first", WorkspaceFilter{}, []string{"ws-d", "ws-c", "ws-b", "ws-a"}},
		{"template", WorkspaceFilter{TemplateID: "t1"}, []string{"ws-b", "ws-a"}},
		{"provider", WorkspaceFilter{ProviderID: "p2"}, []string{"ws-d", "ws-c"}},
		{"backend", WorkspaceFilter{Backend: wire.BackendWorktree}, []string{"ws-d", "ws-c"}},
		{"phase", WorkspaceFilter{Phase: wire.PhaseRunning}, []string{"ws-c", "ws-b"}},
		{"combined", WorkspaceFilter{TemplateID: "t2", Phase: wire.PhaseRunning}, []string{"ws-c"}},
		{"no match", WorkspaceFilter{Phase: wire.PhaseTerminating}, []string{}},
		{"limit", WorkspaceFilter{Limit: 3}, []string{"ws-d", "ws-c", "ws-b"}},
		{"filter and limit", WorkspaceFilter{Phase: wire.PhaseRunning, Limit: 1}, []string{"ws-c"}},
	} {
		list, err := s.ListWorkspaces(ctx, tc.f)
		must(t, err)
		if ids := idsOf(list, func(w wire.Workspace) string { return w.ID }); !slices.Equal(ids, tc.want) {
			t.Errorf("%s: ListWorkspaces(%+v) = %v, want %v", tc.name, tc.f, ids, tc.want)
		}
	}
}

func testWorkspacePhaseRuntime(t *testing.T, ctx context.Context, s *Store) {
	w := newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, w))
	time.Sleep(2 * time.Millisecond)
	must(t, s.SetWorkspacePhase(ctx, w.ID, wire.PhaseFailed, "3 probes missed"))
	got, err := s.GetWorkspace(ctx, w.ID)
	must(t, err)
	if got.Phase != wire.PhaseFailed || got.Reason != "3 probes missed" || !got.UpdatedAt.After(w.UpdatedAt) {
		t.Errorf("after SetWorkspacePhase: phase %q reason %q updated %v (was %v)", got.Phase, got.Reason, got.UpdatedAt, w.UpdatedAt)
	}
	wantErr(t, s.SetWorkspacePhase(ctx, "ws-1", wire.PhaseRunning, ""), errs.NotFound, "workspace ws-1: not found")
	wantField(t, s.SetWorkspacePhase(ctx, w.ID, "exploded", ""), "phase")

	token := NewToken()
	handle := []byte(`{"backend":"local","dir":"/srv/ws","pid":42}`)
	must(t, s.SetWorkspaceRuntime(ctx, w.ID, handle, "/srv/ws", token))
	got, err = s.GetWorkspace(ctx, w.ID)
	must(t, err)
	if got.Path != "/srv/ws" || got.RuntimeToken != token || got.Phase != wire.PhaseFailed {
		t.Errorf("after SetWorkspaceRuntime: path %q token set %v phase %q", got.Path, got.RuntimeToken == token, got.Phase)
	}
	jsonEq(t, got.Handle, string(handle))
	// The token and handle never leave through JSON (API responses).
	out, err := json.Marshal(got)
	must(t, err)
	if bytes.Contains(out, []byte(token)) || bytes.Contains(out, []byte("pid")) {
		t.Errorf("workspace JSON leaks token or handle: %s", out)
	}
	wantErr(t, s.SetWorkspaceRuntime(ctx, "ws-1", nil, "", ""), errs.NotFound, "workspace ws-1: not found")
	wantField(t, s.SetWorkspaceRuntime(ctx, w.ID, []byte("{"), "", ""), "handle")
}

func testSessions(t *testing.T, ctx context.Context, s *Store) {
	w := newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, w))

	err := s.CreateSession(ctx, &wire.Session{WorkspaceID: "ws-gone"})
	wantErr(t, err, errs.NotFound, "workspace ws-gone: not found")
	if f := errs.FieldOf(err); f != "workspace_id" {
		t.Errorf("FieldOf = %q, want workspace_id", f)
	}

	var ids []string
	for i := range 3 {
		ses := &wire.Session{WorkspaceID: w.ID, Agent: "claude", Status: wire.SessionEnded, EndReason: "stale",
			CreatedAt: time.Now().UTC().Add(time.Duration(i-10) * time.Second)}
		must(t, s.CreateSession(ctx, ses))
		if !regexp.MustCompile(`^ses-[0-9a-f]{16}$`).MatchString(ses.ID) || ses.Status != wire.SessionOpen || ses.EndReason != "" {
			t.Errorf("CreateSession = %+v, want generated ses- id, open, no reason", ses)
		}
		ids = append(ids, ses.ID)
	}
	wantErr(t, s.CreateSession(ctx, &wire.Session{ID: ids[0], WorkspaceID: w.ID}), errs.Conflict, "session "+ids[0]+": already exists")
	_, err = s.GetSession(ctx, "ses-1")
	wantErr(t, err, errs.NotFound, "session ses-1: not found")

	ended, err := s.EndSession(ctx, ids[0], wire.ReasonEndedByUser)
	must(t, err)
	if ended.Status != wire.SessionEnded || ended.EndReason != wire.ReasonEndedByUser || ended.EndedAt == nil {
		t.Fatalf("EndSession = %+v", ended)
	}
	again, err := s.EndSession(ctx, ids[0], wire.ReasonWorkspaceLost)
	must(t, err)
	if again.EndReason != wire.ReasonEndedByUser || !again.EndedAt.Equal(*ended.EndedAt) {
		t.Errorf("second EndSession changed the ending: %+v, first %+v", again, ended)
	}
	_, err = s.EndSession(ctx, "ses-1", wire.ReasonEndedByUser)
	wantErr(t, err, errs.NotFound, "session ses-1: not found")
	_, err = s.EndSession(ctx, ids[1], "")
	wantField(t, err, "reason")

	for _, tc := range []struct {
		f    SessionFilter
		want []string
	}{
		{SessionFilter{WorkspaceID: w.ID}, []string{ids[2], ids[1], ids[0]}},
		{SessionFilter{Status: wire.SessionOpen}, []string{ids[2], ids[1]}},
		{SessionFilter{WorkspaceID: w.ID, Status: wire.SessionEnded}, []string{ids[0]}},
		{SessionFilter{WorkspaceID: "ws-other"}, []string{}},
	} {
		list, err := s.ListSessions(ctx, tc.f)
		must(t, err)
		if got := idsOf(list, func(s wire.Session) string { return s.ID }); !slices.Equal(got, tc.want) {
			t.Errorf("ListSessions(%+v) = %v, want %v", tc.f, got, tc.want)
		}
	}

	endedIDs, err := s.EndWorkspaceSessions(ctx, w.ID, wire.ReasonWorkspaceLost)
	must(t, err)
	if want := ids[1:]; !slices.Equal(endedIDs, want) {
		t.Errorf("EndWorkspaceSessions = %v, want %v (oldest first)", endedIDs, want)
	}
	if endedIDs, err = s.EndWorkspaceSessions(ctx, w.ID, wire.ReasonWorkspaceLost); err != nil || endedIDs == nil || len(endedIDs) != 0 {
		t.Errorf("second EndWorkspaceSessions = %#v, %v; want empty, nil", endedIDs, err)
	}
	if _, err = s.EndWorkspaceSessions(ctx, w.ID, ""); err == nil {
		t.Errorf("EndWorkspaceSessions with no reason: err = nil")
	} else {
		wantField(t, err, "reason")
	}
	for i, want := range []string{wire.ReasonEndedByUser, wire.ReasonWorkspaceLost, wire.ReasonWorkspaceLost} {
		ses, err := s.GetSession(ctx, ids[i])
		must(t, err)
		if ses.Status != wire.SessionEnded || ses.EndReason != want || ses.EndedAt == nil {
			t.Errorf("session %d = %+v, want ended with %s", i, ses, want)
		}
	}
}

func testDeleteWorkspace(t *testing.T, ctx context.Context, s *Store) {
	w, other := newWorkspace("t", "p"), newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, w))
	must(t, s.CreateWorkspace(ctx, other))
	byUser, open, elsewhere := &wire.Session{WorkspaceID: w.ID}, &wire.Session{WorkspaceID: w.ID}, &wire.Session{WorkspaceID: other.ID}
	for _, ses := range []*wire.Session{byUser, open, elsewhere} {
		must(t, s.CreateSession(ctx, ses))
	}
	_, err := s.EndSession(ctx, byUser.ID, wire.ReasonEndedByUser)
	must(t, err)
	must(t, s.AppendEvent(ctx, &wire.Event{WorkspaceID: w.ID, Type: wire.EventDestroyed}))

	must(t, s.DeleteWorkspace(ctx, w.ID))
	_, err = s.GetWorkspace(ctx, w.ID)
	wantErr(t, err, errs.NotFound, "")
	for _, tc := range []struct {
		id, status, reason string
	}{
		{byUser.ID, wire.SessionEnded, wire.ReasonEndedByUser},
		{open.ID, wire.SessionEnded, wire.ReasonWorkspaceDeleted},
		{elsewhere.ID, wire.SessionOpen, ""},
	} {
		ses, err := s.GetSession(ctx, tc.id)
		must(t, err)
		if ses.Status != tc.status || ses.EndReason != tc.reason || (tc.status == wire.SessionEnded) != (ses.EndedAt != nil) {
			t.Errorf("session %s = %s/%q ended_at %v, want %s/%q", tc.id, ses.Status, ses.EndReason, ses.EndedAt, tc.status, tc.reason)
		}
	}
	evs, err := s.ListEvents(ctx, w.ID, 0, 0)
	must(t, err)
	if len(evs) != 1 {
		t.Errorf("events after delete = %d, want 1 kept", len(evs))
	}
	must(t, s.DeleteWorkspace(ctx, other.ID))
	wantErr(t, s.DeleteWorkspace(ctx, w.ID), errs.NotFound, "workspace "+w.ID+": not found")
}

func testEvents(t *testing.T, ctx context.Context, s *Store) {
	var a []wire.Event
	for i := range 5 {
		e := &wire.Event{ID: 999, WorkspaceID: "ws-a", Type: wire.EventPhaseChanged, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		must(t, s.AppendEvent(ctx, e))
		if e.ID == 0 || e.ID == 999 || e.CreatedAt.IsZero() {
			t.Fatalf("AppendEvent did not set id and created_at: %+v", e)
		}
		a = append(a, *e)
		must(t, s.AppendEvent(ctx, &wire.Event{WorkspaceID: "ws-b", Type: wire.EventProvisioned}))
	}
	wantField(t, s.AppendEvent(ctx, &wire.Event{WorkspaceID: "ws-a", Type: wire.EventDestroyed, Data: json.RawMessage(`{`)}), "data")
	wantField(t, s.AppendEvent(ctx, &wire.Event{WorkspaceID: "ws-a"}), "type")

	for _, tc := range []struct {
		name  string
		after uint64
		limit int
		want  []wire.Event
	}{
		{"all", 0, 0, a},
		{"after third", a[2].ID, 0, a[3:]},
		{"limit", 0, 2, a[:2]},
		{"after and limit", a[0].ID, 3, a[1:4]},
		{"after last", a[4].ID, 0, nil},
	} {
		got, err := s.ListEvents(ctx, "ws-a", tc.after, tc.limit)
		must(t, err)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d events, want %d", tc.name, len(got), len(tc.want))
			continue
		}
		for i := range got {
			if got[i].ID != tc.want[i].ID || got[i].WorkspaceID != "ws-a" || !got[i].CreatedAt.Equal(tc.want[i].CreatedAt) {
				t.Errorf("%s: event %d = %+v, want %+v", tc.name, i, got[i], tc.want[i])
			}
			jsonEq(t, got[i].Data, string(tc.want[i].Data))
		}
	}
	got, err := s.ListEvents(ctx, "ws-none", 0, 0)
	must(t, err)
	if got == nil || len(got) != 0 {
		t.Errorf("ListEvents(unknown) = %#v, want empty non-nil", got)
	}
}

func testEnsureDefaults(t *testing.T, ctx context.Context, s *Store) {
	root := "/var/lib/primer/workspaces"
	wantErr(t, s.EnsureDefaults(ctx, ""), errs.Invalid, "")
	// Concurrent first starts must not fail on each other's inserts.
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errc <- s.EnsureDefaults(ctx, root) })
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		must(t, err)
	}
	must(t, s.EnsureDefaults(ctx, root))

	p, err := s.GetProvider(ctx, wire.LocalProviderID)
	must(t, err)
	if p.Provider != wire.BackendLocal {
		t.Errorf("local provider type = %q", p.Provider)
	}
	jsonEq(t, p.Config, `{"kind":"local","root_path":"`+root+`"}`)
	tp, err := s.GetTemplate(ctx, wire.DefaultTemplateID)
	must(t, err)
	if tp.ProviderID != wire.LocalProviderID {
		t.Errorf("default template provider = %q", tp.ProviderID)
	}
	jsonEq(t, tp.Backend, `{"kind":"local"}`)

	// Existing rows are kept as they are, only missing ones come back.
	must(t, s.UpdateProvider(ctx, &wire.Provider{ID: wire.LocalProviderID, Provider: wire.BackendLocal, Config: json.RawMessage(`{"kind":"local","root_path":"/elsewhere"}`)}))
	must(t, s.DeleteTemplate(ctx, wire.DefaultTemplateID))
	must(t, s.EnsureDefaults(ctx, root))
	p, err = s.GetProvider(ctx, wire.LocalProviderID)
	must(t, err)
	jsonEq(t, p.Config, `{"kind":"local","root_path":"/elsewhere"}`)
	if _, err := s.GetTemplate(ctx, wire.DefaultTemplateID); err != nil {
		t.Errorf("default template not recreated: %v", err)
	}
	ps, err := s.ListProviders(ctx, "")
	must(t, err)
	ts, err := s.ListTemplates(ctx, "", "")
	must(t, err)
	if len(ps) != 1 || len(ts) != 1 {
		t.Errorf("after EnsureDefaults: %d providers, %d templates; want 1 and 1", len(ps), len(ts))
	}
}

// testConcurrentWrites is what hundreds of workflows do at once: each
// goroutine creates a workspace, a session and events, and changes phase.
func testConcurrentWrites(t *testing.T, ctx context.Context, s *Store) {
	const workers, eventsEach = 50, 5
	start := time.Now()
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			errc <- func() error {
				w := newWorkspace("t", "p")
				if err := s.CreateWorkspace(ctx, w); err != nil {
					return err
				}
				if err := s.CreateSession(ctx, &wire.Session{WorkspaceID: w.ID}); err != nil {
					return err
				}
				for i := range eventsEach {
					if err := s.AppendEvent(ctx, &wire.Event{WorkspaceID: w.ID, Type: wire.EventPhaseChanged, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
						return err
					}
				}
				if _, err := s.ListEvents(ctx, w.ID, 0, 0); err != nil {
					return err
				}
				return s.SetWorkspacePhase(ctx, w.ID, wire.PhaseRunning, "")
			}()
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Errorf("concurrent write: %v", err)
		}
	}
	t.Logf("%d workers x %d writes in %v", workers, eventsEach+3, time.Since(start))

	ws, err := s.ListWorkspaces(ctx, WorkspaceFilter{Phase: wire.PhaseRunning})
	must(t, err)
	if len(ws) != workers {
		t.Fatalf("%d running workspaces, want %d", len(ws), workers)
	}
	for _, w := range ws {
		evs, err := s.ListEvents(ctx, w.ID, 0, 0)
		must(t, err)
		if len(evs) != eventsEach {
			t.Fatalf("workspace %s: %d events, want %d", w.ID, len(evs), eventsEach)
		}
		for i, e := range evs {
			jsonEq(t, e.Data, fmt.Sprintf(`{"n":%d}`, i))
		}
	}
	open, err := s.ListSessions(ctx, SessionFilter{Status: wire.SessionOpen})
	must(t, err)
	if len(open) != workers {
		t.Errorf("%d open sessions, want %d", len(open), workers)
	}
}

func testJSONRoundTrip(t *testing.T, ctx context.Context, s *Store) {
	doc := `{"kind":"container","image":"ubuntu:24.04","env":{"Q":"a \"quoted\" \\ value\n"},"init":["apt-get update"],"caps":{"cpu":1.5,"memory_mb":512},"unicode":"é✓"}`
	must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendContainer, Config: json.RawMessage(doc)}))
	must(t, s.CreateProvider(ctx, &wire.Provider{ID: "empty", Provider: wire.BackendLocal}))
	must(t, s.CreateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p", Backend: json.RawMessage(doc)}))
	labels := map[string]string{"team": "infra", "with space": "ü"}
	w := &wire.Workspace{ID: "ws-j", TemplateID: "t", ProviderID: "p", Backend: wire.BackendContainer, Phase: wire.PhasePending,
		Labels: labels, Handle: json.RawMessage(`{"container_id":"abc","ports":[1,2]}`)}
	must(t, s.CreateWorkspace(ctx, w))
	meta := map[string]string{"task": "fix bug"}
	ses := &wire.Session{WorkspaceID: w.ID, Metadata: meta}
	must(t, s.CreateSession(ctx, ses))

	p, err := s.GetProvider(ctx, "p")
	must(t, err)
	jsonEq(t, p.Config, doc)
	empty, err := s.GetProvider(ctx, "empty")
	must(t, err)
	if len(empty.Config) != 0 {
		t.Errorf("empty config read back as %q", empty.Config)
	}
	tp, err := s.GetTemplate(ctx, "t")
	must(t, err)
	jsonEq(t, tp.Backend, doc)
	gw, err := s.GetWorkspace(ctx, w.ID)
	must(t, err)
	if !maps.Equal(gw.Labels, labels) {
		t.Errorf("labels = %v, want %v", gw.Labels, labels)
	}
	jsonEq(t, gw.Handle, `{"container_id":"abc","ports":[1,2]}`)
	gs, err := s.GetSession(ctx, ses.ID)
	must(t, err)
	if !maps.Equal(gs.Metadata, meta) {
		t.Errorf("metadata = %v, want %v", gs.Metadata, meta)
	}
	// Updates store JSON the same way creates do.
	must(t, s.UpdateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendContainer, Config: json.RawMessage(doc)}))
	p, err = s.GetProvider(ctx, "p")
	must(t, err)
	jsonEq(t, p.Config, doc)
}

// testNoOrphans races deletes against creates that reference the deleted
// row: whichever wins, no template outlives its provider and no session of a
// deleted workspace stays open.
func testNoOrphans(t *testing.T, ctx context.Context, s *Store) {
	for round := range 5 {
		pid := fmt.Sprintf("p%d", round)
		must(t, s.CreateProvider(ctx, &wire.Provider{ID: pid, Provider: wire.BackendLocal}))
		w := newWorkspace("t", pid)
		must(t, s.CreateWorkspace(ctx, w))
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				err := s.CreateTemplate(ctx, &wire.Template{ID: fmt.Sprintf("%s-t%d", pid, i), ProviderID: pid})
				if err != nil && errs.FieldOf(err) != "provider_id" {
					t.Errorf("CreateTemplate: %v", err)
				}
			})
			wg.Go(func() {
				err := s.CreateSession(ctx, &wire.Session{WorkspaceID: w.ID})
				if err != nil && !errs.Is(err, errs.NotFound) {
					t.Errorf("CreateSession: %v", err)
				}
			})
		}
		wg.Go(func() {
			time.Sleep(time.Duration(round) * time.Millisecond)
			must(t, s.DeleteWorkspace(ctx, w.ID))
			// Conflict when a template got in first: that is the point.
			if err := s.DeleteProvider(ctx, pid); err != nil && !errs.Is(err, errs.Conflict) {
				t.Errorf("DeleteProvider: %v", err)
			}
		})
		wg.Wait()
		ts, err := s.ListTemplates(ctx, pid, "")
		must(t, err)
		if _, err := s.GetProvider(ctx, pid); errs.Is(err, errs.NotFound) && len(ts) > 0 {
			t.Errorf("round %d: provider deleted but %d templates reference it", round, len(ts))
		}
		open, err := s.ListSessions(ctx, SessionFilter{WorkspaceID: w.ID, Status: wire.SessionOpen})
		must(t, err)
		if len(open) > 0 {
			t.Errorf("round %d: %d sessions of deleted workspace still open", round, len(open))
		}
	}
}

// TestOpen covers the URL forms Open accepts and rejects.
func TestOpen(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		cfg  Config
		kind errs.Kind
	}{
		{"mysql url", Config{URL: "mysql://u:secret@h/db"}, errs.Invalid},
		{"bare path as url", Config{URL: "/tmp/x.db"}, errs.Invalid},
		{"no url no path", Config{}, errs.Invalid},
		{"empty sqlite url", Config{URL: "sqlite://"}, errs.Invalid},
	} {
		s, err := Open(ctx, tc.cfg)
		if err == nil {
			_ = s.Close()
		}
		wantErr(t, err, tc.kind, "")
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error leaks the password: %v", tc.name, err)
		}
	}

	path := filepath.Join(t.TempDir(), "a", "b", "primer.db")
	var logs bytes.Buffer
	s, err := Open(ctx, Config{URL: "sqlite://" + path, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	must(t, err)
	if s.Dialect() != DialectSQLite {
		t.Errorf("Dialect = %q", s.Dialect())
	}
	must(t, s.Ping(ctx))
	w := newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, w))
	token := NewToken()
	must(t, s.SetWorkspaceRuntime(ctx, w.ID, nil, "/x", token))
	must(t, s.Close())
	if !strings.Contains(logs.String(), "database ready") {
		t.Errorf("logger not used: %q", logs.String())
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("runtime token logged: %q", logs.String())
	}

	// The file survives a reopen, with WAL on.
	s, err = Open(ctx, Config{SQLitePath: path})
	must(t, err)
	defer s.Close()
	got, err := s.GetWorkspace(ctx, w.ID)
	must(t, err)
	if got.RuntimeToken != token {
		t.Errorf("token not persisted")
	}
	var mode string
	must(t, s.w.Raw("PRAGMA journal_mode").Scan(&mode).Error)
	var fk int
	must(t, s.w.Raw("PRAGMA foreign_keys").Scan(&fk).Error)
	if mode != "wal" || fk != 1 {
		t.Errorf("journal_mode %q foreign_keys %d, want wal and 1", mode, fk)
	}
}

// TestOpenMemory checks :memory: works (one shared connection).
func TestOpenMemory(t *testing.T) {
	s, err := Open(t.Context(), Config{URL: "sqlite://:memory:"})
	must(t, err)
	defer s.Close()
	must(t, s.EnsureDefaults(t.Context(), "/tmp/ws"))
	if _, err := s.GetTemplate(t.Context(), wire.DefaultTemplateID); err != nil {
		t.Fatalf("read after write on :memory:: %v", err)
	}
}

func TestNewIDAndToken(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID("ws")
		if !regexp.MustCompile(`^ws-[0-9a-f]{16}$`).MatchString(id) || seen[id] {
			t.Fatalf("NewID = %q (seen before: %v)", id, seen[id])
		}
		seen[id] = true
	}
	a, b := NewToken(), NewToken()
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(a) || a == b {
		t.Fatalf("NewToken = %q, %q", a, b)
	}
}

func newWorkspace(template, provider string) *wire.Workspace {
	id := NewID("ws")
	return &wire.Workspace{ID: id, TemplateID: template, ProviderID: provider, Backend: wire.BackendLocal, Phase: wire.PhasePending, WorkflowID: "wf-" + id}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails unless err has kind and, when msg is set, contains msg.
func wantErr(t *testing.T, err error, kind errs.Kind, msg string) {
	t.Helper()
	if err == nil {
		t.Errorf("err = nil, want %v %q", kind, msg)
		return
	}
	if got := errs.KindOf(err); got != kind {
		t.Errorf("kind of %q = %v, want %v", err, got, kind)
	}
	if msg != "" && !strings.Contains(err.Error(), msg) {
		t.Errorf("err = %q, want it to contain %q", err, msg)
	}
}

// wantField fails unless err is Invalid naming field.
func wantField(t *testing.T, err error, field string) {
	t.Helper()
	wantErr(t, err, errs.Invalid, "")
	if got := errs.FieldOf(err); got != field {
		t.Errorf("field of %q = %q, want %q", err, got, field)
	}
}

func jsonEq(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("stored JSON %q: %v", got, err)
		return
	}
	must(t, json.Unmarshal([]byte(want), &w))
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("JSON = %s, want %s", gb, wb)
	}
}

func idsOf[T any](xs []T, id func(T) string) []string {
	out := []string{}
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}
