package models

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// testLeaseLabelled: a lease with labels stores them in the same
// statement (the returned row and the stored one say so); a lease without
// leaves the workspace's labels alone.
func testLeaseLabelled(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendLocal}))
	must(t, s.CreateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p"}))
	must(t, s.CreatePool(ctx, &wire.Pool{ID: "pl", TemplateID: "t", Size: 2}))
	now := time.Now()
	for i := range 2 {
		w := newPoolWorkspace("pl", wire.PoolIdle, wire.PhaseRunning, now.Add(time.Duration(i)*time.Second))
		w.Labels = map[string]string{"keep": "me"}
		must(t, s.CreateWorkspace(ctx, w))
	}
	want := map[string]string{"primer.run": "run-1", "primer.slot": "0"}
	got, err := s.LeaseWorkspaceLabelled(ctx, "pl", want)
	must(t, err)
	if got == nil || got.PoolState != wire.PoolLeased || !maps.Equal(got.Labels, want) {
		t.Fatalf("labelled lease = %+v; want leased with %v", got, want)
	}
	stored, err := s.GetWorkspace(ctx, got.ID)
	must(t, err)
	if !maps.Equal(stored.Labels, want) {
		t.Errorf("stored labels = %v; want %v", stored.Labels, want)
	}
	plain, err := s.LeaseWorkspaceLabelled(ctx, "pl", nil)
	must(t, err)
	if plain == nil || plain.ID == got.ID || plain.Labels["keep"] != "me" {
		t.Errorf("lease without labels = %+v; want the other member with its labels", plain)
	}
	if none, err := s.LeaseWorkspaceLabelled(ctx, "pl", want); err != nil || none != nil {
		t.Errorf("lease of an empty pool = %+v, %v; want nil, nil", none, err)
	}
}
