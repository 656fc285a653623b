package api

import (
	"context"
	"testing"

	"github.com/primerhq/primer/wire"
)

// TestCreateEgress: a workspace's own egress only narrows its template's,
// and only where the backend has a network to close; a create that narrows
// never takes a pool's member, which was made with the template's network.
func TestCreateEgress(t *testing.T) {
	h := newHarness(t)
	h.pool("p", 1)
	member := h.member("p", wire.PhaseRunning, wire.PoolIdle)
	tests := []struct {
		name, body, msg string
	}{
		{"widen", `{"template_id":"default","egress":"allow"}`, "only narrow"},
		{"unknown value", `{"template_id":"default","egress":"none"}`, "only narrow"},
		{"no network to close", `{"template_id":"default","egress":"deny_all"}`, "local backend"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.do("POST", "/v1/workspaces", tt.body).expectError(t, 400, "invalid", "egress", tt.msg)
		})
	}
	got, err := h.store.GetWorkspace(context.Background(), member.ID)
	if err != nil || got.PoolState != wire.PoolIdle {
		t.Fatalf("pool member after refused creates: %+v, %v; want it idle, not taken", got, err)
	}
}
