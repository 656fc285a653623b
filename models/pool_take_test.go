package models

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// TestTakeWorkspace runs the warm-create cases of the store on every
// dialect (PostgreSQL with PRIMER_TEST_DATABASE_URL).
func TestTakeWorkspace(t *testing.T) {
	cases := []storeCase{
		{"take workspace", testTakeWorkspace},
		{"take and lease concurrently", testTakeConcurrent},
	}
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, t.Context(), d.open(t)) })
			}
		})
	}
}

func testTakeWorkspace(t *testing.T, ctx context.Context, s *Store) {
	poolFixture(t, ctx, s)
	for _, pool := range []string{"ghost", "pool-1"} {
		if w, err := s.TakeWorkspace(ctx, pool, nil); w != nil || err != nil {
			t.Fatalf("TakeWorkspace(%s, empty) = %v, %v; want nil, nil", pool, w, err)
		}
	}
	base := time.Now().Add(-time.Hour)
	at := func(m int) time.Time { return base.Add(time.Duration(m) * time.Minute) }
	// Generation 1 is never taken once the template has moved on: a create
	// asks for the template as it is now.
	stale := newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseRunning, at(0))
	must(t, s.CreateWorkspace(ctx, stale))
	must(t, s.UpdateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p", Backend: json.RawMessage(`{"kind":"local","v":2}`)}))
	first := newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseRunning, at(5))
	second := newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseRunning, at(6))
	second.Labels = map[string]string{"old": "label"}
	must(t, s.CreatePool(ctx, &wire.Pool{ID: "pool-2", TemplateID: "t"}))
	never := []*wire.Workspace{
		stale,
		newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhasePending, at(-9)),
		newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseFailed, at(-8)),
		newPoolWorkspace("pool-1", wire.PoolLeased, wire.PhaseRunning, at(-7)),
		newPoolWorkspace("pool-1", wire.PoolReturning, wire.PhaseRunning, at(-6)),
		newPoolWorkspace("pool-2", wire.PoolIdle, wire.PhasePending, at(-5)),
	}
	for _, w := range append([]*wire.Workspace{second, first}, never[1:]...) {
		must(t, s.CreateWorkspace(ctx, w))
	}

	labels := []map[string]string{{"team": "evals"}, nil}
	for i, want := range []*wire.Workspace{first, second, nil} {
		var l map[string]string
		if i < len(labels) {
			l = labels[i]
		}
		got, err := s.TakeWorkspace(ctx, "pool-1", l)
		must(t, err)
		if want == nil {
			if got != nil {
				t.Errorf("take %d = %s, want nil", i, got.ID)
			}
			continue
		}
		if got == nil {
			t.Fatalf("take %d = nil, want %s", i, want.ID)
		}
		if got.ID != want.ID || got.PoolID != "" || got.PoolState != "" || got.Phase != wire.PhaseRunning ||
			got.WorkflowID != want.WorkflowID || !got.CreatedAt.Equal(want.CreatedAt) || !maps.Equal(got.Labels, l) {
			t.Errorf("take %d = %+v, want %s out of its pool with labels %v", i, got, want.ID, l)
		}
		stored, err := s.GetWorkspace(ctx, want.ID)
		must(t, err)
		if stored.PoolID != "" || stored.PoolState != "" || !maps.Equal(stored.Labels, l) {
			t.Errorf("take %d: stored %+v, want no pool and labels %v", i, stored, l)
		}
	}
	for _, w := range never {
		stored, err := s.GetWorkspace(ctx, w.ID)
		must(t, err)
		if stored.PoolID != w.PoolID || stored.PoolState != w.PoolState {
			t.Errorf("workspace %s (%s, %s/%s) changed to %s/%s", w.ID, w.PoolID, w.Phase, w.PoolState, stored.PoolID, stored.PoolState)
		}
	}
	// The pool counts one member fewer per take: its pass makes new ones.
	left, err := s.ListWorkspaces(ctx, WorkspaceFilter{PoolID: "pool-1"})
	must(t, err)
	if len(left) != 5 {
		t.Errorf("pool-1 has %d members after two takes, want 5", len(left))
	}
}

// testTakeConcurrent races creates and leases for fewer idle workspaces
// than callers: each workspace goes to exactly one of them.
func testTakeConcurrent(t *testing.T, ctx context.Context, s *Store) {
	const idle, callers = 10, 20
	poolFixture(t, ctx, s)
	want := make([]string, 0, idle)
	for i := range idle {
		w := newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseRunning, time.Now().Add(time.Duration(i)*time.Millisecond))
		must(t, s.CreateWorkspace(ctx, w))
		want = append(want, w.ID)
	}
	var (
		mu    sync.Mutex
		got   []string
		nils  int
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range callers {
		wg.Go(func() {
			<-start
			var w *wire.Workspace
			var err error
			if i%2 == 0 {
				w, err = s.TakeWorkspace(ctx, "pool-1", map[string]string{"n": "x"})
			} else {
				w, err = s.LeaseWorkspace(ctx, "pool-1")
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("take or lease: %v", err)
			case w == nil:
				nils++
			default:
				got = append(got, w.ID)
			}
		})
	}
	close(start)
	wg.Wait()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || nils != callers-idle {
		t.Errorf("got %v and %d nils; want each of %v once and %d nils", got, nils, want, callers-idle)
	}
}
