package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
)

// The pool workflow runs a pass at start, on every signal and every
// interval, and ends when a pass finds the pool gone.
func TestPoolWorkflow(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(newTestLogger(t))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	Register(env, &activities.Activities{}, nil, nil)
	var a *activities.Activities
	var passes []time.Duration
	start := env.Now()
	gone := false
	env.OnActivity(a.ReconcilePool, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReconcilePoolInput) (activities.ReconcilePoolOutput, error) {
			if in.PoolID != "warm" {
				t.Errorf("pool id = %q", in.PoolID)
			}
			passes = append(passes, env.Now().Sub(start))
			if len(passes) == 2 {
				return activities.ReconcilePoolOutput{}, temporal.NewNonRetryableApplicationError("database is locked", "unavailable", nil)
			}
			return activities.ReconcilePoolOutput{Gone: gone, Removed: 2}, nil
		})
	// A lease at 3 s wakes the pool at once; the deletion at 25 s too.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPoolChanged, PoolChanged{}) }, 3*time.Second)
	env.RegisterDelayedCallback(func() {
		gone = true
		env.SignalWorkflow(SignalPoolChanged, PoolChanged{})
	}, 25*time.Second)
	env.ExecuteWorkflow(PoolWorkflowName, PoolInput{PoolID: "warm", Interval: 10 * time.Second})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out PoolOutput
	if err := env.GetWorkflowResult(&out); err != nil || out.Removed != 2 {
		t.Fatalf("result = %+v, %v", out, err)
	}
	// 0 (start), 3 (signal; fails: logged), 13 (interval), 23 (interval), 25 (signal: gone).
	want := []time.Duration{0, 3 * time.Second, 13 * time.Second, 23 * time.Second, 25 * time.Second}
	if len(passes) != len(want) {
		t.Fatalf("passes at %v, want %v", passes, want)
	}
	for i := range want {
		if passes[i] != want[i] {
			t.Errorf("pass %d at %s, want %s", i, passes[i], want[i])
		}
	}
}

// The pool workflow continues as new after PoolPassesPerRun passes.
func TestPoolWorkflowContinuesAsNew(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(newTestLogger(t))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	Register(env, &activities.Activities{}, nil, nil)
	var a *activities.Activities
	n := 0
	env.OnActivity(a.ReconcilePool, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.ReconcilePoolInput) (activities.ReconcilePoolOutput, error) {
			n++
			return activities.ReconcilePoolOutput{}, nil
		})
	env.ExecuteWorkflow(PoolWorkflowName, PoolInput{PoolID: "warm"})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error = %v, want continue-as-new", err)
	}
	if n != PoolPassesPerRun {
		t.Errorf("passes = %d, want %d", n, PoolPassesPerRun)
	}
}

// The reconciler runs a pass every interval, survives a failing pass, and
// continues as new after ReconcilePassesPerRun passes.
func TestReconcilerWorkflow(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(newTestLogger(t))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	Register(env, &activities.Activities{}, nil, nil)
	var a *activities.Activities
	n := 0
	env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReconcileInput) (activities.ReconcileOutput, error) {
			n++
			if in.Grace != DefaultOrphanGrace {
				t.Errorf("grace = %s", in.Grace)
			}
			if n == 3 {
				return activities.ReconcileOutput{}, temporal.NewNonRetryableApplicationError("list: engine down", "unavailable", nil)
			}
			return activities.ReconcileOutput{Removed: []string{"ws-orphan"}}, nil
		})
	start := env.Now()
	env.ExecuteWorkflow(ReconcilerWorkflowName, ReconcilerInput{})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error = %v, want continue-as-new", err)
	}
	if n != ReconcilePassesPerRun {
		t.Errorf("passes = %d, want %d", n, ReconcilePassesPerRun)
	}
	if got, want := env.Now().Sub(start), time.Duration(ReconcilePassesPerRun)*DefaultReconcileInterval; got != want {
		t.Errorf("run lasted %s, want %s", got, want)
	}
}
