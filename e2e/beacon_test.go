package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/wire"
)

// TestBeaconStale proves the liveness beacon on real engines: a workspace
// whose container is killed (its runtime connection ends) and one whose
// container is paused (the connection stays open, the frozen runtime stops
// beaconing) are declared failed by the worker's Prober with the reason
// "beacon expired", which the workflow records on the phase change, as it
// records a ping's misses. The bound is the Prober's three misses; the
// outcome, not a time, is asserted (times are in make bench).
func TestBeaconStale(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e)
		r.template("beacon", nil)
		faults := []struct {
			name string
			do   func(ctx context.Context, id string) error
			// undo lets the engine remove the container afterwards.
			undo func(ctx context.Context, id string) error
		}{
			{name: "Killed", do: func(ctx context.Context, id string) error {
				return r.eng.Client().ContainerKill(ctx, id, "KILL")
			}},
			{name: "Paused", do: func(ctx context.Context, id string) error {
				return r.eng.Client().ContainerPause(ctx, id)
			}, undo: func(ctx context.Context, id string) error {
				return r.eng.Client().ContainerUnpause(ctx, id)
			}},
		}
		for _, f := range faults {
			t.Run(f.name, func(t *testing.T) {
				t.Parallel()
				ctx := ctxT(t, 3*time.Minute)
				ws := r.running(t, "beacon")
				info := r.oneSandbox(t, ws.ID)
				if err := f.do(ctx, info.ID); err != nil {
					t.Fatalf("%s container: %v", f.name, err)
				}
				failed := waitChangeTo(t, r, ws.ID, wire.PhaseFailed, 2*time.Minute)
				t.Logf("%s: failed: %s", f.name, failed.Reason)
				if !strings.HasPrefix(failed.Reason, activities.BeaconReason) {
					t.Errorf("failed reason %q, want %q", failed.Reason, activities.BeaconReason)
				}
				if f.undo != nil {
					if err := f.undo(ctx, info.ID); err != nil {
						t.Errorf("undo %s: %v", f.name, err)
					}
				}
				r.deleteGone(t, ws.ID)
			})
		}
	})
}

// waitChangeTo polls workspace id's events until it changed to phase, for
// at most d, and returns that change.
func waitChangeTo(t *testing.T, r *faultRig, id, phase string, d time.Duration) phaseChange {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var evs []wire.Event
	for {
		if got, err := r.p.api.Events(ctx, id, 0); err == nil {
			evs = got
			if pc, ok := lastChangeTo(t, evs, phase); ok {
				return pc
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("workspace %s did not change to %s within %s; events: %s", id, phase, d, describeEvents(evs))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
