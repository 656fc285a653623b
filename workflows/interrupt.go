package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Change versionInterrupt of WorkspaceWorkflow: a delete interrupts the
// step in flight. It is its own change id, beside versionRecovery, so it
// can be told apart from other changes made to the same workflow at the
// same time; only runs of version vRecovery and later ask for it.
const (
	versionInterrupt = "interrupt"
	// vInterrupt cancels a provisioning, a replacement (stale recovery) or
	// a reset (pool return) when a delete signal arrives while it runs,
	// waits until the activity has stopped, then deletes. Before it, the
	// delete waited for the step to finish: up to the start timeout (10
	// minutes for a pod the cluster cannot schedule).
	vInterrupt workflow.Version = 1
)

// step runs one long activity of the workspace (Provision, Replace or
// Reset) with opts and waits for its result into out (nil for none).
//
// From version vInterrupt on, a delete signal that arrives meanwhile (or
// is already waiting) cancels it: the activity's context is cancelled
// (the activity learns of it from the answer to its next heartbeat), and
// step waits until it has stopped (WaitForCancellation), so the destroy
// that follows never races a provisioning still making things. The signal
// stays in the channel: the caller returns to the loop, whose next turn
// takes it and deletes. interrupted reports that the step was cut short;
// err then says nothing about the step (it is the cancellation, or nil
// when the activity finished before it heard, its result in out).
func (w *workspace) step(ctx workflow.Context, opts workflow.ActivityOptions, activity, in, out any) (interrupted bool, err error) {
	if w.interrupt < vInterrupt {
		return false, workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), activity, in).Get(ctx, out)
	}
	if w.deleteCh.Len() > 0 {
		// Deleted before the step began: there is nothing to start.
		return true, temporal.NewCanceledError("deleted before it started")
	}
	opts.WaitForCancellation = true
	sctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	f := workflow.ExecuteActivity(workflow.WithActivityOptions(sctx, opts), activity, in)
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(f, func(workflow.Future) {})
	// The callback leaves the signal in the channel (the selector keeps a
	// value its callback did not receive) for the loop to take.
	sel.AddReceive(w.deleteCh, func(workflow.ReceiveChannel, bool) { interrupted = true })
	sel.Select(ctx)
	if interrupted {
		w.log.Info("delete interrupts the step in flight", "workspace_id", w.in.WorkspaceID, "phase", w.st.Phase)
		cancel()
	}
	return interrupted, f.Get(ctx, out)
}
