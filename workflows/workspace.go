package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/activities/backend"
	"github.com/primerhq/primer/models"
)

// WorkspaceInput starts (or continues) a workspace's workflow. It holds
// only ids and settings, never a secret: it is stored in history.
type WorkspaceInput struct {
	WorkspaceID string
	TemplateID  string
	ProviderID  string
	Backend     string
	// ProbeInterval is the time between probes; zero means DefaultProbeInterval.
	ProbeInterval time.Duration
	// State is carried over continue-as-new; nil on the first run.
	State *WorkspaceState
}

// WorkspaceState is what the workflow knows about its workspace, returned
// by QueryState and carried over continue-as-new.
type WorkspaceState struct {
	Phase  string
	Reason string
	// Hits and Misses count consecutive probe results; one resets the other.
	Hits   int
	Misses int
	// Handle is the provisioned sandbox; nil until provisioning succeeded.
	Handle *backend.Handle
	// Probes counts probes over the workflow's whole life, across runs.
	Probes int
}

// WorkspaceOutput is the workflow's result: its state when it ended.
type WorkspaceOutput struct {
	State WorkspaceState
}

// DeleteSignal is the payload of SignalDelete.
type DeleteSignal struct {
	// Reason is recorded as the reason of the terminating phase.
	Reason string
}

// defaultDeleteReason is used when a delete signal gives no reason.
const defaultDeleteReason = "deleted"

// Activity options. Probe, SetPhase and RecordEvent are local activities:
// they are cheap and frequent, and a local activity costs one marker event
// instead of three events and two round trips through the server, which is
// what lets one embedded SQLite Temporal hold 1,000 workspaces probed every
// 30 s.
var (
	provisionOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    5,
		},
	}
	destroyOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    10,
		},
	}
	// cleanupOptions clean up after a failed provisioning: a few tries, and
	// the final destroy on delete tries again anyway.
	cleanupOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    10 * time.Second,
			MaximumAttempts:    3,
		},
	}
	// probeOptions: a probe is never retried; a miss is a result and the
	// next probe is the retry. The activity bounds its ping at 5 s.
	probeOptions = workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 15 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	}
	// recordOptions retry database writes for a while: a phase that never
	// reaches the database would leave the API refusing or allowing the
	// wrong calls.
	recordOptions = workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 5 * time.Minute,
		StartToCloseTimeout:    10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
		},
	}
)

// WorkspaceWorkflow is the life of one workspace:
//
//   - provision (retried; on failure: workspace.provision_failed, clean up,
//     phase failed, then wait only for delete);
//   - probe at once, then every ProbeInterval: pending -> running on the
//     first hit; running -> failed after MissesToFail consecutive misses
//     (open sessions end workspace_lost; a workspace still pending fails the
//     same way, so one that never answers does not stay pending forever);
//     failed -> running after HitsToRecover consecutive hits;
//   - on the delete signal, from any phase: terminating, destroy, done. If
//     destroy still fails after its retries, the workspace goes failed with
//     the error and waits for another delete;
//   - on cancellation, destroy anyway, on a disconnected context.
//
// Each phase change is written to the database (SetPhase) and to the
// PrimerPhase search attribute. The run continues as new after
// ProbesPerRun probes or when the server suggests it, carrying its state.
func WorkspaceWorkflow(ctx workflow.Context, in WorkspaceInput) (out WorkspaceOutput, err error) {
	w := &workspace{
		in:       in,
		interval: in.ProbeInterval,
		deleteCh: workflow.GetSignalChannel(ctx, SignalDelete),
		log:      workflow.GetLogger(ctx),
	}
	if w.interval <= 0 {
		w.interval = DefaultProbeInterval
	}
	if in.State != nil {
		w.st = *in.State
	} else {
		w.st = WorkspaceState{Phase: models.PhasePending}
	}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (WorkspaceState, error) {
		return w.st, nil
	}); err != nil {
		return WorkspaceOutput{State: w.st}, err
	}

	// Cleanup survives cancellation: destroy on a context the cancellation
	// does not reach.
	defer func() {
		if w.destroyed || !errors.Is(ctx.Err(), workflow.ErrCanceled) {
			return
		}
		dctx, cancel := workflow.NewDisconnectedContext(ctx)
		defer cancel()
		if derr := w.terminate(dctx, "workflow cancelled"); derr != nil {
			w.log.Error("destroy after cancellation failed", "workspace_id", in.WorkspaceID, "error", derr)
		}
		out.State = w.st
	}()

	err = w.run(ctx)
	return WorkspaceOutput{State: w.st}, err
}

// workspace is one run of the workflow.
type workspace struct {
	in        WorkspaceInput
	interval  time.Duration
	st        WorkspaceState
	deleteCh  workflow.ReceiveChannel
	log       log.Logger
	due       time.Time // when the next probe is due, for the lateness metric
	destroyed bool
}

func (w *workspace) run(ctx workflow.Context) error {
	if reason, ok := w.pendingDelete(); ok {
		return w.deleteLoop(ctx, reason)
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
			return w.deleteLoop(ctx, reason)
		}
	}
	reason, err := w.probeLoop(ctx, probeNow)
	if err != nil {
		return err
	}
	return w.deleteLoop(ctx, reason)
}

// provision runs the provision activity. A failure that is not a
// cancellation is handled here (event, clean-up, phase failed) and leaves
// the handle nil; only a cancellation is returned.
func (w *workspace) provision(ctx workflow.Context) error {
	var a *activities.Activities
	var out activities.ProvisionOutput
	actx := workflow.WithActivityOptions(ctx, provisionOptions)
	err := workflow.ExecuteActivity(actx, a.Provision, activities.ProvisionInput{WorkspaceID: w.in.WorkspaceID}).Get(ctx, &out)
	if err == nil {
		h := out.Handle
		w.st.Handle = &h
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := errorMessage(err)
	w.log.Warn("workspace provisioning failed", "workspace_id", w.in.WorkspaceID, "error", msg)

	lctx := workflow.WithLocalActivityOptions(ctx, recordOptions)
	if err := workflow.ExecuteLocalActivity(lctx, a.RecordEvent, activities.RecordEventInput{
		WorkspaceID: w.in.WorkspaceID,
		Type:        models.EventProvisionFailed,
		Data:        map[string]any{"workspace_type": w.in.Backend, "error": msg},
	}).Get(ctx, nil); err != nil {
		w.log.Warn("record provision failure", "workspace_id", w.in.WorkspaceID, "error", errorMessage(err))
	}
	cctx := workflow.WithActivityOptions(ctx, cleanupOptions)
	if err := workflow.ExecuteActivity(cctx, a.Destroy, activities.DestroyInput{
		WorkspaceID: w.in.WorkspaceID,
		KeepRow:     true,
	}).Get(ctx, nil); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.log.Warn("clean up after provisioning failed", "workspace_id", w.in.WorkspaceID, "error", errorMessage(err))
	}
	w.setPhase(ctx, models.PhaseFailed, msg)
	return nil
}

// probeLoop probes until a delete arrives (its reason is returned), the
// workflow is cancelled, or the run continues as new (both as the error).
func (w *workspace) probeLoop(ctx workflow.Context, probeNow bool) (string, error) {
	w.due = workflow.Now(ctx)
	probes := 0
	for {
		if reason, ok := w.pendingDelete(); ok {
			return reason, nil
		}
		if !probeNow {
			reason, deleted, err := w.sleep(ctx, w.interval)
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
			// A delete that arrived meanwhile must not be lost with this run.
			if reason, ok := w.pendingDelete(); ok {
				return reason, nil
			}
			next := w.in
			st := w.st
			next.State = &st
			return "", workflow.NewContinueAsNewError(ctx, WorkspaceWorkflowName, next)
		}
	}
}

// sleep waits d or for a delete signal, whichever comes first.
func (w *workspace) sleep(ctx workflow.Context, d time.Duration) (reason string, deleted bool, err error) {
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

// probe runs one probe and applies its result to the phase.
func (w *workspace) probe(ctx workflow.Context) error {
	var a *activities.Activities
	var out activities.ProbeOutput
	lctx := workflow.WithLocalActivityOptions(ctx, probeOptions)
	err := workflow.ExecuteLocalActivity(lctx, a.Probe, activities.ProbeInput{
		WorkspaceID: w.in.WorkspaceID,
		Handle:      *w.st.Handle,
		ScheduledAt: w.due,
	}).Get(ctx, &out)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		// The probe itself broke (timed out, panicked): that is a miss too.
		out = activities.ProbeOutput{Reason: "probe: " + errorMessage(err)}
	}
	w.st.Probes++
	if out.Hit {
		w.st.Hits++
		w.st.Misses = 0
	} else {
		w.st.Misses++
		w.st.Hits = 0
	}
	switch w.st.Phase {
	case models.PhasePending:
		if out.Hit {
			w.setPhase(ctx, models.PhaseRunning, "runtime answered")
		} else if w.st.Misses >= MissesToFail {
			w.setPhase(ctx, models.PhaseFailed, out.Reason)
		}
	case models.PhaseRunning:
		if w.st.Misses >= MissesToFail {
			w.setPhase(ctx, models.PhaseFailed, out.Reason)
		}
	case models.PhaseFailed:
		if w.st.Hits >= HitsToRecover {
			w.setPhase(ctx, models.PhaseRunning, fmt.Sprintf("runtime answered %d probes in a row", w.st.Hits))
		}
	}
	return nil
}

// deleteLoop terminates the workspace; while destroy keeps failing it
// leaves the workspace failed and waits for the next delete.
func (w *workspace) deleteLoop(ctx workflow.Context, reason string) error {
	for {
		err := w.terminate(ctx, reason)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.setPhase(ctx, models.PhaseFailed, "destroy: "+errorMessage(err))
		if reason, err = w.awaitDelete(ctx); err != nil {
			return err
		}
	}
}

// terminate moves to terminating and destroys the workspace (the activity
// also deletes its row).
func (w *workspace) terminate(ctx workflow.Context, reason string) error {
	if reason == "" {
		reason = defaultDeleteReason
	}
	w.setPhase(ctx, models.PhaseTerminating, reason)
	var a *activities.Activities
	actx := workflow.WithActivityOptions(ctx, destroyOptions)
	if err := workflow.ExecuteActivity(actx, a.Destroy, activities.DestroyInput{
		WorkspaceID: w.in.WorkspaceID,
		Handle:      w.st.Handle,
	}).Get(ctx, nil); err != nil {
		w.log.Error("workspace destroy failed", "workspace_id", w.in.WorkspaceID, "error", errorMessage(err))
		return err
	}
	w.destroyed = true
	w.log.Info("workspace destroyed", "workspace_id", w.in.WorkspaceID)
	return nil
}

// setPhase records a phase change in the database and the PrimerPhase
// search attribute. Neither failing stops the workflow: the state here is
// the truth, and the next change writes it again.
func (w *workspace) setPhase(ctx workflow.Context, to, reason string) {
	from := w.st.Phase
	if from == to {
		return
	}
	w.st.Phase, w.st.Reason = to, reason
	var a *activities.Activities
	lctx := workflow.WithLocalActivityOptions(ctx, recordOptions)
	if err := workflow.ExecuteLocalActivity(lctx, a.SetPhase, activities.SetPhaseInput{
		WorkspaceID: w.in.WorkspaceID, From: from, To: to, Reason: reason,
	}).Get(ctx, nil); err != nil {
		w.log.Warn("store phase change", "workspace_id", w.in.WorkspaceID, "to", to, "error", errorMessage(err))
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, SearchAttrPhase.ValueSet(to)); err != nil {
		w.log.Warn("upsert phase search attribute", "workspace_id", w.in.WorkspaceID, "to", to, "error", err)
	}
	w.log.Info("workspace phase changed", "workspace_id", w.in.WorkspaceID, "from", from, "to", to, "reason", reason)
}

// pendingDelete takes a delete signal that has already arrived, if any.
func (w *workspace) pendingDelete() (string, bool) {
	var s DeleteSignal
	if w.deleteCh.ReceiveAsync(&s) {
		return s.Reason, true
	}
	return "", false
}

// awaitDelete blocks until a delete signal or cancellation.
func (w *workspace) awaitDelete(ctx workflow.Context) (string, error) {
	var s DeleteSignal
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(w.deleteCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &s) })
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	sel.Select(ctx)
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return s.Reason, nil
}

// errorMessage is the readable part of an activity error: the application
// error's message without Temporal's wrapping.
func errorMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	var toErr *temporal.TimeoutError
	if errors.As(err, &toErr) {
		return toErr.Error()
	}
	return err.Error()
}
