package activities

import (
	"context"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// CheckLifetime hands the workflow the stored expire_action and
// max_expires_at, which say whether the expiry pauses or deletes.
func TestCheckLifetimeExpireAction(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	now := time.Now()
	expires, later := now.Add(-time.Minute), now.Add(time.Hour)
	tests := []struct {
		name, action string
		max          *time.Time
		wantPauses   bool
	}{
		{"pause before the max", wire.ExpireActionPause, &later, true},
		{"pause, no max", wire.ExpireActionPause, nil, true},
		{"pause at the max: deleted", wire.ExpireActionPause, &expires, false},
		{"delete", "", &later, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "ws-expire-" + string(rune('a'+i))
			r.workspace(t, id, `{"kind":"memory"}`)
			if err := r.store.SetDeadlines(ctx, id, wire.Deadlines{ExpiresAt: &expires, MaxExpiresAt: tt.max}); err != nil {
				t.Fatal(err)
			}
			if tt.action != "" {
				if err := r.store.SetWorkspaceExpireAction(ctx, id, tt.action); err != nil {
					t.Fatal(err)
				}
			}
			out, err := r.a.CheckLifetime(ctx, CheckLifetimeInput{WorkspaceID: id})
			if err != nil {
				t.Fatal(err)
			}
			if out.Lifetime.ExpireAction != tt.action || out.Lifetime.PausesAtExpiry() != tt.wantPauses {
				t.Errorf("lifetime = %+v: pauses at expiry %v, want %v", out.Lifetime, out.Lifetime.PausesAtExpiry(), tt.wantPauses)
			}
			if tt.max != nil && !out.Lifetime.MaxExpiresAt.Equal(tt.max.UTC().Truncate(time.Microsecond)) {
				t.Errorf("max_expires_at = %s, want %s", out.Lifetime.MaxExpiresAt, *tt.max)
			}
		})
	}
}
