package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/wire"
)

// replace is one step of stale recovery: escalate when the attempts are
// used up (unless a user asked), else tear the sandbox down and provision
// a replacement under the same workspace id. On success the workspace is
// pending with the new handle and the loop probes it; on failure it is
// failed again and the next attempt waits the recovery delay.
func (w *workspace) replace(ctx workflow.Context, manual bool, why string) error {
	if manual {
		w.st.Attempts = 0
	} else if w.st.Attempts >= w.policy.MaxAttempts {
		return w.escalate(ctx)
	}
	w.st.Attempts++
	total := max(w.policy.MaxAttempts, w.st.Attempts)
	lost := w.st.Reason
	data := map[string]any{"attempt": w.st.Attempts, "max_attempts": total, "reason": lost}
	if manual {
		data["requested"] = why
	}
	w.recordEvent(ctx, wire.EventRecoveryStarted, data)
	w.setPhase(ctx, wire.PhasePending, fmt.Sprintf("recovering (attempt %d of %d) after: %s", w.st.Attempts, total, lost))

	var a *activities.Activities
	var out activities.ProvisionOutput
	interrupted, err := w.step(ctx, w.startOptions(), a.Replace, activities.ReplaceInput{
		WorkspaceID: w.in.WorkspaceID,
		Handle:      w.st.Handle,
	}, &out)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil && interrupted {
		// Deleted half-way: the old sandbox may be gone and the new one
		// half made, so the handle is forgotten and Destroy finds what is
		// there from the row or by the workspace id.
		w.st.Handle = nil
		return nil
	}
	if err != nil {
		msg := w.startError(err)
		w.st.Handle = nil
		w.recordEvent(ctx, wire.EventRecoveryFailed, map[string]any{"attempt": w.st.Attempts, "error": msg})
		w.setPhase(ctx, wire.PhaseFailed, fmt.Sprintf("recovery attempt %d of %d failed: %s", w.st.Attempts, total, msg))
		return nil
	}
	h := out.Handle
	w.st.Handle = &h
	w.st.Recovering = true
	w.st.Hits, w.st.Misses = 0, 0
	return nil
}

// escalate gives up on recovery: phase escalated with the reason, an
// event, and the template's webhook when it has one.
func (w *workspace) escalate(ctx workflow.Context) error {
	reason := fmt.Sprintf("gave up after %d recovery attempts: %s", w.st.Attempts, w.st.Reason)
	if w.policy.MaxAttempts == 0 {
		reason = "recovery is off (max_attempts 0): " + w.st.Reason
	}
	attempts := w.st.Attempts
	w.setPhase(ctx, wire.PhaseEscalated, reason)
	w.recordEvent(ctx, wire.EventEscalated, map[string]any{"attempts": attempts, "reason": reason})
	if !w.policy.Webhook {
		return nil
	}
	var a *activities.Activities
	actx := workflow.WithActivityOptions(ctx, webhookOptions)
	err := workflow.ExecuteActivity(actx, a.NotifyWebhook, activities.WebhookInput{
		WorkspaceID: w.in.WorkspaceID,
		Event:       wire.EventEscalated,
		Phase:       wire.PhaseEscalated,
		Reason:      reason,
		Attempts:    attempts,
	}).Get(ctx, nil)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		w.log.Warn("escalation webhook failed", "workspace_id", w.in.WorkspaceID, "error", errorMessage(err))
	}
	return nil
}

// fail moves the workspace to failed. A replacement that failed to come
// up is recorded as a failed recovery attempt.
func (w *workspace) fail(ctx workflow.Context, reason string) {
	if w.version < vRecovery {
		w.setPhase(ctx, wire.PhaseFailed, reason)
		return
	}
	if w.st.Recovering {
		w.st.Recovering = false
		w.recordEvent(ctx, wire.EventRecoveryFailed, map[string]any{"attempt": w.st.Attempts, "error": reason})
		reason = fmt.Sprintf("recovery attempt %d of %d failed: %s", w.st.Attempts, max(w.policy.MaxAttempts, w.st.Attempts), reason)
	} else if w.st.Attempts == 0 {
		// A new loss, not a replacement failing: Attempts is 0 until a
		// replacement starts and again once a recovery (replacement or
		// self-heal) finished, so the next recovery resumes only the
		// sessions this failure ends.
		w.st.LostAt = workflow.Now(ctx)
	}
	w.setPhase(ctx, wire.PhaseFailed, reason)
}

// recovered finishes a recovery, whether a replacement answered or (from
// version vSelfHeal on) the failed sandbox answered HitsToRecover probes
// again: the sessions lost since LostAt are resumed, and the event says so.
// Its attempt is the replacement that brought the workspace back, or the
// last one tried before the sandbox healed; 0 when none was tried.
func (w *workspace) recovered(ctx workflow.Context) {
	var a *activities.Activities
	lctx := workflow.WithLocalActivityOptions(ctx, recordOptions)
	if err := workflow.ExecuteLocalActivity(lctx, a.Recovered, activities.RecoveredInput{
		WorkspaceID: w.in.WorkspaceID,
		Attempt:     w.st.Attempts,
		LostSince:   w.st.LostAt,
	}).Get(ctx, nil); err != nil {
		w.log.Warn("record recovery", "workspace_id", w.in.WorkspaceID, "error", errorMessage(err))
	}
	w.st.Recovering = false
	w.st.Attempts = 0
}
