package activities

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestProberBeacon watches a fleet of 1,000 memory workspaces (runtime
// servers in this process, on loopback WebSockets) with beacons: while
// many beacons arrive the Prober pings none and the store runs no
// statement; then one runtime dies and its workflow alone is signalled,
// with three misses whose reason is "beacon expired".
func TestProberBeacon(t *testing.T) {
	const fleet = 1000
	r := newRig(t)
	pr := newProbeRecorder(r)
	defer pr.p.Stop()
	r.a.BeaconOff = false
	ctx := context.Background()
	// A 2 s interval leaves a loaded machine (the race pass) room: a
	// beacon late by a whole interval would be a ping.
	interval := 2 * time.Second
	ids := make([]string, fleet)
	for i := range ids {
		id := fmt.Sprintf("ws-fleet-%03d", i)
		ids[i] = id
		r.workspace(t, id, `{"kind":"memory"}`)
		p, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: id})
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.a.Probe(ctx, ProbeInput{WorkspaceID: id, Handle: p.Handle, Lifetime: true,
			Watch: &WatchRequest{WorkflowID: "workspace-" + id, Interval: interval, Backstop: time.Hour, MissesToFail: 3}})
		if err != nil || !out.Hit || !out.Watched {
			t.Fatalf("the workflow's probe of %s = %+v, %v; want a hit, watched", id, out, err)
		}
		if h := heldOf(pr.p, id); h == nil || h.beacon.Load() == nil {
			t.Fatalf("the watch of %s holds no beacon", id)
		}
	}

	var statements atomic.Int64
	if err := r.store.CountStatements(&statements); err != nil {
		t.Fatal(err)
	}
	// The window: until every runtime has beaconed three times more, with
	// the Prober's checks (every interval, 3 beacons each) going on.
	from := time.Now()
	pr.mu.Lock()
	before := len(pr.outs)
	pr.mu.Unlock()
	for _, id := range ids {
		b := heldOf(pr.p, id).beacon.Load()
		waitUntil(t, func() bool { return b.Last().After(from.Add(2 * b.Interval())) })
	}
	if n := statements.Load(); n != 0 {
		t.Errorf("%d database statements while %d idle runtimes beaconed, want none", n, fleet)
	}
	pr.mu.Lock()
	probes, signalled := pr.outs[before:], len(pr.signals)
	pr.mu.Unlock()
	if len(probes) != 0 || signalled != 0 {
		t.Errorf("healthy beacon-backed watches made %d probes %+v and %d signals in the window, want none", len(probes), probes, signalled)
	}

	// A runtime dies: its connection ends and the pool cannot dial it
	// again. Three misses, each "beacon expired", signal its workflow.
	r.mem.Kill(ids[7])
	_, sigs := pr.waitSignals(t, 1)
	s := sigs[0]
	if s.Misses != 3 || !strings.HasPrefix(s.Reason, BeaconReason) {
		t.Errorf("signal after the runtime died = %+v, want 3 misses, reason %q", s, BeaconReason)
	}
	if heldOf(pr.p, ids[7]) != nil {
		t.Error("the Prober still watches the failed workspace")
	}
	if pr.p.Watching() != fleet-1 {
		t.Errorf("the Prober watches %d workspaces, want the %d alive", pr.p.Watching(), fleet-1)
	}
}

// waitUntil polls cond, which the runtimes' beacons move on their own
// clock, for at most 20 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitSignals waits until the Prober sent n signals, and returns its
// probes and signals.
func (pr *probeRecorder) waitSignals(t *testing.T, n int) ([]ProbeOutput, []LivenessSignal) {
	t.Helper()
	var outs []ProbeOutput
	var sigs []LivenessSignal
	waitUntil(t, func() bool {
		pr.mu.Lock()
		defer pr.mu.Unlock()
		outs, sigs = append([]ProbeOutput(nil), pr.outs...), append([]LivenessSignal(nil), pr.signals...)
		return len(sigs) >= n
	})
	return outs, sigs
}
