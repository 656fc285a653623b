package models

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// poolFixture creates provider p, template t and pool pool-1 of t.
func poolFixture(t *testing.T, ctx context.Context, s *Store) {
	t.Helper()
	must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendLocal}))
	must(t, s.CreateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p", Backend: json.RawMessage(`{"kind":"local"}`)}))
	must(t, s.CreatePool(ctx, &wire.Pool{ID: "pool-1", TemplateID: "t", Size: 10}))
}

// newPoolWorkspace is a workspace of template t in pool, created at created.
func newPoolWorkspace(pool, state, phase string, created time.Time) *wire.Workspace {
	w := newWorkspace("t", "p")
	w.PoolID, w.PoolState, w.Phase, w.CreatedAt = pool, state, phase, created
	return w
}

func testPools(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendLocal}))
	for _, id := range []string{"t1", "t2"} {
		must(t, s.CreateTemplate(ctx, &wire.Template{ID: id, ProviderID: "p"}))
	}

	for _, tc := range []struct {
		name      string
		pool      wire.Pool
		kind      errs.Kind
		field     string
		msg       string
		wantSize  int
		wantError bool
	}{
		{name: "default size", pool: wire.Pool{ID: "b", TemplateID: "t1"}, wantSize: wire.DefaultPoolSize},
		{name: "explicit size", pool: wire.Pool{ID: "a", TemplateID: "t2", Size: 7}, wantSize: 7},
		{name: "max size", pool: wire.Pool{ID: "c", TemplateID: "t1", Size: wire.MaxPoolSize}, wantSize: wire.MaxPoolSize},
		{name: "no id", pool: wire.Pool{TemplateID: "t1"}, wantError: true, kind: errs.Invalid, field: "id"},
		{name: "no template", pool: wire.Pool{ID: "x"}, wantError: true, kind: errs.Invalid, field: "template_id"},
		{name: "unknown template", pool: wire.Pool{ID: "x", TemplateID: "ghost"}, wantError: true, kind: errs.NotFound, field: "template_id", msg: "pool x: template ghost: not found"},
		{name: "negative size", pool: wire.Pool{ID: "x", TemplateID: "t1", Size: -1}, wantError: true, kind: errs.Invalid, field: "size"},
		{name: "too large", pool: wire.Pool{ID: "x", TemplateID: "t1", Size: wire.MaxPoolSize + 1}, wantError: true, kind: errs.Invalid, field: "size"},
		{name: "duplicate id", pool: wire.Pool{ID: "a", TemplateID: "t1"}, wantError: true, kind: errs.Conflict, msg: "pool a: already exists"},
	} {
		p := tc.pool
		err := s.CreatePool(ctx, &p)
		if !tc.wantError {
			must(t, err)
			got, err := s.GetPool(ctx, p.ID)
			must(t, err)
			if got.Size != tc.wantSize || got.TemplateID != tc.pool.TemplateID || got.CreatedAt.IsZero() || got.UpdatedAt.IsZero() {
				t.Errorf("%s: GetPool = %+v, want size %d template %s and timestamps", tc.name, got, tc.wantSize, tc.pool.TemplateID)
			}
			continue
		}
		wantErr(t, err, tc.kind, tc.msg)
		if got := errs.FieldOf(err); got != tc.field {
			t.Errorf("%s: field of %q = %q, want %q", tc.name, err, got, tc.field)
		}
	}
	if _, err := s.GetPool(ctx, "x"); !errs.Is(err, errs.NotFound) {
		t.Errorf("a failed CreatePool left pool x behind: %v", err)
	}

	for _, tc := range []struct {
		template string
		want     []string
	}{
		{"", []string{"a", "b", "c"}},
		{"t1", []string{"b", "c"}},
		{"t2", []string{"a"}},
		{"ghost", []string{}},
	} {
		list, err := s.ListPools(ctx, tc.template, "")
		must(t, err)
		if ids := idsOf(list, func(p wire.Pool) string { return p.ID }); !slices.Equal(ids, tc.want) {
			t.Errorf("ListPools(%q) = %v, want %v", tc.template, ids, tc.want)
		}
	}

	before, err := s.GetPool(ctx, "a")
	must(t, err)
	time.Sleep(2 * time.Millisecond)
	upd := &wire.Pool{ID: "a", TemplateID: "t1", Size: 0}
	must(t, s.UpdatePool(ctx, upd))
	if upd.TemplateID != "t1" || upd.Size != wire.DefaultPoolSize || !upd.CreatedAt.Equal(before.CreatedAt) || !upd.UpdatedAt.After(before.UpdatedAt) {
		t.Errorf("UpdatePool = %+v (was %+v), want t1, default size, created kept, updated later", upd, before)
	}
	for _, tc := range []struct {
		pool  wire.Pool
		kind  errs.Kind
		field string
	}{
		{wire.Pool{ID: "nope", TemplateID: "t1"}, errs.NotFound, ""},
		{wire.Pool{ID: "a", TemplateID: "ghost"}, errs.NotFound, "template_id"},
		{wire.Pool{ID: "a", TemplateID: "t1", Size: wire.MaxPoolSize + 1}, errs.Invalid, "size"},
	} {
		p := tc.pool
		err := s.UpdatePool(ctx, &p)
		wantErr(t, err, tc.kind, "")
		if got := errs.FieldOf(err); got != tc.field {
			t.Errorf("UpdatePool(%+v): field %q, want %q", tc.pool, got, tc.field)
		}
	}
	got, err := s.GetPool(ctx, "a")
	must(t, err)
	if got.TemplateID != "t1" || got.Size != wire.DefaultPoolSize {
		t.Errorf("failed updates changed pool a: %+v", got)
	}

	// A template stays while a pool references it.
	wantErr(t, s.DeleteTemplate(ctx, "t1"), errs.Conflict, "template t1: in use by pool a")
	must(t, s.DeleteTemplate(ctx, "t2"))
	for _, id := range []string{"a", "b", "c"} {
		must(t, s.DeletePool(ctx, id))
	}
	wantErr(t, s.DeletePool(ctx, "a"), errs.NotFound, "pool a: not found")
	must(t, s.DeleteTemplate(ctx, "t1"))
}

func testPoolWorkspaces(t *testing.T, ctx context.Context, s *Store) {
	poolFixture(t, ctx, s)
	now := time.Now()
	for _, tc := range []struct {
		name       string
		pool, st   string
		kind       errs.Kind
		field, msg string
	}{
		{"unknown pool", "ghost", wire.PoolIdle, errs.NotFound, "pool_id", "pool ghost: not found"},
		{"state without pool", "", wire.PoolIdle, errs.Invalid, "pool_state", ""},
		{"pool without state", "pool-1", "", errs.Invalid, "pool_state", ""},
		{"unknown state", "pool-1", "warm", errs.Invalid, "pool_state", ""},
	} {
		err := s.CreateWorkspace(ctx, newPoolWorkspace(tc.pool, tc.st, wire.PhaseRunning, now))
		wantErr(t, err, tc.kind, tc.msg)
		if got := errs.FieldOf(err); got != tc.field {
			t.Errorf("%s: field of %q = %q, want %q", tc.name, err, got, tc.field)
		}
	}

	must(t, s.CreatePool(ctx, &wire.Pool{ID: "pool-2", TemplateID: "t"}))
	specs := []struct{ id, pool, state string }{
		{"ws-a", "pool-1", wire.PoolIdle},
		{"ws-b", "pool-1", wire.PoolLeased},
		{"ws-c", "pool-2", wire.PoolIdle},
		{"ws-d", "", ""},
	}
	for i, sp := range specs {
		w := newPoolWorkspace(sp.pool, sp.state, wire.PhaseRunning, now.Add(time.Duration(i)*time.Second))
		w.ID = sp.id
		must(t, s.CreateWorkspace(ctx, w))
		got, err := s.GetWorkspace(ctx, w.ID)
		must(t, err)
		if got.PoolID != sp.pool || got.PoolState != sp.state || got.TemplateGeneration != 1 {
			t.Errorf("GetWorkspace(%s) pool %q/%q generation %d, want %q/%q and 1", w.ID, got.PoolID, got.PoolState, got.TemplateGeneration, sp.pool, sp.state)
		}
	}
	for _, tc := range []struct {
		f    WorkspaceFilter
		want []string
	}{
		{WorkspaceFilter{PoolID: "pool-1"}, []string{"ws-b", "ws-a"}},
		{WorkspaceFilter{PoolState: wire.PoolIdle}, []string{"ws-c", "ws-a"}},
		{WorkspaceFilter{PoolID: "pool-1", PoolState: wire.PoolIdle}, []string{"ws-a"}},
		{WorkspaceFilter{PoolID: "ghost"}, []string{}},
	} {
		list, err := s.ListWorkspaces(ctx, tc.f)
		must(t, err)
		if ids := idsOf(list, func(w wire.Workspace) string { return w.ID }); !slices.Equal(ids, tc.want) {
			t.Errorf("ListWorkspaces(%+v) = %v, want %v", tc.f, ids, tc.want)
		}
	}

	// JSON: pool fields only for pooled workspaces; the generation always.
	for _, tc := range []struct {
		id   string
		want map[string]any
	}{
		{"ws-a", map[string]any{"pool_id": "pool-1", "pool_state": wire.PoolIdle, "template_generation": 1.0}},
		{"ws-d", map[string]any{"pool_id": nil, "pool_state": nil, "template_generation": 1.0}},
	} {
		w, err := s.GetWorkspace(ctx, tc.id)
		must(t, err)
		b, err := json.Marshal(w)
		must(t, err)
		var doc map[string]any
		must(t, json.Unmarshal(b, &doc))
		for k, v := range tc.want {
			if doc[k] != v {
				t.Errorf("%s JSON %s = %v, want %v (%s)", tc.id, k, doc[k], v, b)
			}
		}
	}
}

func testLeaseWorkspace(t *testing.T, ctx context.Context, s *Store) {
	poolFixture(t, ctx, s)
	must(t, s.CreatePool(ctx, &wire.Pool{ID: "pool-2", TemplateID: "t"}))
	_, err := s.LeaseWorkspace(ctx, "ghost")
	wantErr(t, err, errs.NotFound, "pool ghost: not found")
	w, err := s.LeaseWorkspace(ctx, "pool-1")
	if w != nil || err != nil {
		t.Fatalf("LeaseWorkspace(empty pool) = %v, %v; want nil, nil", w, err)
	}

	base := time.Now().Add(-time.Hour)
	at := func(m int) time.Time { return base.Add(time.Duration(m) * time.Minute) }
	// Generation 1: the oldest idle ones.
	stale1 := newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseRunning, at(0))
	stale2 := newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseRunning, at(1))
	stale2.Labels = map[string]string{"k": "v"}
	for _, w := range []*wire.Workspace{stale1, stale2} {
		must(t, s.CreateWorkspace(ctx, w))
	}
	must(t, s.UpdateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p", Backend: json.RawMessage(`{"kind":"local","v":2}`)}))
	// Generation 2, and rows that must never be leased.
	fresh1 := newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseRunning, at(5))
	fresh2 := newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseRunning, at(6))
	never := []*wire.Workspace{
		newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhasePending, at(-9)),
		newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseFailed, at(-8)),
		newPoolWorkspace("pool-1", wire.PoolLeased, wire.PhaseRunning, at(-7)),
		newPoolWorkspace("pool-1", wire.PoolReturning, wire.PhaseRunning, at(-6)),
		newPoolWorkspace("pool-2", wire.PoolIdle, wire.PhaseRunning, at(-5)),
	}
	for _, w := range append([]*wire.Workspace{fresh2, fresh1}, never...) {
		must(t, s.CreateWorkspace(ctx, w))
	}

	for i, want := range []*wire.Workspace{fresh1, fresh2, stale1, stale2, nil} {
		got, err := s.LeaseWorkspace(ctx, "pool-1")
		must(t, err)
		if want == nil {
			if got != nil {
				t.Errorf("lease %d = %s, want nil", i, got.ID)
			}
			continue
		}
		if got == nil {
			t.Fatalf("lease %d = nil, want %s", i, want.ID)
		}
		if got.ID != want.ID || got.PoolState != wire.PoolLeased || got.PoolID != "pool-1" || got.Phase != wire.PhaseRunning ||
			got.TemplateGeneration != want.TemplateGeneration || !got.UpdatedAt.After(want.UpdatedAt) ||
			got.WorkflowID != want.WorkflowID || !got.CreatedAt.Equal(want.CreatedAt) || !maps.Equal(got.Labels, want.Labels) {
			t.Errorf("lease %d = %+v, want %s leased, as stored", i, got, want.ID)
		}
		stored, err := s.GetWorkspace(ctx, want.ID)
		must(t, err)
		if stored.PoolState != wire.PoolLeased {
			t.Errorf("lease %d: stored pool_state %q, want leased", i, stored.PoolState)
		}
	}
	for _, w := range never {
		stored, err := s.GetWorkspace(ctx, w.ID)
		must(t, err)
		if stored.PoolState != w.PoolState {
			t.Errorf("workspace %s (%s, %s/%s) changed to %q", w.ID, w.PoolID, w.Phase, w.PoolState, stored.PoolState)
		}
	}

	// After a pool moves to another template, that template's current
	// generation is the fresh one, whatever number the old one had.
	must(t, s.CreateTemplate(ctx, &wire.Template{ID: "t-next", ProviderID: "p"}))
	must(t, s.UpdatePool(ctx, &wire.Pool{ID: "pool-2", TemplateID: "t-next"}))
	next := newPoolWorkspace("pool-2", wire.PoolIdle, wire.PhaseRunning, at(30))
	next.TemplateID = "t-next"
	must(t, s.CreateWorkspace(ctx, next))
	got, err := s.LeaseWorkspace(ctx, "pool-2")
	must(t, err)
	if got == nil || got.ID != next.ID {
		t.Errorf("lease from re-templated pool = %v, want %s (of its current template) before the older %s", got, next.ID, never[4].ID)
	}

	// Lease and return one warm workspace many times: the lease keeps
	// finding it. How fast that is, is BenchmarkLeaseWorkspace's business.
	warm := newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseRunning, at(60))
	must(t, s.CreateWorkspace(ctx, warm))
	for range 20 {
		got, err := s.LeaseWorkspace(ctx, "pool-1")
		must(t, err)
		if got == nil || got.ID != warm.ID {
			t.Fatalf("lease = %v, want %s", got, warm.ID)
		}
		must(t, s.SetPoolState(ctx, warm.ID, wire.PoolLeased, wire.PoolIdle))
	}
}

// testLeaseConcurrent races more lessees than idle workspaces: each
// workspace goes to exactly one of them, and the rest get nil.
func testLeaseConcurrent(t *testing.T, ctx context.Context, s *Store) {
	const idle, lessees = 10, 20
	poolFixture(t, ctx, s)
	for round := range 3 {
		pool := fmt.Sprintf("race-%d", round)
		must(t, s.CreatePool(ctx, &wire.Pool{ID: pool, TemplateID: "t", Size: idle}))
		want := make([]string, 0, idle)
		for i := range idle {
			w := newPoolWorkspace(pool, wire.PoolIdle, wire.PhaseRunning, time.Now().Add(time.Duration(i)*time.Millisecond))
			must(t, s.CreateWorkspace(ctx, w))
			want = append(want, w.ID)
		}
		var (
			mu     sync.Mutex
			leased []string
			nils   int
			wg     sync.WaitGroup
			start  = make(chan struct{})
		)
		for range lessees {
			wg.Go(func() {
				<-start
				w, err := s.LeaseWorkspace(ctx, pool)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					t.Errorf("LeaseWorkspace: %v", err)
				case w == nil:
					nils++
				default:
					leased = append(leased, w.ID)
				}
			})
		}
		close(start)
		wg.Wait()
		sort.Strings(leased)
		slices.Sort(want)
		if !slices.Equal(leased, want) || nils != lessees-idle {
			t.Errorf("round %d: leased %v (%d) and %d nils; want each of %v once and %d nils", round, leased, len(leased), nils, want, lessees-idle)
		}
		left, err := s.ListWorkspaces(ctx, WorkspaceFilter{PoolID: pool, PoolState: wire.PoolIdle})
		must(t, err)
		if len(left) != 0 {
			t.Errorf("round %d: %d workspaces still idle", round, len(left))
		}
	}
}

func testSetPoolState(t *testing.T, ctx context.Context, s *Store) {
	poolFixture(t, ctx, s)
	w := newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseRunning, time.Now())
	must(t, s.CreateWorkspace(ctx, w))
	plain := newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, plain))

	for _, tc := range []struct {
		name      string
		id        string
		from, to  string
		kind      errs.Kind // 0 (Other) with wantOK
		wantOK    bool
		msg       string
		wantState string
	}{
		{name: "idle to leased", id: w.ID, from: wire.PoolIdle, to: wire.PoolLeased, wantOK: true, wantState: wire.PoolLeased},
		{name: "stale from", id: w.ID, from: wire.PoolIdle, to: wire.PoolLeased, kind: errs.Conflict, msg: `pool state is "leased", not "idle"`, wantState: wire.PoolLeased},
		{name: "leased to returning", id: w.ID, from: wire.PoolLeased, to: wire.PoolReturning, wantOK: true, wantState: wire.PoolReturning},
		{name: "returning to idle", id: w.ID, from: wire.PoolReturning, to: wire.PoolIdle, wantOK: true, wantState: wire.PoolIdle},
		{name: "unknown to", id: w.ID, from: wire.PoolIdle, to: "warm", kind: errs.Invalid, wantState: wire.PoolIdle},
		{name: "unknown from", id: w.ID, from: "warm", to: wire.PoolIdle, kind: errs.Invalid, wantState: wire.PoolIdle},
		{name: "not pooled", id: plain.ID, from: wire.PoolIdle, to: wire.PoolLeased, kind: errs.Conflict, msg: `pool state is "", not "idle"`},
		{name: "absent", id: "ws-gone", from: wire.PoolIdle, to: wire.PoolLeased, kind: errs.NotFound, msg: "workspace ws-gone: not found"},
	} {
		err := s.SetPoolState(ctx, tc.id, tc.from, tc.to)
		if tc.wantOK {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		} else {
			wantErr(t, err, tc.kind, tc.msg)
		}
		if tc.kind == errs.NotFound {
			continue
		}
		got, err := s.GetWorkspace(ctx, tc.id)
		must(t, err)
		if got.PoolState != tc.wantState {
			t.Errorf("%s: pool_state %q, want %q", tc.name, got.PoolState, tc.wantState)
		}
	}

	// Concurrent transitions from the same state: exactly one wins.
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		won, lost int
	)
	for range 10 {
		wg.Go(func() {
			err := s.SetPoolState(ctx, w.ID, wire.PoolIdle, wire.PoolLeased)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errs.Is(err, errs.Conflict):
				lost++
			default:
				t.Errorf("SetPoolState: %v", err)
			}
		})
	}
	wg.Wait()
	if won != 1 || lost != 9 {
		t.Errorf("concurrent SetPoolState: %d won, %d conflicts; want 1 and 9", won, lost)
	}
}

func testDetachPool(t *testing.T, ctx context.Context, s *Store) {
	poolFixture(t, ctx, s)
	must(t, s.CreatePool(ctx, &wire.Pool{ID: "pool-2", TemplateID: "t"}))
	now := time.Now()
	idle := newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseRunning, now)
	leased := newPoolWorkspace("pool-1", wire.PoolLeased, wire.PhaseRunning, now)
	returning := newPoolWorkspace("pool-1", wire.PoolReturning, wire.PhaseRunning, now)
	other := newPoolWorkspace("pool-2", wire.PoolLeased, wire.PhaseRunning, now)
	for _, w := range []*wire.Workspace{idle, leased, returning, other} {
		must(t, s.CreateWorkspace(ctx, w))
	}
	must(t, s.DetachPool(ctx, "pool-1"))
	must(t, s.DetachPool(ctx, "pool-1")) // idempotent
	must(t, s.DetachPool(ctx, "ghost"))
	must(t, s.DeletePool(ctx, "pool-1"))
	for _, tc := range []struct {
		w           *wire.Workspace
		pool, state string
	}{
		{idle, "pool-1", wire.PoolIdle},
		{leased, "", ""},
		{returning, "", ""},
		{other, "pool-2", wire.PoolLeased},
	} {
		got, err := s.GetWorkspace(ctx, tc.w.ID)
		must(t, err)
		if got.PoolID != tc.pool || got.PoolState != tc.state {
			t.Errorf("workspace %s (was %s/%s) = %q/%q, want %q/%q", tc.w.ID, tc.w.PoolID, tc.w.PoolState, got.PoolID, got.PoolState, tc.pool, tc.state)
		}
	}
	// A detached workspace is an ordinary one now.
	err := s.SetPoolState(ctx, leased.ID, wire.PoolLeased, wire.PoolIdle)
	if !errs.Is(err, errs.Conflict) || !strings.Contains(err.Error(), `""`) {
		t.Errorf("SetPoolState on detached workspace = %v, want Conflict naming the empty state", err)
	}
}
