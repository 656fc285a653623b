package workflows

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
)

// Names of the pool workflow.
const (
	// PoolWorkflowName is the registered name of PoolWorkflow.
	PoolWorkflowName = "PoolWorkflow"
	// SignalPoolChanged wakes a pool workflow to look at its pool now; its
	// payload is a PoolChanged.
	SignalPoolChanged = "changed"
	// DefaultPoolInterval is how often a pool workflow looks at its pool
	// when nothing signals it.
	DefaultPoolInterval = 10 * time.Second
	// PoolPassesPerRun bounds the passes of one run before it continues as
	// new (about 7 events each).
	PoolPassesPerRun = 300
)

// PoolInput starts a pool's workflow.
type PoolInput struct {
	PoolID string
	// Interval is the time between passes when nothing signals; zero means
	// DefaultPoolInterval.
	Interval time.Duration
}

// PoolChanged is the payload of SignalPoolChanged.
type PoolChanged struct{}

// PoolOutput is the pool workflow's result when its pool is deleted.
type PoolOutput struct {
	// Removed is how many idle workspaces the last pass deleted.
	Removed int
}

// PoolWorkflowID returns the id of a pool's workflow.
func PoolWorkflowID(poolID string) string { return "pool-" + poolID }

// PoolStartOptions returns the options a pool's workflow starts with: one
// run per pool; a pool created again after a delete gets a new run. The
// pool's tenant is its PrimerTenant search attribute.
func PoolStartOptions(poolID, tenantID string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       PoolWorkflowID(poolID),
		TaskQueue:                TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(SearchAttrTenant.ValueSet(TenantOf(tenantID))),
	}
}

// poolOptions run one pass of a pool. It is a local activity: a pass is a
// few database reads and at most a few workflow starts, and it runs every
// few seconds for as long as the pool exists.
var poolOptions = workflow.LocalActivityOptions{
	ScheduleToCloseTimeout: time.Minute,
	StartToCloseTimeout:    30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    10 * time.Second,
	},
}

// PoolWorkflow keeps a warm pool full: each pass (activities.ReconcilePool)
// creates workspaces until the pool holds its size of them, idle or
// leased, deletes idle workspaces that failed or are too many, and replaces those made
// from an older version of the template one at a time. A pass runs when
// signalled (a lease, a return, a change of the pool or its template) and
// every Interval otherwise. The workflow ends when the pool is deleted,
// after its last pass removed the idle workspaces.
func PoolWorkflow(ctx workflow.Context, in PoolInput) (PoolOutput, error) {
	interval := in.Interval
	if interval <= 0 {
		interval = DefaultPoolInterval
	}
	changed := workflow.GetSignalChannel(ctx, SignalPoolChanged)
	logger := workflow.GetLogger(ctx)
	var a *activities.Activities
	for pass := 1; ; pass++ {
		// Signals that arrived before this pass are answered by it.
		for changed.ReceiveAsync(nil) {
		}
		var out activities.ReconcilePoolOutput
		lctx := workflow.WithLocalActivityOptions(ctx, poolOptions)
		err := workflow.ExecuteLocalActivity(lctx, a.ReconcilePool, activities.ReconcilePoolInput{PoolID: in.PoolID}).Get(ctx, &out)
		if ctx.Err() != nil {
			return PoolOutput{}, ctx.Err()
		}
		if err != nil {
			logger.Warn("pool pass failed", "pool_id", in.PoolID, "error", errorMessage(err))
		} else if out.Gone {
			return PoolOutput{Removed: out.Removed}, nil
		}

		tctx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(tctx, interval), func(workflow.Future) {})
		sel.AddReceive(changed, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.Select(ctx)
		cancel()
		if ctx.Err() != nil {
			return PoolOutput{}, ctx.Err()
		}
		// A signal lost with this run is harmless: the next run starts with
		// a pass.
		if pass >= PoolPassesPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return PoolOutput{}, workflow.NewContinueAsNewError(ctx, PoolWorkflowName, in)
		}
	}
}
