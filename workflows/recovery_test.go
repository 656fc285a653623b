package workflows

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/wire"
)

func policyInput(p backend.Policy) WorkspaceInput {
	in := testInput()
	in.Policy = &p
	return in
}

func (f *fakes) eventList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		out = append(out, e.Type)
	}
	return out
}

func (f *fakes) reasonOf(to string, nth int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.phases {
		if p.To == to {
			if nth == 0 {
				return p.Reason
			}
			nth--
		}
	}
	return ""
}

// A sandbox that dies is replaced once it has been failed for the
// recovery delay: the replacement comes up pending, runs on its first hit,
// and the sessions lost at the failure are resumed (Recovered) from the
// time of the failure.
func TestStaleRecoveryReplacesTheSandbox(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{hit, miss("a"), miss("b"), miss("container exited (137)"), miss("still dead"), hit}}
	env := newEnv(t, f)
	start := env.Now()
	deleteAt(env, 10*time.Minute, "done")
	env.ExecuteWorkflow(WorkspaceWorkflowName, policyInput(backend.Policy{
		StartTimeout: 10 * time.Minute, MaxAttempts: 3, RecoverAfter: 30 * time.Second,
	}))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{wire.PhaseRunning, wire.PhaseFailed, wire.PhasePending, wire.PhaseRunning, wire.PhaseTerminating}
	if got := f.phaseList(); !slices.Equal(got, want) {
		t.Fatalf("phases = %v, want %v", got, want)
	}
	if r := f.reasonOf(wire.PhasePending, 0); r != "recovering (attempt 1 of 3) after: container exited (137)" {
		t.Errorf("pending reason = %q", r)
	}
	if len(f.replaces) != 1 || f.replaces[0].Handle == nil || f.replaces[0].Handle.Path != testHandle.Path {
		t.Fatalf("replaces = %+v, want one with the old handle", f.replaces)
	}
	// Failed at the 4th probe (90 s); the probe at 120 s missed, so the
	// replacement started then.
	if len(f.recovered) != 1 {
		t.Fatalf("recovered = %+v", f.recovered)
	}
	if got := f.recovered[0].LostSince.Sub(start); got != 3*testInterval {
		t.Errorf("lost since +%s, want +%s", got, 3*testInterval)
	}
	if f.recovered[0].Attempt != 1 {
		t.Errorf("recovered attempt = %d", f.recovered[0].Attempt)
	}
	if got := f.eventList(); !slices.Equal(got, []string{wire.EventRecoveryStarted}) {
		t.Errorf("events = %v (workspace.recovered is recorded by Recovered)", got)
	}
	// The probes after the recovery use the replacement's handle.
	last := f.probeInputs[len(f.probeInputs)-1]
	if last.Handle.Attrs["replacement"] != "1" {
		t.Errorf("last probe handle = %+v, want the replacement", last.Handle)
	}
	// The final destroy removes the replacement.
	if d := f.destroys[len(f.destroys)-1]; d.Handle == nil || d.Handle.Attrs["replacement"] != "1" {
		t.Errorf("final destroy handle = %+v", d.Handle)
	}
}

// With a zero delay the replacement starts right at the failure: the
// detection target (failed within 3 probe intervals, replacement running
// within seconds) depends on it.
func TestRecoveryWithZeroDelayStartsAtOnce(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{hit, miss("a"), miss("b"), miss("c"), hit}}
	env := newEnv(t, f)
	start := env.Now()
	deleteAt(env, 5*time.Minute, "done")
	env.ExecuteWorkflow(WorkspaceWorkflowName, policyInput(backend.Policy{StartTimeout: time.Minute, MaxAttempts: 1}))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{wire.PhaseRunning, wire.PhaseFailed, wire.PhasePending, wire.PhaseRunning, wire.PhaseTerminating}
	if got := f.phaseList(); !slices.Equal(got, want) {
		t.Fatalf("phases = %v, want %v", got, want)
	}
	// The replacement's first probe ran at the same workflow time as the
	// probe that failed the workspace: no timer in between.
	if n := len(f.probeInputs); n < 5 {
		t.Fatalf("probes = %d", n)
	}
	if d := f.probeInputs[4].ScheduledAt.Sub(start); d != 3*testInterval {
		t.Errorf("replacement probed at +%s, want +%s", d, 3*testInterval)
	}
}

// Replacements that keep failing are bounded: after MaxAttempts the
// workspace is escalated with the reason, an event and the webhook. A
// recover signal then tries again (even with the attempts used up).
func TestRecoveryEscalatesThenRecoverSignalRetries(t *testing.T) {
	boom := temporal.NewNonRetryableApplicationError("workspace ws-test: replace: No such image: gone:1", "invalid", nil)
	f := &fakes{
		probes:          []activities.ProbeOutput{hit, miss("a"), miss("b"), miss("dead")},
		replaceErrs:     []error{boom, boom},
		hitAfterReplace: true,
	}
	env := newEnv(t, f)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalRecover, RecoverSignal{Reason: "requested by user"})
	}, time.Hour)
	deleteAt(env, time.Hour+10*time.Second, "done")
	env.ExecuteWorkflow(WorkspaceWorkflowName, policyInput(backend.Policy{
		StartTimeout: 10 * time.Minute, MaxAttempts: 2, RecoverAfter: 30 * time.Second, Webhook: true,
	}))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		wire.PhaseRunning, wire.PhaseFailed,
		wire.PhasePending, wire.PhaseFailed, // attempt 1 fails
		wire.PhasePending, wire.PhaseFailed, // attempt 2 fails
		wire.PhaseEscalated,
		wire.PhasePending, wire.PhaseRunning, // the recover signal's attempt works
		wire.PhaseTerminating,
	}
	if got := f.phaseList(); !slices.Equal(got, want) {
		t.Fatalf("phases = %v, want %v", got, want)
	}
	if r := f.reasonOf(wire.PhaseFailed, 2); r != "recovery attempt 2 of 2 failed: workspace ws-test: replace: No such image: gone:1" {
		t.Errorf("second failed-recovery reason = %q", r)
	}
	esc := f.reasonOf(wire.PhaseEscalated, 0)
	if !strings.HasPrefix(esc, "gave up after 2 recovery attempts: recovery attempt 2 of 2 failed:") {
		t.Errorf("escalated reason = %q", esc)
	}
	wantEvents := []string{
		wire.EventRecoveryStarted, wire.EventRecoveryFailed,
		wire.EventRecoveryStarted, wire.EventRecoveryFailed,
		wire.EventEscalated,
		wire.EventRecoveryStarted,
	}
	if got := f.eventList(); !slices.Equal(got, wantEvents) {
		t.Errorf("events = %v, want %v", got, wantEvents)
	}
	if len(f.webhooks) != 1 || f.webhooks[0].Event != wire.EventEscalated || f.webhooks[0].Reason != esc || f.webhooks[0].Attempts != 2 {
		t.Errorf("webhooks = %+v", f.webhooks)
	}
	if len(f.replaces) != 3 {
		t.Errorf("replaces = %d, want 3", len(f.replaces))
	}
	// The failed attempts dropped the handle: the next attempt has none.
	if f.replaces[1].Handle != nil {
		t.Errorf("second replace handle = %+v, want nil after a failed attempt", f.replaces[1].Handle)
	}
	// An escalated workspace waits for a person: no probes while escalated.
	if n := len(f.probeInputs); n != 6 {
		t.Errorf("probes = %d, want 6 (4 before the failure, 1 while failed, 1 after the recover)", n)
	}
}

// max_attempts 0 turns replacement off: the workspace escalates once the
// delay is over.
func TestRecoveryOffEscalates(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{hit, miss("a"), miss("b"), miss("dead")}}
	env := newEnv(t, f)
	deleteAt(env, time.Hour, "done")
	env.ExecuteWorkflow(WorkspaceWorkflowName, policyInput(backend.Policy{StartTimeout: time.Minute, RecoverAfter: time.Minute}))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{wire.PhaseRunning, wire.PhaseFailed, wire.PhaseEscalated, wire.PhaseTerminating}
	if got := f.phaseList(); !slices.Equal(got, want) {
		t.Fatalf("phases = %v, want %v", got, want)
	}
	if r := f.reasonOf(wire.PhaseEscalated, 0); r != "recovery is off (max_attempts 0): dead" {
		t.Errorf("escalated reason = %q", r)
	}
	if len(f.replaces) != 0 || len(f.webhooks) != 0 {
		t.Errorf("replaces = %d, webhooks = %d, want none", len(f.replaces), len(f.webhooks))
	}
}

// A workspace that stays pending past the start timeout fails with a reason
// naming it (here probes are far apart, so the misses rule cannot fire
// first).
func TestStartTimeout(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{miss("connection refused")}}
	env := newEnv(t, f)
	deleteAt(env, 90*time.Second, "done")
	in := policyInput(backend.Policy{StartTimeout: time.Minute, MaxAttempts: 3, RecoverAfter: time.Hour})
	in.ProbeInterval = 10 * time.Minute
	env.ExecuteWorkflow(WorkspaceWorkflowName, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{wire.PhaseFailed, wire.PhaseTerminating}
	if got := f.phaseList(); !slices.Equal(got, want) {
		t.Fatalf("phases = %v, want %v", got, want)
	}
	if r := f.reasonOf(wire.PhaseFailed, 0); r != "did not start within the start timeout (1m0s)" {
		t.Errorf("failed reason = %q", r)
	}
}

// A failed provisioning is recovered too: the replacement is provisioned
// with no handle (the activity tears down by workspace id).
func TestFailedProvisioningIsRecovered(t *testing.T) {
	errFlaky := temporal.NewNonRetryableApplicationError("workspace ws-test: provision: docker engine is not reachable", "unavailable", nil)
	f := &fakes{provisionErrs: []error{errFlaky}}
	env := newEnv(t, f)
	deleteAt(env, 5*time.Minute, "done")
	env.ExecuteWorkflow(WorkspaceWorkflowName, policyInput(backend.Policy{StartTimeout: time.Minute, MaxAttempts: 3, RecoverAfter: 30 * time.Second}))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{wire.PhaseFailed, wire.PhasePending, wire.PhaseRunning, wire.PhaseTerminating}
	if got := f.phaseList(); !slices.Equal(got, want) {
		t.Fatalf("phases = %v, want %v", got, want)
	}
	if len(f.replaces) != 1 || f.replaces[0].Handle != nil {
		t.Errorf("replaces = %+v, want one without a handle", f.replaces)
	}
}

// Returning a pool workspace resets it; a reset that fails deletes it
// (its pool replaces it). A workspace outside a pool ignores the signal.
func TestReturn(t *testing.T) {
	boom := temporal.NewApplicationError("workspace ws-test: reset: runtime: connection lost", "unavailable")
	t.Run("reset and stay", func(t *testing.T) {
		f := &fakes{}
		env := newEnv(t, f)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReturn, ReturnSignal{}) }, 40*time.Second)
		deleteAt(env, 5*time.Minute, "done")
		in := testInput()
		in.PoolID = "warm"
		env.ExecuteWorkflow(WorkspaceWorkflowName, in)
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		if f.resets != 1 {
			t.Errorf("resets = %d, want 1", f.resets)
		}
		if r := f.reasonOf(wire.PhaseTerminating, 0); r != "done" {
			t.Errorf("terminating reason = %q, want the user's delete", r)
		}
	})
	t.Run("reset fails and the workspace is replaced", func(t *testing.T) {
		f := &fakes{resetErrs: []error{boom, boom}}
		env := newEnv(t, f)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReturn, ReturnSignal{}) }, 40*time.Second)
		in := testInput()
		in.PoolID = "warm"
		env.ExecuteWorkflow(WorkspaceWorkflowName, in)
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		if r := f.reasonOf(wire.PhaseTerminating, 0); r != "reset on return failed; replaced: workspace ws-test: reset: runtime: connection lost" {
			t.Errorf("terminating reason = %q", r)
		}
	})
	t.Run("not in a pool", func(t *testing.T) {
		f := &fakes{}
		env := newEnv(t, f)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReturn, ReturnSignal{}) }, 40*time.Second)
		deleteAt(env, 5*time.Minute, "done")
		env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		if f.resets != 0 {
			t.Errorf("resets = %d, want 0", f.resets)
		}
	})
}

// A sandbox that comes back on its own (a Kubernetes pod recreated by its
// StatefulSet, a container restarted by hand) is running again after
// HitsToRecover hits, with no replacement. From version vSelfHeal on, the
// sessions its failure ended are resumed as after a replacement (Recovered,
// from the time of the failure, attempt 0); a second failure and self-heal
// resumes from the second failure's time, so only what it lost. Version
// vRecovery runs, whose histories recorded it, only move the phase back.
func TestSelfHealResumesLostSessions(t *testing.T) {
	// Probes at 0, 30, 60 s, ...: failed at 90 s (4th), running at 180 s
	// (7th), failed at 270 s (10th), running at 360 s (13th).
	probes := []activities.ProbeOutput{
		hit, miss("a"), miss("b"), miss("pod deleted"), hit, hit, hit,
		miss("c"), miss("d"), miss("pod deleted again"), hit, hit, hit,
	}
	tests := []struct {
		name    string
		version workflow.Version
		// wantLost is when each Recovered says the sessions were lost,
		// after the start; none for version 1.
		wantLost []time.Duration
	}{
		{name: "version 2 resumes the sessions", version: vSelfHeal, wantLost: []time.Duration{3 * testInterval, 9 * testInterval}},
		{name: "version 1 only moves the phase", version: vRecovery},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakes{probes: probes}
			env := newEnv(t, f)
			env.OnGetVersion(versionRecovery, workflow.DefaultVersion, vSelfHeal).Return(tc.version)
			start := env.Now()
			deleteAt(env, 12*testInterval+5*time.Second, "done")
			// An hour's delay: stale recovery must not start.
			env.ExecuteWorkflow(WorkspaceWorkflowName, policyInput(backend.Policy{
				StartTimeout: 10 * time.Minute, MaxAttempts: 3, RecoverAfter: time.Hour,
			}))
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			want := []string{
				wire.PhaseRunning,
				wire.PhaseFailed, wire.PhaseRunning,
				wire.PhaseFailed, wire.PhaseRunning,
				wire.PhaseTerminating,
			}
			if got := f.phaseList(); !slices.Equal(got, want) {
				t.Fatalf("phases = %v, want %v", got, want)
			}
			for nth, why := range []string{"pod deleted", "pod deleted again"} {
				if r := f.reasonOf(wire.PhaseFailed, nth); r != why {
					t.Errorf("failed reason %d = %q, want %q", nth, r, why)
				}
				if r := f.reasonOf(wire.PhaseRunning, nth+1); r != "runtime answered 3 probes in a row" {
					t.Errorf("running reason %d = %q", nth+1, r)
				}
			}
			if len(f.replaces) != 0 {
				t.Errorf("replaces = %+v, want none", f.replaces)
			}
			if got := f.eventList(); len(got) != 0 {
				t.Errorf("events = %v, want none (workspace.recovered is recorded by Recovered)", got)
			}
			if len(f.recovered) != len(tc.wantLost) {
				t.Fatalf("recovered = %+v, want %d", f.recovered, len(tc.wantLost))
			}
			for i, lost := range tc.wantLost {
				r := f.recovered[i]
				if got := r.LostSince.Sub(start); got != lost {
					t.Errorf("recovery %d: lost since +%s, want +%s", i+1, got, lost)
				}
				if r.Attempt != 0 || r.WorkspaceID != "ws-test" {
					t.Errorf("recovery %d = %+v, want attempt 0 of ws-test", i+1, r)
				}
			}
			var out WorkspaceOutput
			if err := env.GetWorkflowResult(&out); err != nil {
				t.Fatal(err)
			}
			if got := out.State.LostAt.Sub(start); got != 9*testInterval {
				t.Errorf("LostAt = +%s, want the second failure (+%s)", got, 9*testInterval)
			}
			if out.State.Attempts != 0 || out.State.Recovering {
				t.Errorf("attempts = %d, recovering = %v, want 0 and false", out.State.Attempts, out.State.Recovering)
			}
		})
	}
}

// A replacement that comes up but fails its probes leaves the workspace
// failed with its handle; when that sandbox then answers HitsToRecover
// probes, the sessions lost at the first failure are resumed, and the
// recovery names the attempt that brought the workspace back.
func TestSelfHealAfterAFailedReplacement(t *testing.T) {
	// Failed at 90 s; the probe at 120 s misses, so the replacement starts
	// then and is probed at once: misses at 120, 150, 180 s (attempt 1
	// failed). Hits at 210 s (which holds the next replacement back), 240
	// and 270 s: running.
	f := &fakes{probes: []activities.ProbeOutput{
		hit, miss("a"), miss("b"), miss("container exited (137)"), miss("still dead"),
		miss("r1"), miss("r2"), miss("replacement not answering"), hit,
	}}
	env := newEnv(t, f)
	start := env.Now()
	deleteAt(env, 9*testInterval+5*time.Second, "done")
	env.ExecuteWorkflow(WorkspaceWorkflowName, policyInput(backend.Policy{
		StartTimeout: 10 * time.Minute, MaxAttempts: 3, RecoverAfter: 30 * time.Second,
	}))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		wire.PhaseRunning, wire.PhaseFailed,
		wire.PhasePending, wire.PhaseFailed, // attempt 1 comes up, then misses
		wire.PhaseRunning, // and answers again
		wire.PhaseTerminating,
	}
	if got := f.phaseList(); !slices.Equal(got, want) {
		t.Fatalf("phases = %v, want %v", got, want)
	}
	if r := f.reasonOf(wire.PhaseFailed, 1); r != "recovery attempt 1 of 3 failed: replacement not answering" {
		t.Errorf("second failed reason = %q", r)
	}
	if len(f.replaces) != 1 {
		t.Errorf("replaces = %d, want 1", len(f.replaces))
	}
	if got, want := f.eventList(), []string{wire.EventRecoveryStarted, wire.EventRecoveryFailed}; !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if len(f.recovered) != 1 {
		t.Fatalf("recovered = %+v, want one", f.recovered)
	}
	if got := f.recovered[0].LostSince.Sub(start); got != 3*testInterval {
		t.Errorf("lost since +%s, want the first failure (+%s)", got, 3*testInterval)
	}
	if f.recovered[0].Attempt != 1 {
		t.Errorf("recovered attempt = %d, want 1", f.recovered[0].Attempt)
	}
}
