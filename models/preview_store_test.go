package models

import (
	"context"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// testPreviews: a link is listed while live, revoked once (a second
// revoke keeps the first time), hidden from another workspace's revoke,
// revoked when its workspace goes back to its pool and gone with its
// workspace.
func testPreviews(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendLocal}))
	must(t, s.CreateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p"}))
	must(t, s.CreatePool(ctx, &wire.Pool{ID: "pool-a", TemplateID: "t", Size: 1}))
	w := newPoolWorkspace("pool-a", wire.PoolLeased, wire.PhaseRunning, time.Now())
	must(t, s.CreateWorkspace(ctx, w))
	other := newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, other))

	live := &wire.Preview{ID: NewID("pv"), WorkspaceID: w.ID, Port: 8080, ExpiresAt: time.Now().Add(time.Hour)}
	expired := &wire.Preview{ID: NewID("pv"), WorkspaceID: w.ID, Port: 8080, ExpiresAt: time.Now().Add(-time.Second)}
	revoked := &wire.Preview{ID: NewID("pv"), WorkspaceID: w.ID, Port: 3000, ExpiresAt: time.Now().Add(time.Hour)}
	for _, p := range []*wire.Preview{live, expired, revoked} {
		must(t, s.CreatePreview(ctx, p))
	}
	if live.TenantID != wire.DefaultTenantID {
		t.Errorf("tenant %q, want the default", live.TenantID)
	}
	first, err := s.RevokePreview(ctx, w.ID, revoked.ID)
	must(t, err)
	again, err := s.RevokePreview(ctx, w.ID, revoked.ID)
	must(t, err)
	if first.RevokedAt == nil || again.RevokedAt == nil || !again.RevokedAt.Equal(*first.RevokedAt) {
		t.Errorf("revoked at %v then %v, want one time", first.RevokedAt, again.RevokedAt)
	}
	_, err = s.RevokePreview(ctx, other.ID, live.ID)
	wantErr(t, err, errs.NotFound, "preview "+live.ID+": not found")

	list, err := s.ListPreviews(ctx, w.ID)
	must(t, err)
	if len(list) != 1 || list[0].ID != live.ID || list[0].RevokedAt != nil {
		t.Fatalf("live previews %+v, want only %s", list, live.ID)
	}

	// Back to the pool: the next lessee gets no link of this one.
	must(t, s.SetPoolState(ctx, w.ID, wire.PoolLeased, wire.PoolReturning))
	got, err := s.GetPreview(ctx, live.ID)
	must(t, err)
	if got.RevokedAt == nil {
		t.Error("a link survived its workspace's return to the pool")
	}

	must(t, s.DeleteWorkspace(ctx, w.ID))
	_, err = s.GetPreview(ctx, live.ID)
	wantErr(t, err, errs.NotFound, "preview "+live.ID+": not found")
}
