package backend_test

import (
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

func TestLifetimeValidate(t *testing.T) {
	tests := []struct {
		name      string
		l         *backend.Lifetime
		wantField string // "" when valid
		wantMax   time.Duration
		wantIdle  time.Duration
	}{
		{"none", nil, "", 0, 0},
		{"both", &backend.Lifetime{Max: "2h", Idle: "15m"}, "", 2 * time.Hour, 15 * time.Minute},
		{"idle only", &backend.Lifetime{Idle: "5m"}, "", 0, 5 * time.Minute},
		{"max not a duration", &backend.Lifetime{Max: "soon"}, "spec.backend.lifetime.max", 0, 0},
		{"max zero", &backend.Lifetime{Max: "0s"}, "spec.backend.lifetime.max", 0, 0},
		{"max too long", &backend.Lifetime{Max: "10000h"}, "spec.backend.lifetime.max", 0, 0},
		{"idle negative", &backend.Lifetime{Idle: "-1m"}, "spec.backend.lifetime.idle", 0, 0},
		{"idle over max", &backend.Lifetime{Max: "10m", Idle: "1h"}, "spec.backend.lifetime.idle", 0, 0},
		{"idle_action pause", &backend.Lifetime{Idle: "5m", IdleAction: backend.IdleActionPause}, "", 0, 5 * time.Minute},
		{"idle_action delete", &backend.Lifetime{Idle: "5m", IdleAction: backend.IdleActionDelete}, "", 0, 5 * time.Minute},
		{"idle_action unknown", &backend.Lifetime{Idle: "5m", IdleAction: "hibernate"}, "spec.backend.lifetime.idle_action", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := backend.Common{Kind: "local", Lifetime: tt.l}
			err := c.Check("local")
			if tt.wantField != "" {
				if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tt.wantField {
					t.Fatalf("Check = %v (field %q), want Invalid naming %s", err, errs.FieldOf(err), tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatalf("Check = %v", err)
			}
			if m, i := c.Lifetimes(); m != tt.wantMax || i != tt.wantIdle {
				t.Fatalf("Lifetimes = %s, %s; want %s, %s", m, i, tt.wantMax, tt.wantIdle)
			}
			want := backend.IdleActionDelete
			if tt.l != nil && tt.l.IdleAction != "" {
				want = tt.l.IdleAction
			}
			if got := c.IdleAction(); got != want {
				t.Errorf("IdleAction = %q, want %q", got, want)
			}
		})
	}
}
