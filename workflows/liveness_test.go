package workflows

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/wire"
)

// watchedHit is a probe that hit and whose workspace the Prober now watches.
var watchedHit = activities.ProbeOutput{Hit: true, Watched: true}

// TestLivenessHealthySleepsOnBackstop: a running workspace the Prober
// watches costs its workflow one probe per backstop (BackstopProbes
// intervals), not one per interval, and every probe of a running one asks
// to be watched with the workspace's interval and backstop.
func TestLivenessHealthySleepsOnBackstop(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{watchedHit}}
	env := newEnv(t, f)
	hold := 3*BackstopProbes*testInterval + 5*time.Second
	deleteAt(env, hold, "done")
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// The first probe (pending -> running) and one per backstop: 4, where
	// the per-probe loop makes 1 + hold/interval = 31.
	if n := len(f.probeInputs); n != 4 {
		t.Errorf("probes over %s = %d, want 4 (one per backstop)", hold, n)
	}
	for i, in := range f.probeInputs {
		if in.Watch == nil {
			t.Errorf("probe %d did not ask to be watched", i+1)
			continue
		}
		if in.Watch.Interval != testInterval || in.Watch.Backstop != BackstopProbes*testInterval || in.Watch.MissesToFail != MissesToFail || in.Watch.WorkflowID == "" {
			t.Errorf("probe %d watch request = %+v", i+1, *in.Watch)
		}
	}
	if got := f.phaseList(); !slices.Equal(got, []string{wire.PhaseRunning, wire.PhaseTerminating}) {
		t.Errorf("phases = %v", got)
	}
}

// TestLivenessWithoutProberProbesEveryInterval: a worker whose Prober is
// off (the probe says it does not watch) keeps the per-probe loop.
func TestLivenessWithoutProberProbesEveryInterval(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{hit}}
	env := newEnv(t, f)
	deleteAt(env, 10*testInterval+5*time.Second, "done")
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.probeInputs); n != 11 {
		t.Errorf("probes = %d, want 11 (one per interval)", n)
	}
}

// TestLivenessMissesFail: the Prober's signal of MissesToFail misses fails
// the running workspace with the last miss's reason, at once (no probe of
// the workflow's own), and the workflow probes every interval again: three
// hits of its own bring it back to running, and it is watched again.
func TestLivenessMissesFail(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{watchedHit}}
	env := newEnv(t, f)
	signalAt := 2*testInterval + 5*time.Second
	var probesAtSignal int
	env.RegisterDelayedCallback(func() {
		f.mu.Lock()
		probesAtSignal = len(f.probeInputs)
		// From now on the workflow's own probes: misses... then hits.
		f.probes = []activities.ProbeOutput{watchedHit}
		f.mu.Unlock()
		env.SignalWorkflow(SignalLiveness, activities.LivenessSignal{Misses: 3, Reason: "runtime ping: dial: refused", Probes: 3, At: env.Now()})
	}, signalAt)
	var phaseAfter string
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryState)
		if err == nil {
			var st WorkspaceState
			_ = v.Get(&st)
			phaseAfter = st.Phase
		}
	}, signalAt+time.Second)
	deleteAt(env, signalAt+4*testInterval+5*time.Second, "done")
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if probesAtSignal != 1 {
		t.Errorf("probes before the signal = %d, want 1 (the watched workspace sleeps)", probesAtSignal)
	}
	if phaseAfter != wire.PhaseFailed {
		t.Errorf("phase a second after the signal = %q, want failed", phaseAfter)
	}
	want := []string{wire.PhaseRunning, wire.PhaseFailed, wire.PhaseRunning, wire.PhaseTerminating}
	if got := f.phaseList(); !slices.Equal(got, want) {
		t.Errorf("phases = %v, want %v", got, want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.phases[1].Reason != "runtime ping: dial: refused" {
		t.Errorf("failed reason = %q", f.phases[1].Reason)
	}
	// After the failure: HitsToRecover probes an interval apart (the
	// failed workspace is not watched), the last one making it running.
	if n := len(f.probeInputs) - probesAtSignal; n != HitsToRecover {
		t.Errorf("probes after the failure = %d, want %d", n, HitsToRecover)
	}
	// Self-heal resumes the sessions lost since the failure.
	if len(f.recovered) != 1 || f.recovered[0].LostSince.IsZero() {
		t.Errorf("recovered = %+v, want one since the failure", f.recovered)
	}
}

// TestLivenessStaleSignalIgnored: a signal for a workspace that is not
// watched (the Prober of another worker, or one that came late) changes
// nothing, and fewer misses than MissesToFail never fail.
func TestLivenessStaleSignalIgnored(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{hit}}
	env := newEnv(t, f)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalLiveness, activities.LivenessSignal{Misses: 3, Reason: "stale"})
	}, testInterval/2)
	env.RegisterDelayedCallback(func() {
		f.mu.Lock()
		f.probes = []activities.ProbeOutput{watchedHit}
		f.mu.Unlock()
	}, 2*testInterval)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalLiveness, activities.LivenessSignal{Misses: 2, Reason: "two"})
	}, 4*testInterval)
	deleteAt(env, 6*testInterval, "done")
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got := f.phaseList(); !slices.Equal(got, []string{wire.PhaseRunning, wire.PhaseTerminating}) {
		t.Errorf("phases = %v, want running, terminating", got)
	}
}

// TestLivenessLifetimeSignalWakes: a deadline the Prober read that comes
// before the backstop (a lease granted meanwhile) wakes the workflow at
// it, which checks and acts on it.
func TestLivenessLifetimeSignalWakes(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{watchedHit}}
	env := newEnv(t, f)
	var expiry time.Time
	env.RegisterDelayedCallback(func() {
		expiry = env.Now().Add(testInterval)
		env.SignalWorkflow(SignalLiveness, activities.LivenessSignal{Probes: 1, At: env.Now(), Lifetime: &activities.Lifetime{ExpiresAt: expiry}})
	}, testInterval+time.Second)
	var checked []time.Time
	var a *activities.Activities
	env.OnActivity(a.CheckLifetime, mock.Anything, mock.Anything).Return(func(context.Context, activities.CheckLifetimeInput) (activities.CheckLifetimeOutput, error) {
		checked = append(checked, env.Now())
		return activities.CheckLifetimeOutput{Lifetime: activities.Lifetime{ExpiresAt: expiry}}, nil
	})
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(checked) != 1 || checked[0].Before(expiry) || checked[0].After(expiry.Add(time.Second)) {
		t.Errorf("lifetime checked at %v, want once at %v", checked, expiry)
	}
	if got := f.phaseList(); !slices.Equal(got, []string{wire.PhaseRunning, wire.PhaseTerminating}) {
		t.Errorf("phases = %v", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.destroys) != 1 {
		t.Errorf("destroys = %d, want 1 (expired)", len(f.destroys))
	}
}

// TestLivenessDeleteWhileWatched: a delete reaches a watched workspace at
// once, not at its backstop.
func TestLivenessDeleteWhileWatched(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{watchedHit}}
	env := newEnv(t, f)
	start := env.Now()
	deleteAt(env, 2*testInterval, "bye")
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if took := env.Now().Sub(start); took > 2*testInterval+time.Second {
		t.Errorf("delete took until %s, want at %s", took, 2*testInterval)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.destroys) != 1 || len(f.probeInputs) != 1 {
		t.Errorf("destroys = %d, probes = %d; want 1, 1", len(f.destroys), len(f.probeInputs))
	}
}
