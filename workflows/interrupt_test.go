package workflows

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/wire"
)

// stalled runs f.stall, if set, for the named activity.
func (f *fakes) stalled(ctx context.Context, activity string) error {
	f.mu.Lock()
	stall := f.stall
	f.mu.Unlock()
	if stall == nil {
		return nil
	}
	return stall(ctx, activity)
}

// stallUntilDeleted makes the named activity send a delete signal with
// reason and then hang, as a provisioning whose init runs `sleep 600` or
// whose pod is never scheduled does, until the activity is cancelled or
// the test ends (the test environment resolves a cancelled activity's
// future without cancelling its context). It reports how often it ran.
func stallUntilDeleted(t *testing.T, env *testsuite.TestWorkflowEnvironment, f *fakes, activity, reason string) *int {
	t.Helper()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	n := new(int)
	f.stall = func(ctx context.Context, name string) error {
		if name != activity {
			return nil
		}
		f.mu.Lock()
		*n++
		f.mu.Unlock()
		env.SignalWorkflow(SignalDelete, DeleteSignal{Reason: reason})
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-release:
			return context.Canceled
		}
	}
	return n
}

// A delete that arrives while a step runs cancels it at once, skips what a
// failure of the step would do (events, clean-up, phase failed, a
// replacement), and destroys: from the row's handle or by workspace id,
// since the step's own handle is not known or no longer right.
func TestDeleteInterruptsTheStepInFlight(t *testing.T) {
	tests := []struct {
		name     string
		activity string
		policy   backend.Policy
		probes   []activities.ProbeOutput
		pool     string
		// returnAt sends the return signal then.
		returnAt time.Duration
		// wantPhases are the phases the workflow moved through.
		wantPhases []string
		// wantEvents are the events it recorded.
		wantEvents []string
	}{
		{
			name:       "provision",
			activity:   "Provision",
			policy:     testPolicy,
			wantPhases: []string{wire.PhaseTerminating},
		},
		{
			name:     "replace",
			activity: "Replace",
			policy:   backend.Policy{StartTimeout: 10 * time.Minute, MaxAttempts: 3},
			probes:   []activities.ProbeOutput{hit, miss("gone"), miss("gone"), miss("gone")},
			wantPhases: []string{
				wire.PhaseRunning, wire.PhaseFailed, wire.PhasePending, wire.PhaseTerminating,
			},
			wantEvents: []string{wire.EventRecoveryStarted},
		},
		{
			name:       "reset on return",
			activity:   "Reset",
			policy:     testPolicy,
			pool:       "warm",
			returnAt:   40 * time.Second,
			wantPhases: []string{wire.PhaseRunning, wire.PhaseTerminating},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakes{probes: tt.probes}
			env := newEnv(t, f)
			runs := stallUntilDeleted(t, env, f, tt.activity, "deleted mid-"+tt.name)
			if tt.returnAt > 0 {
				env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReturn, ReturnSignal{}) }, tt.returnAt)
			}
			in := policyInput(tt.policy)
			in.PoolID = tt.pool
			env.ExecuteWorkflow(WorkspaceWorkflowName, in)
			if !env.IsWorkflowCompleted() {
				t.Fatal("workflow did not complete")
			}
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if *runs != 1 {
				t.Errorf("%s ran %d times, want once (a cancelled step is not retried)", tt.activity, *runs)
			}
			if got := f.phaseList(); !slices.Equal(got, tt.wantPhases) {
				t.Errorf("phases = %v, want %v", got, tt.wantPhases)
			}
			if r := f.reasonOf(wire.PhaseTerminating, 0); r != "deleted mid-"+tt.name {
				t.Errorf("terminating reason = %q, want the delete's", r)
			}
			if got := f.eventList(); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events = %v, want %v", got, tt.wantEvents)
			}
			if len(f.destroys) != 1 {
				t.Fatalf("destroys = %+v, want exactly one", f.destroys)
			}
			d := f.destroys[0]
			if d.KeepRow {
				t.Errorf("destroy kept the row: a clean-up of a failure, not the delete")
			}
			if tt.activity != "Reset" && d.Handle != nil {
				t.Errorf("destroy handle = %+v, want none (found from the row or by workspace id)", d.Handle)
			}
			if tt.activity == "Reset" && (d.Handle == nil || d.Handle.WorkspaceID != testHandle.WorkspaceID || d.Handle.Path != testHandle.Path) {
				t.Errorf("destroy handle = %+v, want the running sandbox's", d.Handle)
			}
			st := interruptedState(t, env)
			if st.Phase != wire.PhaseTerminating || st.Recovering {
				t.Errorf("final state = %+v", st)
			}
		})
	}
}

// A delete that is already waiting when a step would begin keeps it from
// starting at all.
func TestDeleteBeforeTheStepBegins(t *testing.T) {
	f := &fakes{probes: []activities.ProbeOutput{hit, miss("gone"), miss("gone"), miss("gone")}}
	env := newEnv(t, f)
	// The third miss fails the workspace, and the replacement (no delay)
	// would start right after it: the delete arrives during that probe.
	f.onProbe = func(n int) {
		if n == 4 {
			env.SignalWorkflow(SignalDelete, DeleteSignal{Reason: "deleted"})
		}
	}
	env.ExecuteWorkflow(WorkspaceWorkflowName, policyInput(backend.Policy{StartTimeout: 10 * time.Minute, MaxAttempts: 3}))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.replaces) != 0 {
		t.Errorf("replaces = %d, want none after the delete", len(f.replaces))
	}
	if len(f.destroys) != 1 || f.destroys[0].KeepRow {
		t.Errorf("destroys = %+v, want one, the delete's", f.destroys)
	}
}

func interruptedState(t *testing.T, env *testsuite.TestWorkflowEnvironment) WorkspaceState {
	t.Helper()
	v, err := env.QueryWorkflow(QueryState)
	if err != nil {
		t.Fatal(err)
	}
	var st WorkspaceState
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestReplayCoversInterrupt checks that testdata holds a recorded
// WorkspaceWorkflow history of version vInterrupt of change
// versionInterrupt, both for a delete during a provisioning and during a
// replacement, so TestReplay replays the interrupted paths.
func TestReplayCoversInterrupt(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	dc := converter.GetDefaultDataConverter()
	want := map[string]bool{"Provision": false, "Replace": false}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		versioned, cancelled := false, ""
		scheduled := map[int64]string{}
		for _, ev := range hist.GetEvents() {
			if m := ev.GetMarkerRecordedEventAttributes(); m.GetMarkerName() == "Version" {
				var change string
				var v workflow.Version
				if dc.FromPayloads(m.GetDetails()["change-id"], &change) == nil && change == versionInterrupt &&
					dc.FromPayloads(m.GetDetails()["version"], &v) == nil && v == vInterrupt {
					versioned = true
				}
			}
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
				scheduled[ev.GetEventId()] = a.GetActivityType().GetName()
			}
			if a := ev.GetActivityTaskCanceledEventAttributes(); a != nil {
				cancelled = scheduled[a.GetScheduledEventId()]
			}
		}
		if _, ok := want[cancelled]; ok && versioned {
			want[cancelled] = true
			t.Logf("%s: delete interrupts %s", filepath.Base(file), cancelled)
		}
	}
	for activity, ok := range want {
		if !ok {
			t.Errorf("no recorded history of version %d of change %q with a cancelled %s; record one with make record-histories", vInterrupt, versionInterrupt, activity)
		}
	}
}
