package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/wire"
)

// This file keeps version 0 (workflow.DefaultVersion) of WorkspaceWorkflow
// for runs that started before vRecovery: their histories must replay
// command for command. New runs never take these paths. Remove them once no
// version-0 run can be open (testdata's v0 histories go with them).

// runV0: provisioning failure waits for a delete; no recovery.
func (w *workspace) runV0(ctx workflow.Context) error {
	if reason, ok := w.pendingDelete(); ok {
		return w.deleteLoopV0(ctx, reason)
	}
	probeNow := w.in.State == nil
	if w.st.Handle == nil {
		if w.in.State == nil {
			if err := w.provision(ctx); err != nil {
				return err
			}
		}
		if w.st.Handle == nil {
			// Provisioning failed: only a delete is left to wait for.
			reason, err := w.awaitDelete(ctx)
			if err != nil {
				return err
			}
			return w.deleteLoopV0(ctx, reason)
		}
	}
	reason, err := w.probeLoopV0(ctx, probeNow)
	if err != nil {
		return err
	}
	return w.deleteLoopV0(ctx, reason)
}

// probeLoopV0 probes until a delete arrives, the workflow is cancelled, or
// the run continues as new.
func (w *workspace) probeLoopV0(ctx workflow.Context, probeNow bool) (string, error) {
	w.due = workflow.Now(ctx)
	probes := 0
	for {
		if reason, ok := w.pendingDelete(); ok {
			return reason, nil
		}
		if !probeNow {
			reason, deleted, err := w.sleepV0(ctx, w.interval)
			if err != nil || deleted {
				return reason, err
			}
		}
		probeNow = false
		if err := w.probe(ctx); err != nil {
			return "", err
		}
		probes++
		if probes >= ProbesPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			if reason, ok := w.pendingDelete(); ok {
				return reason, nil
			}
			return "", w.continueAsNew(ctx)
		}
	}
}

// sleepV0 waits d or for a delete signal, whichever comes first.
func (w *workspace) sleepV0(ctx workflow.Context, d time.Duration) (reason string, deleted bool, err error) {
	tctx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	w.due = workflow.Now(ctx).Add(d)
	timer := workflow.NewTimer(tctx, d)
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(timer, func(workflow.Future) {})
	sel.AddReceive(w.deleteCh, func(c workflow.ReceiveChannel, _ bool) {
		var s DeleteSignal
		c.Receive(ctx, &s)
		reason, deleted = s.Reason, true
	})
	sel.Select(ctx)
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	return reason, deleted, nil
}

// deleteLoopV0 leaves the workspace failed while destroy keeps failing and
// waits for the next delete.
func (w *workspace) deleteLoopV0(ctx workflow.Context, reason string) error {
	for {
		err := w.terminate(ctx, reason)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.setPhase(ctx, wire.PhaseFailed, "destroy: "+errorMessage(err))
		if reason, err = w.awaitDelete(ctx); err != nil {
			return err
		}
	}
}
