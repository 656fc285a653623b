package activities

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// probeRecorder is a Prober on a rig's Activities: its probes are
// Activities.probeWatched, recorded, and its signals are recorded.
type probeRecorder struct {
	mu      sync.Mutex
	outs    []ProbeOutput
	signals []LivenessSignal
	p       *Prober
}

func newProbeRecorder(r *rig) *probeRecorder {
	pr := &probeRecorder{}
	pr.p = NewProber(func(ctx context.Context, in ProbeInput, held *probeTarget) (ProbeOutput, *probeTarget, error) {
		out, held := r.a.probeWatched(ctx, in, held)
		pr.mu.Lock()
		pr.outs = append(pr.outs, out)
		pr.mu.Unlock()
		return out, held, nil
	}, func(_ context.Context, _ string, s LivenessSignal) error {
		pr.mu.Lock()
		pr.signals = append(pr.signals, s)
		pr.mu.Unlock()
		return nil
	}, 4)
	r.a.Prober = pr.p
	// These tests are of the Prober's pings; prober_beacon_test.go has
	// the beacon's.
	r.a.BeaconOff = true
	return pr
}

// waitProbes waits until the Prober made n probes, and returns them.
func (pr *probeRecorder) waitProbes(t *testing.T, n int) ([]ProbeOutput, []LivenessSignal) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pr.mu.Lock()
		outs, sigs := append([]ProbeOutput(nil), pr.outs...), append([]LivenessSignal(nil), pr.signals...)
		pr.mu.Unlock()
		if len(outs) >= n {
			return outs, sigs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Prober made %d probes in 10 s, want %d", len(outs), n)
		}
		time.Sleep(20 * time.Millisecond) // polling a count the Prober moves on its own clock
	}
}

// heldOf is the probeTarget the Prober holds for workspace id.
func heldOf(p *Prober, id string) *probeTarget {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.watches[id]; ok {
		return w.held
	}
	return nil
}

// provisioned is a provisioned memory workspace of a new rig, and the
// probe input of its workflow.
func provisioned(t *testing.T, id string) (*rig, ProbeInput) {
	t.Helper()
	r := newRig(t)
	r.workspace(t, id, `{"kind":"memory"}`)
	out, err := r.a.Provision(context.Background(), ProvisionInput{WorkspaceID: id})
	if err != nil {
		t.Fatal(err)
	}
	return r, ProbeInput{WorkspaceID: id, Handle: out.Handle, Lifetime: true}
}

// TestProberHealthyProbeReadsNoRow: once the workflow's probe handed a
// healthy workspace to the Prober, the Prober's probes read no row: with
// the database closed under it, every one still hits, and nothing is
// signalled.
func TestProberHealthyProbeReadsNoRow(t *testing.T) {
	r, in := provisioned(t, "ws-cached")
	pr := newProbeRecorder(r)
	defer pr.p.Stop()
	ctx := context.Background()
	watch := in
	watch.Watch = &WatchRequest{WorkflowID: "workspace-ws-cached", Interval: 30 * time.Millisecond, Backstop: time.Minute, MissesToFail: 3}
	out, err := r.a.Probe(ctx, watch)
	if err != nil || !out.Hit || !out.Watched {
		t.Fatalf("the workflow's probe = %+v, %v; want a hit, watched", out, err)
	}

	if err := r.store.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.GetWorkspace(ctx, "ws-cached"); err == nil {
		t.Fatal("a read of the closed store succeeded: the test proves nothing")
	}
	outs, sigs := pr.waitProbes(t, 5)
	for i, o := range outs {
		if !o.Hit {
			t.Errorf("probe %d with the database closed: %+v, want a hit on the rows held", i, o)
		}
	}
	if len(sigs) != 0 {
		t.Errorf("signals for a healthy workspace: %+v", sigs)
	}
}

// TestProberPicksUpReplacement: a replacement gives the workspace a new
// token and sandbox. The workflow's next probe (the re-registration after
// recovery, or the backstop) hands the new rows to the Prober; and a
// Prober's probe on rows gone stale reads them again rather than count a
// miss.
func TestProberPicksUpReplacement(t *testing.T) {
	r, in := provisioned(t, "ws-replaced")
	pr := newProbeRecorder(r)
	defer pr.p.Stop()
	ctx := context.Background()
	watch := in
	watch.Watch = &WatchRequest{WorkflowID: "workspace-ws-replaced", Interval: time.Hour, Backstop: time.Hour, MissesToFail: 3}
	if out, err := r.a.Probe(ctx, watch); err != nil || !out.Watched {
		t.Fatalf("the workflow's probe = %+v, %v; want watched", out, err)
	}
	old := heldOf(pr.p, "ws-replaced")
	if old == nil {
		t.Fatal("the Prober holds no rows for the watched workspace")
	}

	rep, err := r.a.Replace(ctx, ReplaceInput{WorkspaceID: "ws-replaced", Handle: &in.Handle})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := r.store.GetWorkspace(ctx, "ws-replaced")
	if err != nil {
		t.Fatal(err)
	}
	if stored.RuntimeToken == old.ws.RuntimeToken {
		t.Fatal("the replacement kept the token: the test proves nothing")
	}

	// A probe on the stale rows: its miss is checked against the rows as
	// stored, and the probe made again with them.
	stale := old.clone()
	ws := *old.ws
	ws.Handle = json.RawMessage(`{"backend":"memory","workspace_id":"ws-elsewhere"}`)
	stale.ws = &ws
	out, got := r.a.probeWatched(ctx, in, stale)
	if !out.Hit {
		t.Errorf("a probe on stale rows = %+v, want a hit on the rows as stored", out)
	}
	if got == nil || got.ws.RuntimeToken != stored.RuntimeToken || string(got.ws.Handle) != string(stored.Handle) {
		t.Error("the probe on stale rows did not hand back the rows as stored")
	}

	// The re-registration: the workflow's probe of the replacement.
	watch.Handle = rep.Handle
	if out, err := r.a.Probe(ctx, watch); err != nil || !out.Hit || !out.Watched {
		t.Fatalf("the workflow's probe of the replacement = %+v, %v; want a hit, watched", out, err)
	}
	if h := heldOf(pr.p, "ws-replaced"); h == nil || h.ws.RuntimeToken != stored.RuntimeToken {
		t.Error("after the workflow's probe the Prober does not hold the new token")
	}
}

// TestProberDeadlinesOfPoolMembers: a workspace's deadlines come from the
// rows held, read again at each renewal (a non-pool workspace's deadlines
// only move later, by an extend or a call, and its workflow reads them
// again when it wakes); a warm pool's member, which a lease can give
// deadlines without a word to its workflow, is read on every probe.
func TestProberDeadlinesOfPoolMembers(t *testing.T) {
	r, in := provisioned(t, "ws-dl")
	ctx := context.Background()
	_, held := r.a.probe(ctx, in, nil, 0)
	if held == nil {
		t.Fatal("no rows read")
	}
	soon := time.Now().Add(time.Minute).UTC().Truncate(time.Millisecond)
	if err := r.store.SetDeadlines(ctx, "ws-dl", wire.Deadlines{ExpiresAt: &soon}); err != nil {
		t.Fatal(err)
	}

	out, _ := r.a.probeWatched(ctx, in, held)
	if !out.Hit || out.Lifetime == nil || !out.Lifetime.ExpiresAt.IsZero() {
		t.Errorf("probe on the rows held = %+v, want a hit with their deadlines (none)", out)
	}

	member := held.clone()
	ws := *held.ws
	ws.PoolID = "pool-1"
	member.ws = &ws
	out, got := r.a.probeWatched(ctx, in, member)
	if !out.Hit || out.Lifetime == nil || !out.Lifetime.ExpiresAt.Equal(soon) {
		t.Errorf("probe of a pool member = %+v, want a hit with the stored deadline %s", out, soon)
	}
	if got == nil || got.ws.ExpiresAt == nil || got == member {
		t.Error("the probe of a pool member did not hand back the rows it read")
	}
	if strings.Contains(out.Reason, ws.RuntimeToken) {
		t.Error("reason carries the token")
	}
}
