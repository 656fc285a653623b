package activities

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
)

// fakeRuntimes answers the Prober's probes by workspace id and records its
// signals.
type fakeRuntimes struct {
	mu      sync.Mutex
	down    map[string]bool
	gone    map[string]bool // workflow closed: signals are NotFound
	probes  map[string][]time.Time
	signals map[string][]LivenessSignal
	life    *Lifetime
	sigCh   chan string
}

func newFakeRuntimes() *fakeRuntimes {
	return &fakeRuntimes{down: map[string]bool{}, gone: map[string]bool{}, probes: map[string][]time.Time{},
		signals: map[string][]LivenessSignal{}, sigCh: make(chan string, 100)}
}

func (f *fakeRuntimes) probe(_ context.Context, in ProbeInput, held *probeTarget) (ProbeOutput, *probeTarget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in.Watch != nil {
		panic("the Prober's probe asked to watch")
	}
	f.probes[in.WorkspaceID] = append(f.probes[in.WorkspaceID], time.Now())
	if f.down[in.WorkspaceID] {
		return ProbeOutput{Reason: "runtime ping: refused"}, held, nil
	}
	return ProbeOutput{Hit: true, Lifetime: f.life}, held, nil
}

func (f *fakeRuntimes) signal(_ context.Context, wf string, s LivenessSignal) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone[wf] {
		return errs.E(errs.NotFound, "workflow %s: closed", wf)
	}
	f.signals[wf] = append(f.signals[wf], s)
	f.sigCh <- wf
	return nil
}

func (f *fakeRuntimes) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.probes[id])
}

func watchReq(id string, interval time.Duration) WatchRequest {
	return WatchRequest{WorkflowID: "workspace-" + id, Interval: interval, Backstop: 10 * interval, MissesToFail: 3}
}

// TestProberHealthyNoSignals: healthy watched workspaces are probed on
// their interval and nothing is signalled.
func TestProberHealthyNoSignals(t *testing.T) {
	f := newFakeRuntimes()
	p := NewProber(f.probe, f.signal, 4)
	defer p.Stop()
	const n, interval = 50, 50 * time.Millisecond
	watched := time.Now()
	for i := range n {
		id := "ws-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if !p.Watch(ProbeInput{WorkspaceID: id}, nil, watchReq(id, interval), watched, nil) {
			t.Fatal("watch refused")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.count("ws-aa") < 5 && time.Now().Before(deadline) {
		time.Sleep(interval) // polling a counter the Prober moves on its own clock
	}
	if got := f.count("ws-aa"); got < 5 {
		t.Fatalf("ws-aa probed %d times", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.signals) != 0 {
		t.Errorf("signals for healthy workspaces: %v", f.signals)
	}
	// On its interval, not more often: a probe is due an interval after
	// the last one ended.
	ps := f.probes["ws-aa"]
	if span, max := ps[len(ps)-1].Sub(watched), int(ps[len(ps)-1].Sub(watched)/interval)+1; len(ps) > max {
		t.Errorf("%d probes in %s at a %s interval, want at most %d", len(ps), span, interval, max)
	}
}

// TestProberMissesSignalOnceAndStop: three misses in a row signal once with
// the streak and the last reason, within three intervals (+ slack), and
// the watch ends: the workflow takes over.
func TestProberMissesSignalOnceAndStop(t *testing.T) {
	f := newFakeRuntimes()
	p := NewProber(f.probe, f.signal, 4)
	defer p.Stop()
	const interval = 100 * time.Millisecond
	p.Watch(ProbeInput{WorkspaceID: "ws-1"}, nil, watchReq("ws-1", interval), time.Now(), nil)
	p.Watch(ProbeInput{WorkspaceID: "ws-2"}, nil, watchReq("ws-2", interval), time.Now(), nil)
	f.mu.Lock()
	f.down["ws-1"] = true
	f.mu.Unlock()
	killed := time.Now()
	select {
	case wf := <-f.sigCh:
		if wf != "workspace-ws-1" {
			t.Fatalf("signal to %s", wf)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no signal")
	}
	if took := time.Since(killed); took > 3*interval+time.Second {
		t.Errorf("detected after %s, want within 3 intervals + 1 s", took)
	}
	f.mu.Lock()
	s := f.signals["workspace-ws-1"][0]
	f.mu.Unlock()
	if s.Misses != 3 || s.Reason != "runtime ping: refused" || s.Probes != 3 {
		t.Errorf("signal = %+v", s)
	}
	if p.Watching() != 1 {
		t.Errorf("watching %d after the failure, want 1 (ws-2)", p.Watching())
	}
	before := f.count("ws-1")
	time.Sleep(3 * interval) // nothing may happen: the failed one is not probed
	if after := f.count("ws-1"); after != before {
		t.Errorf("ws-1 probed %d more times after its failure was signalled", after-before)
	}
}

// TestProberRenewResetsStreak: a renewal (the backstop probe) restarts the
// streak, and a hit between misses resets it: two misses, a hit, two
// misses never signal.
func TestProberRenewResetsStreak(t *testing.T) {
	f := newFakeRuntimes()
	p := NewProber(f.probe, f.signal, 4)
	defer p.Stop()
	const interval = 50 * time.Millisecond
	p.Watch(ProbeInput{WorkspaceID: "ws-1"}, nil, watchReq("ws-1", interval), time.Now(), nil)
	for range 4 {
		f.mu.Lock()
		f.down["ws-1"] = !f.down["ws-1"]
		f.mu.Unlock()
		start := f.count("ws-1")
		for f.count("ws-1") < start+2 {
			time.Sleep(interval / 5)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.signals) != 0 {
		t.Errorf("signals = %v, want none (never 3 misses in a row)", f.signals)
	}
}

// TestProberClosedWorkflowDropsWatch: a workflow that closed (deleted) is
// not watched any more once its signal is refused, and an unrenewed
// watch lapses.
func TestProberClosedWorkflowDropsWatch(t *testing.T) {
	f := newFakeRuntimes()
	p := NewProber(f.probe, f.signal, 4)
	defer p.Stop()
	const interval = 20 * time.Millisecond
	f.down["ws-1"], f.gone["workspace-ws-1"] = true, true
	p.Watch(ProbeInput{WorkspaceID: "ws-1"}, nil, watchReq("ws-1", interval), time.Now(), nil)
	deadline := time.Now().Add(5 * time.Second)
	for p.Watching() != 0 && time.Now().Before(deadline) {
		time.Sleep(interval)
	}
	if p.Watching() != 0 {
		t.Fatal("closed workflow still watched")
	}
	// A watch that was not renewed since long before lapses.
	old := time.Now().Add(-time.Hour)
	p.Watch(ProbeInput{WorkspaceID: "ws-2"}, nil, watchReq("ws-2", interval), old, nil)
	for p.Watching() != 0 && time.Now().Before(deadline) {
		time.Sleep(interval)
	}
	if p.Watching() != 0 || f.count("ws-2") != 0 {
		t.Errorf("lapsed watch: watching %d, probed %d times", p.Watching(), f.count("ws-2"))
	}
}

// TestProberLifetimeSignal: a deadline before the workflow's next wake is
// signalled once.
func TestProberLifetimeSignal(t *testing.T) {
	f := newFakeRuntimes()
	p := NewProber(f.probe, f.signal, 4)
	defer p.Stop()
	const interval = 20 * time.Millisecond
	req := watchReq("ws-1", interval)
	req.Backstop = time.Hour
	p.Watch(ProbeInput{WorkspaceID: "ws-1", Lifetime: true}, nil, req, time.Now(), nil)
	lease := time.Now().Add(time.Minute)
	f.mu.Lock()
	f.life = &Lifetime{LeaseExpiresAt: lease}
	f.mu.Unlock()
	select {
	case <-f.sigCh:
	case <-time.After(5 * time.Second):
		t.Fatal("no lifetime signal")
	}
	start := f.count("ws-1")
	for f.count("ws-1") < start+5 {
		time.Sleep(interval)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sigs := f.signals["workspace-ws-1"]
	if len(sigs) != 1 || sigs[0].Misses != 0 || sigs[0].Lifetime == nil || !sigs[0].Lifetime.LeaseExpiresAt.Equal(lease) {
		t.Errorf("signals = %+v, want one with the lease", sigs)
	}
}
