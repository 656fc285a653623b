package models

import (
	"context"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// testLifetimes: deadlines are stored and cleared as given, a touch moves
// only an idle deadline that exists, and a member going back to idle in
// its pool loses every deadline.
func testLifetimes(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendLocal}))
	must(t, s.CreateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p"}))
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	get := func(id string) wire.Deadlines {
		t.Helper()
		w, err := s.GetWorkspace(ctx, id)
		must(t, err)
		return w.Deadlines()
	}
	same := func(got, want *time.Time) bool {
		return (got == nil && want == nil) || (got != nil && want != nil && got.Equal(*want))
	}

	w := newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, w))
	if d := get(w.ID); d != (wire.Deadlines{}) {
		t.Fatalf("a new workspace has deadlines %+v; want none", d)
	}
	d := StartDeadlines(now, 2*time.Hour, 30*time.Minute, 10*time.Minute, 0)
	if !d.ExpiresAt.Equal(now.Add(30*time.Minute)) || !d.MaxExpiresAt.Equal(now.Add(2*time.Hour)) ||
		!d.IdleDeadline.Equal(now.Add(10*time.Minute)) || d.LeaseExpiresAt != nil {
		t.Fatalf("StartDeadlines = %+v; want the ttl, the max, the idle timeout and no lease", d)
	}
	must(t, s.SetDeadlines(ctx, w.ID, d))
	got := get(w.ID)
	if !same(got.ExpiresAt, d.ExpiresAt) || !same(got.MaxExpiresAt, d.MaxExpiresAt) || !same(got.IdleDeadline, d.IdleDeadline) || got.LeaseExpiresAt != nil {
		t.Errorf("stored deadlines = %+v; want %+v", got, d)
	}

	// A touch moves the idle deadline, and only that.
	later := now.Add(25 * time.Minute)
	must(t, s.TouchWorkspace(ctx, w.ID, later))
	got = get(w.ID)
	if !got.IdleDeadline.Equal(later) || !same(got.ExpiresAt, d.ExpiresAt) {
		t.Errorf("after a touch: %+v; want idle at %s, the rest as before", got, later)
	}
	// Without an idle deadline a touch sets none.
	plain := newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, plain))
	must(t, s.TouchWorkspace(ctx, plain.ID, later))
	if got := get(plain.ID); got.IdleDeadline != nil {
		t.Errorf("a touch gave a workspace without idle timeout the deadline %s", got.IdleDeadline)
	}

	// Clearing: nil fields are NULL.
	must(t, s.SetDeadlines(ctx, w.ID, wire.Deadlines{ExpiresAt: d.ExpiresAt}))
	if got := get(w.ID); got.IdleDeadline != nil || got.MaxExpiresAt != nil || !same(got.ExpiresAt, d.ExpiresAt) {
		t.Errorf("after clearing all but expires_at: %+v", got)
	}
	wantErr(t, s.SetDeadlines(ctx, "ws-gone", d), errs.NotFound, "ws-gone")

	// A pool member back to idle loses its lease's deadlines.
	must(t, s.CreatePool(ctx, &wire.Pool{ID: "pl", TemplateID: "t", Size: 1}))
	m := newPoolWorkspace("pl", wire.PoolReturning, wire.PhaseRunning, now)
	must(t, s.CreateWorkspace(ctx, m))
	must(t, s.SetDeadlines(ctx, m.ID, StartDeadlines(now, time.Hour, 0, time.Minute, 5*time.Minute)))
	if got := get(m.ID); got.LeaseExpiresAt == nil {
		t.Fatalf("leased member deadlines = %+v; want a lease deadline", got)
	}
	must(t, s.SetPoolState(ctx, m.ID, wire.PoolReturning, wire.PoolIdle))
	if got := get(m.ID); got != (wire.Deadlines{}) {
		t.Errorf("an idle member keeps deadlines %+v; want none", got)
	}
}
