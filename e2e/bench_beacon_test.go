//go:build bench

package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/wire"
)

// TestBenchBeaconDetection times detection on a real Docker container:
// from `docker kill` (or `docker pause`) to the workspace's change to
// failed, with today's pinging Prober (PRIMER_LIVENESS_BEACON=off) and
// with the beacon, on one platform at 1 s probes, three trials of each.
// The bound today is three misses plus 1 s (4 s here). The idle fleet's
// CPU and statements are activities TestBenchBeacon (in-process runtimes:
// containers for 5,000 are too heavy for this machine).
func TestBenchBeaconDetection(t *testing.T) {
	if os.Getenv("PRIMER_BENCH") == "" {
		t.Skip("benchmark: run with `make bench` (PRIMER_BENCH=1)")
	}
	const interval = time.Second
	const trials = 3
	e := containertest.Known()[0]
	containertest.Require(t, e)
	r := newFaultRig(t, e, withProbeInterval(interval))
	r.template("det", nil)

	type key struct{ mode, fault string }
	var mu sync.Mutex
	times := map[key][]time.Duration{}
	reasons := map[key]string{}
	for _, mode := range []string{"prober", "beacon"} {
		if mode == "prober" {
			t.Setenv(activities.BeaconEnv, "off")
		} else {
			t.Setenv(activities.BeaconEnv, "")
		}
		t.Run(mode, func(t *testing.T) {
			for _, fault := range []string{"kill", "pause"} {
				t.Run(fault, func(t *testing.T) {
					t.Parallel()
					for range trials {
						ctx := ctxT(t, 2*time.Minute)
						ws := r.running(t, "det")
						info := r.oneSandbox(t, ws.ID)
						// Let the Prober watch it and the watch settle.
						time.Sleep(3 * interval)
						start := time.Now()
						var err error
						if fault == "kill" {
							err = r.eng.Client().ContainerKill(ctx, info.ID, "KILL")
						} else {
							err = r.eng.Client().ContainerPause(ctx, info.ID)
						}
						if err != nil {
							t.Fatalf("%s: %v", fault, err)
						}
						at, reason := failedAt(t, r, ws.ID, time.Minute)
						mu.Lock()
						times[key{mode, fault}] = append(times[key{mode, fault}], at.Sub(start))
						reasons[key{mode, fault}] = reason
						mu.Unlock()
						if fault == "pause" {
							_ = r.eng.Client().ContainerUnpause(ctx, info.ID)
						}
						r.deleteGone(t, ws.ID)
					}
				})
			}
		})
	}
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	fmt.Printf("# bench beacon detection: a real %s container per trial, %d trials, probe interval %s; bound today: 3 misses + 1 s = %s\n", e.Name, trials, interval, 3*interval+time.Second)
	fmt.Printf("| fault | prober (pings) median | beacon median | beacon/prober | beacon trials | beacon reason |\n|---|---|---|---|---|---|\n")
	for _, fault := range []string{"kill", "pause"} {
		p, b := times[key{"prober", fault}], times[key{"beacon", fault}]
		if len(p) == 0 || len(b) == 0 {
			continue
		}
		reason := reasons[key{"beacon", fault}]
		if i := strings.Index(reason, ";"); i > 0 {
			reason = reason[:i]
		}
		fmt.Printf("| docker %s | %s | %s | %.2f | %v | %s |\n", fault, median(p).Round(time.Millisecond), median(b).Round(time.Millisecond),
			median(b).Seconds()/median(p).Seconds(), roundAll(b), reason)
	}
}

// failedAt waits for workspace id's change to failed and returns when the
// platform recorded it and its reason.
func failedAt(t *testing.T, r *faultRig, id string, d time.Duration) (time.Time, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		if evs, err := r.p.api.Events(ctx, id, 0); err == nil {
			for _, ev := range evs {
				if ev.Type != wire.EventPhaseChanged {
					continue
				}
				var pc phaseChange
				decode(t, ev.Data, &pc)
				if pc.To == wire.PhaseFailed {
					return ev.CreatedAt, pc.Reason
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("workspace %s not failed within %s", id, d)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	return out
}
