package api

import (
	"strings"
	"testing"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// TestE2BPausedState: a paused workspace is E2B state paused in get and
// in the list, and the list's state filter tells paused from running.
func TestE2BPausedState(t *testing.T) {
	h := newHarness(t)
	running := h.workspace(wire.PhaseRunning)
	paused := h.workspace(wire.PhasePaused)

	var got e2bListed
	h.e2b(h.adminKey, "GET", "/sandboxes/"+paused.ID, "").expect(t, 200).decode(t, &got)
	if got.SandboxID != paused.ID || got.State != "paused" {
		t.Fatalf("get of a paused sandbox = %+v, want state paused", got)
	}
	h.e2b(h.adminKey, "GET", "/sandboxes/"+running.ID, "").expect(t, 200).decode(t, &got)
	if got.State != "running" {
		t.Fatalf("get of a running sandbox: state %q", got.State)
	}

	tests := []struct {
		query string
		want  map[string]string // id -> state
	}{
		{"state=paused", map[string]string{paused.ID: "paused"}},
		{"state=running", map[string]string{running.ID: "running"}},
		{"state=running,paused", map[string]string{running.ID: "running", paused.ID: "paused"}},
		{"", map[string]string{running.ID: "running", paused.ID: "paused"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var items []e2bListed
			h.e2b(h.adminKey, "GET", "/v2/sandboxes?"+tt.query, "").expect(t, 200).decode(t, &items)
			seen := map[string]string{}
			for _, s := range items {
				seen[s.SandboxID] = s.State
			}
			if len(seen) != len(tt.want) {
				t.Fatalf("list ?%s = %v, want %v", tt.query, seen, tt.want)
			}
			for id, st := range tt.want {
				if seen[id] != st {
					t.Fatalf("list ?%s = %v, want %v", tt.query, seen, tt.want)
				}
			}
		})
	}
}

// TestE2BAutoPauseRefused: autoPause asks to pause at the timeout, which
// Primer cannot do (the timeout deletes); the create is refused 400
// naming the field and the way that works, and nothing is made.
func TestE2BAutoPauseRefused(t *testing.T) {
	h := newHarness(t)
	r := h.e2b(h.adminKey, "POST", "/v2/sandboxes", `{"templateID":"default","autoPause":true}`)
	r.e2bError(t, 400, "autoPause")
	if !strings.Contains(string(r.body), "/pause") {
		t.Errorf("the refusal does not say how to pause: %s", r.body)
	}
	ws, err := h.store.ListWorkspaces(t.Context(), models.WorkspaceFilter{})
	if err != nil || len(ws) != 0 {
		t.Errorf("workspaces after a refused create: %d (%v)", len(ws), err)
	}
}
