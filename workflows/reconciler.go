package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
)

// Names of the reconciler workflow.
const (
	// ReconcilerWorkflowName is the registered name of ReconcilerWorkflow.
	ReconcilerWorkflowName = "ReconcilerWorkflow"
	// ReconcilerWorkflowID is the id of the one reconciler workflow.
	ReconcilerWorkflowID = "primer-reconciler"
	// DefaultReconcileInterval is the time between reconciler passes.
	DefaultReconcileInterval = time.Minute
	// DefaultOrphanGrace is how old an engine object must be before the
	// reconciler removes it for having no workspace.
	DefaultOrphanGrace = 2 * time.Minute
	// ReconcilePassesPerRun bounds the passes of one run before it
	// continues as new.
	ReconcilePassesPerRun = 200
)

// ReconcilerInput starts the reconciler workflow. Zero fields take the
// Default* values.
type ReconcilerInput struct {
	Interval time.Duration
	Grace    time.Duration
}

// ReconcilerOutput is never returned in practice: the workflow runs until
// cancelled, continuing as new.
type ReconcilerOutput struct{}

var reconcileOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute,
	HeartbeatTimeout:    heartbeatTimeout,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    30 * time.Second,
		MaximumAttempts:    3,
	},
}

// ReconcilerWorkflow compares what every backend holds with the workspaces
// in the database, every Interval (activities.Reconcile): engine objects
// labelled as Primer's that no workspace owns are removed once older than
// Grace, and running workspaces whose sandbox is gone are reported. A pass
// that fails is logged; the next one tries again.
func ReconcilerWorkflow(ctx workflow.Context, in ReconcilerInput) (ReconcilerOutput, error) {
	if in.Interval <= 0 {
		in.Interval = DefaultReconcileInterval
	}
	if in.Grace <= 0 {
		in.Grace = DefaultOrphanGrace
	}
	logger := workflow.GetLogger(ctx)
	var a *activities.Activities
	actx := workflow.WithActivityOptions(ctx, reconcileOptions)
	for pass := 1; ; pass++ {
		var out activities.ReconcileOutput
		err := workflow.ExecuteActivity(actx, a.Reconcile, activities.ReconcileInput{Grace: in.Grace}).Get(ctx, &out)
		if ctx.Err() != nil {
			return ReconcilerOutput{}, ctx.Err()
		}
		if err != nil {
			logger.Warn("reconcile pass failed", "error", errorMessage(err))
		}
		if err := workflow.Sleep(ctx, in.Interval); err != nil {
			return ReconcilerOutput{}, err
		}
		if pass >= ReconcilePassesPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return ReconcilerOutput{}, workflow.NewContinueAsNewError(ctx, ReconcilerWorkflowName, in)
		}
	}
}
