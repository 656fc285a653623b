package workflows

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/wire"
)

const testInterval = 30 * time.Second

var (
	hit = activities.ProbeOutput{Hit: true}
)

func miss(reason string) activities.ProbeOutput { return activities.ProbeOutput{Reason: reason} }

// fakes are mocked activities that record what the workflow asked for.
type fakes struct {
	mu sync.Mutex

	provisionErrs  []error // returned by successive calls, then success
	provisionCalls int

	probes      []activities.ProbeOutput // successive results; the last repeats
	probeInputs []activities.ProbeInput
	// timersBeforeFirstProbe is how many timers had been started when the
	// first probe ran.
	timers                 int
	timersBeforeFirstProbe int

	// onProbe, when set, runs inside the n-th probe (1-based).
	onProbe func(n int)
	// stall, when set, runs first in Provision, Replace and Reset (named
	// by activity); an error it returns is the activity's.
	stall func(ctx context.Context, activity string) error
	// lifetime, when set, is the deadlines a probe that asks for them
	// returns (lifetime_test.go).
	lifetime func() *activities.Lifetime

	destroyErrs []error // returned by successive calls, then success
	destroys    []activities.DestroyInput

	replaceErrs []error // returned by successive Replace calls, then success
	// replaced is set by a Replace that succeeded; with hitAfterReplace,
	// every probe after it hits.
	replaced        bool
	hitAfterReplace bool
	replaces        []activities.ReplaceInput
	recovered       []activities.RecoveredInput
	webhooks        []activities.WebhookInput
	resetErrs       []error // returned by successive Reset calls, then success
	resets          int
	phases          []activities.SetPhaseInput
	events          []activities.RecordEventInput
	upserts         []string // PrimerPhase values upserted
}

func (f *fakes) phaseList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, p := range f.phases {
		out = append(out, p.To)
	}
	return out
}

var testHandle = backend.Handle{Backend: "local", WorkspaceID: "ws-test", Path: "/tmp/primer/ws-test"}

// testPolicy keeps recovery out of the way (an hour's delay) of tests of
// the probe rules; recovery_test.go sets its own.
var testPolicy = backend.Policy{StartTimeout: 10 * time.Minute, MaxAttempts: 3, RecoverAfter: time.Hour}

func testInput() WorkspaceInput {
	p := testPolicy
	return WorkspaceInput{
		WorkspaceID:   "ws-test",
		TemplateID:    "default",
		ProviderID:    "local",
		Backend:       "local",
		ProbeInterval: testInterval,
		Policy:        &p,
	}
}

// newEnv returns a test environment whose activities are f's fakes.
func newEnv(t *testing.T, f *fakes) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(newTestLogger(t))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	Register(env, &activities.Activities{}, nil, nil)
	var a *activities.Activities

	env.SetOnTimerScheduledListener(func(string, time.Duration) {
		f.mu.Lock()
		f.timers++
		f.mu.Unlock()
	})
	env.OnActivity(a.Provision, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.ProvisionInput) (activities.ProvisionOutput, error) {
			if err := f.stalled(ctx, "Provision"); err != nil {
				return activities.ProvisionOutput{}, err
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			f.provisionCalls++
			if n := f.provisionCalls; n <= len(f.provisionErrs) && f.provisionErrs[n-1] != nil {
				return activities.ProvisionOutput{}, f.provisionErrs[n-1]
			}
			return activities.ProvisionOutput{Handle: testHandle}, nil
		})
	env.OnActivity(a.Probe, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ProbeInput) (activities.ProbeOutput, error) {
			f.mu.Lock()
			f.probeInputs = append(f.probeInputs, in)
			n := len(f.probeInputs)
			if n == 1 {
				f.timersBeforeFirstProbe = f.timers
			}
			out := hit
			if len(f.probes) > 0 {
				out = f.probes[min(n, len(f.probes))-1]
			}
			if f.replaced && f.hitAfterReplace {
				out = hit
			}
			hook := f.onProbe
			if f.lifetime != nil && in.Lifetime {
				out.Lifetime = f.lifetime()
			}
			f.mu.Unlock()
			if hook != nil {
				hook(n)
			}
			return out, nil
		})
	env.OnActivity(a.SetPhase, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SetPhaseInput) (activities.SetPhaseOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.phases = append(f.phases, in)
			return activities.SetPhaseOutput{}, nil
		})
	env.OnActivity(a.RecordEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RecordEventInput) (activities.RecordEventOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.events = append(f.events, in)
			return activities.RecordEventOutput{EventID: uint64(len(f.events))}, nil
		})
	env.OnActivity(a.Destroy, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.DestroyInput) (activities.DestroyOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.destroys = append(f.destroys, in)
			if n := len(f.destroys); n <= len(f.destroyErrs) && f.destroyErrs[n-1] != nil {
				return activities.DestroyOutput{}, f.destroyErrs[n-1]
			}
			return activities.DestroyOutput{Destroyed: in.Handle != nil}, nil
		})
	env.OnActivity(a.Replace, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.ReplaceInput) (activities.ProvisionOutput, error) {
			if err := f.stalled(ctx, "Replace"); err != nil {
				return activities.ProvisionOutput{}, err
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			f.replaces = append(f.replaces, in)
			if n := len(f.replaces); n <= len(f.replaceErrs) && f.replaceErrs[n-1] != nil {
				return activities.ProvisionOutput{}, f.replaceErrs[n-1]
			}
			f.replaced = true
			h := testHandle
			h.Attrs = map[string]string{"replacement": strconv.Itoa(len(f.replaces))}
			return activities.ProvisionOutput{Handle: h}, nil
		})
	env.OnActivity(a.Recovered, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RecoveredInput) (activities.RecoveredOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.recovered = append(f.recovered, in)
			return activities.RecoveredOutput{}, nil
		})
	env.OnActivity(a.NotifyWebhook, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.WebhookInput) (activities.WebhookOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.webhooks = append(f.webhooks, in)
			return activities.WebhookOutput{Status: 204}, nil
		})
	env.OnActivity(a.Reset, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.ResetInput) (activities.ResetOutput, error) {
			if err := f.stalled(ctx, "Reset"); err != nil {
				return activities.ResetOutput{}, err
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			f.resets++
			if n := f.resets; n <= len(f.resetErrs) && f.resetErrs[n-1] != nil {
				return activities.ResetOutput{}, f.resetErrs[n-1]
			}
			return activities.ResetOutput{Killed: 1}, nil
		})
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		if v, ok := sa.GetKeyword(SearchAttrPhase); ok {
			f.mu.Lock()
			f.upserts = append(f.upserts, v)
			f.mu.Unlock()
		}
	}).Return(nil)
	return env
}

// testLogger writes the workflow's log lines into the test's log. An
// activity the test environment cancelled can still log after the test
// has ended, which testing forbids (a data race on the test): lines after
// the end are dropped, the mutex making "ended" and a write exclusive.
type testLogger struct{ s *testLogSink }

type testLogSink struct {
	mu    sync.Mutex
	t     *testing.T
	ended bool
}

// newTestLogger returns a logger into t's log until t ends.
func newTestLogger(t *testing.T) testLogger {
	s := &testLogSink{t: t}
	t.Cleanup(func() {
		s.mu.Lock()
		s.ended = true
		s.mu.Unlock()
	})
	return testLogger{s}
}

func (l testLogger) log(level, msg string, kv []any) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if !l.s.ended {
		l.s.t.Log(append([]any{level, msg}, kv...)...)
	}
}

func (l testLogger) Debug(string, ...any)        {}
func (l testLogger) Info(msg string, kv ...any)  { l.log("INFO", msg, kv) }
func (l testLogger) Warn(msg string, kv ...any)  { l.log("WARN", msg, kv) }
func (l testLogger) Error(msg string, kv ...any) { l.log("ERROR", msg, kv) }

// deleteAt sends a delete signal at d after the start.
func deleteAt(env *testsuite.TestWorkflowEnvironment, d time.Duration, reason string) {
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalDelete, DeleteSignal{Reason: reason}) }, d)
}

func TestWorkspaceLifecycle(t *testing.T) {
	errBadTemplate := temporal.NewNonRetryableApplicationError("workspace ws-test: provision: init[0]: exit status 1: boom", "invalid", nil)
	errFlaky := temporal.NewApplicationError("workspace ws-test: provision: runtime did not answer", "unavailable")

	tests := []struct {
		name      string
		provision []error
		probes    []activities.ProbeOutput
		deleteAt  time.Duration // 0: no delete
		cancelAt  time.Duration // 0: no cancellation

		wantProvisionCalls int
		wantProbes         int
		wantPhases         []string // SetPhase To values, in order
		wantFailedReason   string   // reason of the first SetPhase to failed
		wantDestroys       int
		wantCanceled       bool
		wantEvents         []string
	}{
		{
			name:               "first probe hit makes running at once",
			probes:             []activities.ProbeOutput{hit},
			deleteAt:           5 * time.Second,
			wantProvisionCalls: 1,
			wantProbes:         1,
			wantPhases:         []string{wire.PhaseRunning, wire.PhaseTerminating},
			wantDestroys:       1,
		},
		{
			name:               "three misses make failed with the last reason",
			probes:             []activities.ProbeOutput{hit, miss("m1"), miss("m2"), miss("runtime ping: dial: refused"), hit},
			deleteAt:           3*testInterval + 5*time.Second,
			wantProvisionCalls: 1,
			wantProbes:         4,
			wantPhases:         []string{wire.PhaseRunning, wire.PhaseFailed, wire.PhaseTerminating},
			wantFailedReason:   "runtime ping: dial: refused",
			wantDestroys:       1,
		},
		{
			name:               "three hits bring failed back to running",
			probes:             []activities.ProbeOutput{hit, miss("a"), miss("b"), miss("c"), hit, hit, hit},
			deleteAt:           6*testInterval + 5*time.Second,
			wantProvisionCalls: 1,
			wantProbes:         7,
			wantPhases:         []string{wire.PhaseRunning, wire.PhaseFailed, wire.PhaseRunning, wire.PhaseTerminating},
			wantFailedReason:   "c",
			wantDestroys:       1,
		},
		{
			name:               "two hits are not enough to recover",
			probes:             []activities.ProbeOutput{hit, miss("a"), miss("b"), miss("c"), hit, hit, miss("d")},
			deleteAt:           6*testInterval + 5*time.Second,
			wantProvisionCalls: 1,
			wantProbes:         7,
			wantPhases:         []string{wire.PhaseRunning, wire.PhaseFailed, wire.PhaseTerminating},
			wantFailedReason:   "c",
			wantDestroys:       1,
		},
		{
			name:               "two misses then a hit stay running",
			probes:             []activities.ProbeOutput{hit, miss("a"), miss("b"), hit, miss("c"), miss("d"), hit},
			deleteAt:           6*testInterval + 5*time.Second,
			wantProvisionCalls: 1,
			wantProbes:         7,
			wantPhases:         []string{wire.PhaseRunning, wire.PhaseTerminating},
			wantDestroys:       1,
		},
		{
			name:               "delete while pending",
			probes:             []activities.ProbeOutput{miss("not yet")},
			deleteAt:           testInterval + 5*time.Second,
			wantProvisionCalls: 1,
			wantProbes:         2,
			wantPhases:         []string{wire.PhaseTerminating},
			wantDestroys:       1,
		},
		{
			name:               "a workspace that never answers fails after three misses",
			probes:             []activities.ProbeOutput{miss("never")},
			deleteAt:           2*testInterval + 5*time.Second,
			wantProvisionCalls: 1,
			wantProbes:         3,
			wantPhases:         []string{wire.PhaseFailed, wire.PhaseTerminating},
			wantFailedReason:   "never",
			wantDestroys:       1,
		},
		{
			name:               "delete pending at start skips provisioning",
			deleteAt:           -1, // sent with the start
			wantProvisionCalls: 0,
			wantProbes:         0,
			wantPhases:         []string{wire.PhaseTerminating},
			wantDestroys:       1,
		},
		{
			name:               "provision failure is recorded, cleaned up, failed, then destroyed on delete",
			provision:          []error{errBadTemplate},
			deleteAt:           20 * time.Second, // before recovery (30 s)
			wantProvisionCalls: 1,                // non-retryable: no retry
			wantProbes:         0,
			wantPhases:         []string{wire.PhaseFailed, wire.PhaseTerminating},
			wantFailedReason:   "workspace ws-test: provision: init[0]: exit status 1: boom",
			wantDestroys:       2, // leftovers (keep row), then the delete
			wantEvents:         []string{wire.EventProvisionFailed},
		},
		{
			name:               "provision is retried on retryable errors",
			provision:          []error{errFlaky, errFlaky},
			probes:             []activities.ProbeOutput{hit},
			deleteAt:           time.Minute,
			wantProvisionCalls: 3,
			wantProbes:         2, // after 3 s of retries: at ~3 s and ~33 s
			wantPhases:         []string{wire.PhaseRunning, wire.PhaseTerminating},
			wantDestroys:       1,
		},
		{
			name:               "cancellation destroys the workspace",
			probes:             []activities.ProbeOutput{hit},
			cancelAt:           testInterval + 5*time.Second,
			wantProvisionCalls: 1,
			wantProbes:         2,
			wantPhases:         []string{wire.PhaseRunning, wire.PhaseTerminating},
			wantDestroys:       1,
			wantCanceled:       true,
		},
		{
			name:               "cancellation after a failed provisioning destroys the workspace",
			provision:          []error{errBadTemplate},
			cancelAt:           20 * time.Second,
			wantProvisionCalls: 1,
			wantPhases:         []string{wire.PhaseFailed, wire.PhaseTerminating},
			wantFailedReason:   "workspace ws-test: provision: init[0]: exit status 1: boom",
			wantDestroys:       2,
			wantCanceled:       true,
			wantEvents:         []string{wire.EventProvisionFailed},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakes{provisionErrs: tc.provision, probes: tc.probes}
			env := newEnv(t, f)
			switch {
			case tc.deleteAt < 0:
				deleteAt(env, 0, "user")
			case tc.deleteAt > 0:
				deleteAt(env, tc.deleteAt, "user")
			}
			if tc.cancelAt > 0 {
				env.RegisterDelayedCallback(env.CancelWorkflow, tc.cancelAt)
			}
			start := env.Now()
			env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())

			if !env.IsWorkflowCompleted() {
				t.Fatal("workflow did not complete")
			}
			err := env.GetWorkflowError()
			if tc.wantCanceled {
				var canceled *temporal.CanceledError
				if !errors.As(err, &canceled) {
					t.Fatalf("workflow error = %v, want cancellation", err)
				}
			} else if err != nil {
				t.Fatalf("workflow error: %v", err)
			}

			f.mu.Lock()
			defer f.mu.Unlock()
			if f.provisionCalls != tc.wantProvisionCalls {
				t.Errorf("provision calls = %d, want %d", f.provisionCalls, tc.wantProvisionCalls)
			}
			if len(f.probeInputs) != tc.wantProbes {
				t.Errorf("probes = %d, want %d", len(f.probeInputs), tc.wantProbes)
			}
			var phases []string
			failedReason := ""
			for _, p := range f.phases {
				phases = append(phases, p.To)
				if p.To == wire.PhaseFailed && failedReason == "" {
					failedReason = p.Reason
				}
				if p.WorkspaceID != "ws-test" {
					t.Errorf("SetPhase workspace = %q", p.WorkspaceID)
				}
			}
			if !slices.Equal(phases, tc.wantPhases) {
				t.Errorf("phases = %v, want %v", phases, tc.wantPhases)
			}
			// Every phase change also reaches the search attribute.
			if !slices.Equal(f.upserts, tc.wantPhases) {
				t.Errorf("PrimerPhase upserts = %v, want %v", f.upserts, tc.wantPhases)
			}
			// Each SetPhase names the phase it leaves.
			prev := wire.PhasePending
			for _, p := range f.phases {
				if p.From != prev {
					t.Errorf("SetPhase %s->%s: from = %q, want %q", p.From, p.To, p.From, prev)
				}
				prev = p.To
			}
			if failedReason != tc.wantFailedReason {
				t.Errorf("failed reason = %q, want %q", failedReason, tc.wantFailedReason)
			}
			if len(f.destroys) != tc.wantDestroys {
				t.Errorf("destroys = %d, want %d", len(f.destroys), tc.wantDestroys)
			}
			if n := len(f.destroys); n > 0 {
				last := f.destroys[n-1]
				if last.KeepRow {
					t.Error("final destroy kept the row")
				}
				if tc.wantProbes > 0 && (last.Handle == nil || !reflect.DeepEqual(*last.Handle, testHandle)) {
					t.Errorf("final destroy handle = %+v, want %+v", last.Handle, testHandle)
				}
			}
			var events []string
			for _, e := range f.events {
				events = append(events, e.Type)
			}
			if !slices.Equal(events, tc.wantEvents) {
				t.Errorf("events = %v, want %v", events, tc.wantEvents)
			}
			if len(f.probeInputs) > 0 {
				// The first probe runs as soon as provisioning returns,
				// before any timer.
				if f.timersBeforeFirstProbe != 0 {
					t.Errorf("%d timers started before the first probe", f.timersBeforeFirstProbe)
				}
				first := f.probeInputs[0]
				if !reflect.DeepEqual(first.Handle, testHandle) {
					t.Errorf("probe handle = %+v", first.Handle)
				}
				if tc.provision == nil && !first.ScheduledAt.Equal(start) {
					t.Errorf("first probe scheduled at +%s, want at start", first.ScheduledAt.Sub(start))
				}
				for i := 1; i < len(f.probeInputs); i++ {
					if d := f.probeInputs[i].ScheduledAt.Sub(f.probeInputs[i-1].ScheduledAt); d != testInterval {
						t.Errorf("probe %d scheduled %s after the previous, want %s", i, d, testInterval)
					}
				}
			}
		})
	}
}

// The provision_failed event names the backend and the error, and the
// leftovers are cleaned up without deleting the row.
func TestProvisionFailureDetails(t *testing.T) {
	f := &fakes{provisionErrs: []error{temporal.NewNonRetryableApplicationError("template default: not found", "not_found", nil)}}
	env := newEnv(t, f)
	deleteAt(env, time.Minute, "")
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.events) != 1 {
		t.Fatalf("events = %+v", f.events)
	}
	ev := f.events[0]
	if ev.Type != wire.EventProvisionFailed || ev.Data["workspace_type"] != "local" || ev.Data["error"] != "template default: not found" {
		t.Errorf("provision_failed event = %+v", ev)
	}
	if len(f.destroys) != 2 || !f.destroys[0].KeepRow || f.destroys[0].Handle != nil || f.destroys[1].KeepRow {
		t.Errorf("destroys = %+v, want a keep-row clean-up then a full destroy", f.destroys)
	}
	if got := f.phases[len(f.phases)-1]; got.Reason != defaultDeleteReason {
		t.Errorf("terminating reason = %q, want %q", got.Reason, defaultDeleteReason)
	}
}

// A destroy that keeps failing (an engine that is down) leaves the
// workspace terminating, with the error and the next try in the reason, and
// is tried again until it succeeds: a delete always completes.
func TestDeleteRetriesUntilDone(t *testing.T) {
	boom := temporal.NewApplicationError("workspace ws-test: destroy: docker engine is not reachable", "unavailable")
	perRound := int(destroyRoundOptions.RetryPolicy.MaximumAttempts)
	errsList := make([]error, 3*perRound) // three failed rounds
	for i := range errsList {
		errsList[i] = boom
	}
	f := &fakes{destroyErrs: errsList}
	env := newEnv(t, f)
	deleteAt(env, 5*time.Second, "first")
	deleteAt(env, 6*time.Second, "second") // changes nothing: already deleting
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got, want := f.phaseList(), []string{wire.PhaseRunning, wire.PhaseTerminating, wire.PhaseTerminating, wire.PhaseTerminating, wire.PhaseTerminating}; !slices.Equal(got, want) {
		t.Fatalf("phases = %v, want %v", got, want)
	}
	if r := f.phases[1].Reason; r != "first" {
		t.Errorf("terminating reason = %q, want first", r)
	}
	for i, round := range []string{"round 1), retrying in 2s", "round 2), retrying in 4s", "round 3), retrying in 8s"} {
		r := f.phases[2+i].Reason
		if !strings.HasPrefix(r, "first; destroy failed (") || !strings.Contains(r, round) || !strings.Contains(r, "docker engine is not reachable") {
			t.Errorf("reason %d = %q, want the round (%s) and the error", i, r, round)
		}
	}
	if n, want := len(f.destroys), 3*perRound+1; n != want {
		t.Errorf("destroy attempts = %d, want %d", n, want)
	}
	// Only the phase changes reach the search attribute, not the reasons.
	if want := []string{wire.PhaseRunning, wire.PhaseTerminating}; !slices.Equal(f.upserts, want) {
		t.Errorf("upserts = %v, want %v", f.upserts, want)
	}
}

// decodeContinueAsNew returns the input a continue-as-new error carries.
func decodeContinueAsNew(t *testing.T, err error) WorkspaceInput {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	if can.WorkflowType.Name != WorkspaceWorkflowName {
		t.Errorf("continued as %q", can.WorkflowType.Name)
	}
	var next WorkspaceInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	return next
}

func TestContinueAsNewAfterProbesPerRun(t *testing.T) {
	// Fail once in the middle so the carried counters are not trivial.
	probes := make([]activities.ProbeOutput, ProbesPerRun)
	for i := range probes {
		probes[i] = hit
	}
	probes[ProbesPerRun-1] = miss("last one missed")
	f := &fakes{probes: probes}
	env := newEnv(t, f)
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	next := decodeContinueAsNew(t, env.GetWorkflowError())
	if len(f.probeInputs) != ProbesPerRun {
		t.Errorf("probes = %d, want %d", len(f.probeInputs), ProbesPerRun)
	}
	st := next.State
	if st == nil {
		t.Fatal("no state carried")
	}
	want := WorkspaceState{Phase: wire.PhaseRunning, Reason: "runtime answered", Hits: 0, Misses: 1, Handle: &testHandle, Probes: ProbesPerRun}
	if st.Phase != want.Phase || st.Reason != want.Reason || st.Hits != want.Hits || st.Misses != want.Misses ||
		st.Probes != want.Probes || st.Handle == nil || !reflect.DeepEqual(*st.Handle, testHandle) {
		t.Errorf("carried state = %+v, want %+v", *st, want)
	}
	if next.WorkspaceID != "ws-test" || next.ProbeInterval != testInterval || next.Backend != "local" {
		t.Errorf("carried input = %+v", next)
	}
	if len(f.destroys) != 0 {
		t.Errorf("continue-as-new destroyed the workspace: %+v", f.destroys)
	}
}

func TestContinueAsNewWhenSuggested(t *testing.T) {
	f := &fakes{}
	env := newEnv(t, f)
	env.SetContinueAsNewSuggested(true)
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	next := decodeContinueAsNew(t, env.GetWorkflowError())
	if len(f.probeInputs) != 1 || next.State == nil || next.State.Phase != wire.PhaseRunning || next.State.Probes != 1 {
		t.Errorf("probes = %d, carried state = %+v", len(f.probeInputs), next.State)
	}
}

// A delete that arrives while the run decides to continue as new is handled
// by this run, not lost.
func TestDeleteIsNotLostAtContinueAsNew(t *testing.T) {
	f := &fakes{}
	env := newEnv(t, f)
	env.SetContinueAsNewSuggested(true)
	f.onProbe = func(n int) {
		if n == 1 {
			env.SignalWorkflow(SignalDelete, DeleteSignal{Reason: "late"})
		}
	}
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error = %v, want completion after the delete", err)
	}
	if len(f.destroys) != 1 {
		t.Errorf("destroys = %d, want 1", len(f.destroys))
	}
	if got := f.phases[len(f.phases)-1]; got.To != wire.PhaseTerminating || got.Reason != "late" {
		t.Errorf("last phase = %+v", got)
	}
}

// A continued run does not provision again and keeps counting where the
// previous run stopped: two more hits after one carried hit recover.
func TestContinuedRunKeepsState(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{hit, hit, hit}}
	env := newEnv(t, f)
	in := testInput()
	h := testHandle
	in.State = &WorkspaceState{Phase: wire.PhaseFailed, Reason: "gone", Hits: 1, Handle: &h, Probes: 400}
	deleteAt(env, 2*testInterval+5*time.Second, "")
	start := env.Now()
	env.ExecuteWorkflow(WorkspaceWorkflowName, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if f.provisionCalls != 0 {
		t.Errorf("continued run provisioned %d times", f.provisionCalls)
	}
	if len(f.probeInputs) != 2 {
		t.Fatalf("probes = %d, want 2", len(f.probeInputs))
	}
	// No immediate probe: the previous run has just probed.
	if d := f.probeInputs[0].ScheduledAt.Sub(start); d != testInterval {
		t.Errorf("first probe of a continued run at +%s, want +%s", d, testInterval)
	}
	want := []string{wire.PhaseRunning, wire.PhaseTerminating}
	if got := f.phaseList(); !slices.Equal(got, want) {
		t.Errorf("phases = %v, want %v", got, want)
	}
	if f.phases[0].From != wire.PhaseFailed {
		t.Errorf("recovery from = %q", f.phases[0].From)
	}
	var out WorkspaceOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.State.Probes != 402 || out.State.Phase != wire.PhaseTerminating {
		t.Errorf("final state = %+v", out.State)
	}
}

func TestQueryState(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{hit, miss("x")}}
	env := newEnv(t, f)
	var got WorkspaceState
	var qerr error
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryState)
		if err != nil {
			qerr = err
			return
		}
		qerr = v.Get(&got)
	}, testInterval+5*time.Second)
	deleteAt(env, 2*testInterval, "")
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if qerr != nil {
		t.Fatal(qerr)
	}
	if got.Phase != wire.PhaseRunning || got.Probes != 2 || got.Misses != 1 || got.Hits != 0 || got.Handle == nil {
		t.Errorf("queried state = %+v", got)
	}
}

func TestStartOptions(t *testing.T) {
	in := testInput()
	o := StartOptions(in)
	if o.ID != "workspace-ws-test" || o.ID != WorkflowID(in.WorkspaceID) || o.TaskQueue != TaskQueue {
		t.Errorf("id/queue = %q/%q", o.ID, o.TaskQueue)
	}
	for key, want := range map[temporal.SearchAttributeKeyKeyword]string{
		SearchAttrPhase: wire.PhasePending, SearchAttrTemplate: "default", SearchAttrProvider: "local", SearchAttrBackend: "local",
	} {
		if got, ok := o.TypedSearchAttributes.GetKeyword(key); !ok || got != want {
			t.Errorf("%s = %q, want %q", key.GetName(), got, want)
		}
	}
	if n := len(SearchAttributes()); n != 7 {
		t.Errorf("SearchAttributes() has %d, want 7", n)
	}
	// Every registered attribute is set by the workspace's or a run's start.
	run := RunStartOptions("acme", "s", "run-1")
	for name := range SearchAttributes() {
		key := temporal.NewSearchAttributeKeyKeyword(name)
		_, ws := o.TypedSearchAttributes.GetUntypedValues()[key]
		_, r := run.TypedSearchAttributes.GetUntypedValues()[key]
		if !ws && !r {
			t.Errorf("no start options set %s", name)
		}
	}
}
