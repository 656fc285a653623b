package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
)

// historyCounter counts what a run adds to its history, to bound its
// event count the way the server records it: WorkflowExecutionStarted, a
// workflow task (scheduled, started, completed: 3 events) to start and
// after every timer that fires, every activity that completes and every
// signal; 2 events per timer (started, fired), 1 marker per local
// activity, 3 per activity (scheduled, started, completed), 1 per search
// attribute upsert, 1 per signal and 1 to close the run.
type historyCounter struct {
	timers, local, acts, upserts, signals int
}

func (c historyCounter) events() int {
	tasks := 1 + c.timers + c.acts + c.signals
	return 1 + 3*tasks + 2*c.timers + c.local + 3*c.acts + c.upserts + c.signals + 1
}

// TestHistoryStaysSmallOver24Hours runs a workspace probed every 30 s (the
// default) through 24 simulated hours, with a failure and a recovery on
// the way, run after run as the workflow continues as new, and checks that
// no run's history reaches 4,096 events. The bound holds for any number
// of workspaces: each has its own history. It is the reason probes and
// phase writes are local activities.
func TestHistoryStaysSmallOver24Hours(t *testing.T) {
	const day = 24 * time.Hour
	in := testInput()
	in.ProbeInterval = DefaultProbeInterval
	p := backend.Common{}.Policy()
	in.Policy = &p

	probeN := 0
	var elapsed time.Duration
	runs := 0
	maxEvents := 0
	for elapsed < day {
		runs++
		var s testsuite.WorkflowTestSuite
		s.SetLogger(newTestLogger(t))
		env := s.NewTestWorkflowEnvironment()
		env.SetTestTimeout(time.Minute)
		Register(env, &activities.Activities{}, nil, nil)
		var a *activities.Activities
		var c historyCounter
		env.SetOnTimerScheduledListener(func(string, time.Duration) { c.timers++ })
		env.OnActivity(a.Provision, mock.Anything, mock.Anything).Return(activities.ProvisionOutput{Handle: testHandle}, nil)
		env.OnActivity(a.Probe, mock.Anything, mock.Anything).Return(
			func(_ context.Context, _ activities.ProbeInput) (activities.ProbeOutput, error) {
				probeN++
				c.local++
				// One outage a day: three misses in the 10th hour.
				if probeN >= 1200 && probeN < 1203 {
					return miss("down"), nil
				}
				return hit, nil
			})
		env.OnActivity(a.SetPhase, mock.Anything, mock.Anything).Return(
			func(_ context.Context, _ activities.SetPhaseInput) (activities.SetPhaseOutput, error) {
				c.local++
				return activities.SetPhaseOutput{}, nil
			})
		env.OnActivity(a.RecordEvent, mock.Anything, mock.Anything).Return(
			func(_ context.Context, _ activities.RecordEventInput) (activities.RecordEventOutput, error) {
				c.local++
				return activities.RecordEventOutput{}, nil
			})
		env.OnActivity(a.Recovered, mock.Anything, mock.Anything).Return(
			func(_ context.Context, _ activities.RecoveredInput) (activities.RecoveredOutput, error) {
				c.local++
				return activities.RecoveredOutput{}, nil
			})
		env.OnActivity(a.Replace, mock.Anything, mock.Anything).Return(
			func(_ context.Context, _ activities.ReplaceInput) (activities.ProvisionOutput, error) {
				c.acts++
				return activities.ProvisionOutput{Handle: testHandle}, nil
			})
		env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(mock.Arguments) { c.upserts++ }).Return(nil)
		start := env.Now()
		env.ExecuteWorkflow(WorkspaceWorkflowName, in)
		if runs == 1 {
			c.acts++ // the provisioning
		}
		elapsed += env.Now().Sub(start)
		err := env.GetWorkflowError()
		if err == nil {
			t.Fatal("workflow completed; want it to continue as new")
		}
		next := decodeContinueAsNew(t, err)
		in = next
		if n := c.events(); n > maxEvents {
			maxEvents = n
		}
		if n := c.events(); n >= 4096 {
			t.Fatalf("run %d: about %d events, want under 4096 (%+v)", runs, n, c)
		}
	}
	t.Logf("24 h of probes every %s: %d runs, largest about %d events, %d probes", DefaultProbeInterval, runs, maxEvents, probeN)
	if in.State.Probes != probeN {
		t.Errorf("state carried %d probes over the runs, want %d", in.State.Probes, probeN)
	}
	if in.State.Phase != "running" {
		t.Errorf("phase after 24 h = %q, want running", in.State.Phase)
	}
	if wantRuns := 2880/ProbesPerRun + 1; runs < wantRuns-1 || runs > wantRuns+1 {
		t.Errorf("runs = %d, want about %d", runs, wantRuns)
	}
}
