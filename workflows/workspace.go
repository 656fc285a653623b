package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/wire"
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
	// Policy is the template's start timeout and recovery policy as it was
	// when the workspace was created; nil (workflows started before
	// policies existed) means the defaults.
	Policy *backend.Policy
	// PoolID is the warm pool the workspace belongs to, if any.
	PoolID string
	// TenantID is the tenant the workspace belongs to; it is only the
	// value of the PrimerTenant search attribute the start sets.
	TenantID string
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
	// Handle is the provisioned sandbox; nil until provisioning succeeded
	// (and again after a provisioning or a replacement failed).
	Handle *backend.Handle
	// Probes counts probes over the workflow's whole life, across runs.
	Probes int
	// PhaseSince is when the workspace entered Phase (workflow time); the
	// start timeout and the recovery delay count from it.
	PhaseSince time.Time
	// Attempts counts the replacements tried since the workspace last ran.
	Attempts int
	// Recovering is set while a replacement is provisioned and has not yet
	// answered a probe.
	Recovering bool
	// LostAt is when the workspace last went failed from a working state;
	// sessions lost since then are resumed when it recovers, on a
	// replacement or (version vSelfHeal) on the sandbox that came back. A
	// failed replacement keeps it: what was lost is still to resume.
	LostAt time.Time
	// DeleteReason is set once a delete began; a continued run goes on
	// deleting.
	DeleteReason string
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

// RecoverSignal is the payload of SignalRecover.
type RecoverSignal struct {
	// Reason says who asked; it is recorded with the recovery.
	Reason string
}

// ReturnSignal is the payload of SignalReturn.
type ReturnSignal struct{}

// defaultDeleteReason is used when a delete signal gives no reason.
const defaultDeleteReason = "deleted"

// Workflow versions of WorkspaceWorkflow (workflow.GetVersion change id
// versionRecovery). Version 0 is the first released behaviour and is kept
// for the runs that started with it; a run keeps the version it recorded
// (its history must replay), and a run that continues as new takes the
// latest.
const (
	versionRecovery = "recovery"
	// vRecovery adds stale recovery and escalation, the start timeout,
	// deletes that retry until done, and the recover and return signals.
	vRecovery workflow.Version = 1
	// vSelfHeal resumes lost sessions when a failed workspace comes back
	// to running on its own (HitsToRecover probe hits: a Kubernetes pod
	// recreated by its StatefulSet, a container restarted by hand), as a
	// replacement does. Version 1 only moved the phase back.
	vSelfHeal workflow.Version = 2
)

// WorkspaceWorkflow is the life of one workspace:
//
//   - provision (retried within the template's start timeout; on failure:
//     workspace.provision_failed, clean up, phase failed);
//   - probe at once, then every ProbeInterval: pending -> running on the
//     first hit; running -> failed after MissesToFail consecutive misses
//     (open sessions end workspace_lost); pending -> failed after the
//     misses or when it stays pending longer than the start timeout;
//     failed -> running after HitsToRecover consecutive hits (the sandbox
//     came back on its own: from version vSelfHeal on, workspace.recovered
//     and the sessions lost since the failure are resumed, as after a
//     replacement; its attempt is the last replacement tried, 0 when none
//     was);
//   - stale recovery: once failed for the policy's delay, the sandbox is
//     replaced under the same workspace id (its data kept where the backend
//     can), phase pending while the replacement starts; when it answers,
//     workspace.recovered, and every session lost since the failure gets a
//     new session linked to it. After MaxAttempts failed replacements the
//     workspace is escalated (event, optional webhook) and waits for the
//     recover signal or a delete;
//   - a pool workspace that is returned is reset, or deleted when the reset
//     fails (its pool replaces it);
//   - on the delete signal, from any phase: terminating, destroy until it
//     succeeds (the reason says why it is still terminating), done; from
//     version vInterrupt of change versionInterrupt, a provisioning,
//     replacement or reset in flight is cancelled first (interrupt.go);
//   - on cancellation, destroy anyway, on a disconnected context;
//   - from version vSnapshot of change versionSnapshot, the snapshot,
//     pause and resume signals (snapshot.go): a capture of the sandbox
//     into a snapshot row, phase paused (not probed) and back.
//
// Each phase change is written to the database (SetPhase) and to the
// PrimerPhase search attribute. The run continues as new after
// ProbesPerRun probes or when the server suggests it, carrying its state.
func WorkspaceWorkflow(ctx workflow.Context, in WorkspaceInput) (out WorkspaceOutput, err error) {
	w := &workspace{
		in:        in,
		interval:  in.ProbeInterval,
		deleteCh:  workflow.GetSignalChannel(ctx, SignalDelete),
		recoverCh: workflow.GetSignalChannel(ctx, SignalRecover),
		returnCh:  workflow.GetSignalChannel(ctx, SignalReturn),
		liveCh:    workflow.GetSignalChannel(ctx, SignalLiveness),
		snap: snapshotSignals{
			snapshotCh: workflow.GetSignalChannel(ctx, SignalSnapshot),
			pauseCh:    workflow.GetSignalChannel(ctx, SignalPause),
			resumeCh:   workflow.GetSignalChannel(ctx, SignalResume),
		},
		log: workflow.GetLogger(ctx),
	}
	if w.interval <= 0 {
		w.interval = DefaultProbeInterval
	}
	w.policy = backend.Common{}.Policy()
	if in.Policy != nil {
		w.policy = *in.Policy
	}
	if in.State != nil {
		w.st = *in.State
	} else {
		w.st = WorkspaceState{Phase: wire.PhasePending}
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

	w.version = workflow.GetVersion(ctx, versionRecovery, workflow.DefaultVersion, vSelfHeal)
	if w.version == workflow.DefaultVersion {
		err = w.runV0(ctx)
	} else {
		w.interrupt = workflow.GetVersion(ctx, versionInterrupt, workflow.DefaultVersion, vInterrupt)
		w.life.version = workflow.GetVersion(ctx, versionLifetime, workflow.DefaultVersion, vLifetime)
		w.liveness = workflow.GetVersion(ctx, versionLiveness, workflow.DefaultVersion, vLiveness)
		w.snap.version = workflow.GetVersion(ctx, versionSnapshot, workflow.DefaultVersion, vSnapshot)
		w.life.expirePause = workflow.GetVersion(ctx, versionExpirePause, workflow.DefaultVersion, vExpirePause)
		w.life.paused = w.st.Phase == wire.PhasePaused
		err = w.run(ctx)
	}
	return WorkspaceOutput{State: w.st}, err
}

// workspace is one run of the workflow.
type workspace struct {
	in        WorkspaceInput
	version   workflow.Version
	interrupt workflow.Version // of change versionInterrupt (interrupt.go)
	life      lifetime         // deadlines, from version vLifetime (lifetime.go)
	liveness  workflow.Version // of change versionLiveness (liveness.go)
	// snap holds the snapshot, pause and resume signals, from version
	// vSnapshot (snapshot.go).
	snap snapshotSignals
	// watched is set while the worker's Prober watches the workspace for
	// this run: the loop sleeps on the backstop.
	watched bool
	// signal is the last liveness signal the wait took.
	signal    activities.LivenessSignal
	interval  time.Duration
	policy    backend.Policy
	st        WorkspaceState
	deleteCh  workflow.ReceiveChannel
	recoverCh workflow.ReceiveChannel
	returnCh  workflow.ReceiveChannel
	liveCh    workflow.ReceiveChannel
	log       log.Logger
	due       time.Time // when the next probe is due, for the lateness metric
	destroyed bool
}

// run is version vRecovery and later of the workflow.
func (w *workspace) run(ctx workflow.Context) error {
	if w.st.DeleteReason != "" {
		return w.deleteLoop(ctx, w.st.DeleteReason)
	}
	if reason, ok := w.pendingDelete(); ok {
		return w.deleteLoop(ctx, reason)
	}
	first := w.in.State == nil
	if w.st.PhaseSince.IsZero() {
		// A run continued from version 0 did not keep the time.
		w.st.PhaseSince = workflow.Now(ctx)
	}
	if first {
		w.st.PhaseSince = workflow.Now(ctx)
		if err := w.provision(ctx); err != nil {
			return err
		}
	}
	reason, err := w.loop(ctx, first && w.st.Handle != nil)
	if err != nil {
		return err
	}
	return w.deleteLoop(ctx, reason)
}

// wake is what ended a wait of the loop.
type wake int

const (
	wakeTimer wake = iota
	wakeDelete
	wakeRecover
	wakeReturn
	wakeLiveness
	wakeSnapshot
	wakePause
	wakeResume
)

// loop probes and recovers until a delete arrives (its reason is
// returned), the workflow is cancelled, or the run continues as new (both
// as the error).
func (w *workspace) loop(ctx workflow.Context, probeNow bool) (string, error) {
	w.due = workflow.Now(ctx)
	probes := 0
	for {
		if reason, ok := w.pendingDelete(); ok {
			return reason, nil
		}
		probeIt := true
		if !probeNow {
			why, reason, err := w.wait(ctx)
			if err != nil {
				return "", err
			}
			switch why {
			case wakeDelete:
				return reason, nil
			case wakeRecover:
				if w.st.Phase == wire.PhaseFailed || w.st.Phase == wire.PhaseEscalated {
					if err := w.replace(ctx, true, reason); err != nil {
						return "", err
					}
				}
				probeNow = w.st.Handle != nil && w.st.Phase == wire.PhasePending
				continue
			case wakeReturn:
				if reason, done, err := w.returned(ctx); err != nil || done {
					return reason, err
				}
				continue
			case wakeSnapshot:
				if err := w.takeSnapshot(ctx, w.snap.snapshot); err != nil {
					return "", err
				}
				continue
			case wakePause:
				if err := w.onPause(ctx, w.snap.pause); err != nil {
					return "", err
				}
				continue
			case wakeResume:
				if err := w.onResume(ctx, w.snap.resume); err != nil {
					return "", err
				}
				probeNow = w.st.Handle != nil && w.st.Phase == wire.PhasePending
				continue
			case wakeLiveness:
				if !w.onLiveness(ctx, w.signal) {
					continue
				}
				// The Prober probed: what follows a probe follows, without
				// one here.
				probeIt = false
			}
		}
		probeNow = false
		if reason, done, err := w.lifetimeTick(ctx); err != nil || done {
			return reason, err
		}

		if w.st.Phase == wire.PhaseEscalated || w.st.Phase == wire.PhasePaused {
			// Neither is probed: an escalated one waits for a recover, a
			// paused one for a resume (version vSnapshot).
			continue
		}
		if w.st.Handle != nil && probeIt {
			if err := w.probe(ctx); err != nil {
				return "", err
			}
		}
		now := workflow.Now(ctx)
		switch w.st.Phase {
		case wire.PhaseFailed:
			// Replace once the delay is over, unless the last probe hit: a
			// sandbox that answers again gets the chance to reach
			// HitsToRecover.
			if !now.Before(w.st.PhaseSince.Add(w.policy.RecoverAfter)) && w.st.Hits == 0 {
				if err := w.replace(ctx, false, ""); err != nil {
					return "", err
				}
				probeNow = w.st.Handle != nil && w.st.Phase == wire.PhasePending
			}
		case wire.PhasePending:
			if !now.Before(w.st.PhaseSince.Add(w.policy.StartTimeout)) {
				w.fail(ctx, fmt.Sprintf("did not start within the start timeout (%s)", w.policy.StartTimeout))
			}
		}
		if w.st.Handle == nil {
			continue
		}
		probes++
		if probes >= ProbesPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			// Signals that arrived meanwhile must not be lost with this run.
			if reason, ok := w.pendingDelete(); ok {
				return reason, nil
			}
			if w.recoverCh.Len() > 0 || w.returnCh.Len() > 0 || w.snap.pending() {
				continue
			}
			return "", w.continueAsNew(ctx)
		}
	}
}

// continueAsNew ends this run and starts the next with the current state.
func (w *workspace) continueAsNew(ctx workflow.Context) error {
	next := w.in
	st := w.st
	next.State = &st
	return workflow.NewContinueAsNewError(ctx, WorkspaceWorkflowName, next)
}

// wait sleeps until the next probe or the next deadline of the phase, or
// until a signal arrives. An escalated workspace waits for signals only.
func (w *workspace) wait(ctx workflow.Context) (why wake, reason string, err error) {
	now := workflow.Now(ctx)
	d := w.interval
	if w.watched && w.st.Phase == wire.PhaseRunning {
		d = w.backstop()
	}
	switch w.st.Phase {
	case wire.PhaseFailed:
		d = untilDeadline(d, now, w.st.PhaseSince.Add(w.policy.RecoverAfter))
	case wire.PhasePending:
		d = untilDeadline(d, now, w.st.PhaseSince.Add(w.policy.StartTimeout))
	}
	if w.st.Handle == nil && w.st.Phase != wire.PhaseFailed && w.st.Phase != wire.PhasePending {
		d = -1
	}
	if w.st.Phase == wire.PhaseEscalated || w.st.Phase == wire.PhasePaused {
		d = -1
	}
	d = w.life.wait(d, now)
	tctx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	sel := workflow.NewSelector(ctx)
	why = wakeTimer
	if d >= 0 {
		w.due = now.Add(d)
		sel.AddFuture(workflow.NewTimer(tctx, d), func(workflow.Future) {})
	}
	sel.AddReceive(w.deleteCh, func(c workflow.ReceiveChannel, _ bool) {
		var s DeleteSignal
		c.Receive(ctx, &s)
		why, reason = wakeDelete, s.Reason
	})
	sel.AddReceive(w.recoverCh, func(c workflow.ReceiveChannel, _ bool) {
		var s RecoverSignal
		c.Receive(ctx, &s)
		why, reason = wakeRecover, s.Reason
	})
	sel.AddReceive(w.returnCh, func(c workflow.ReceiveChannel, _ bool) {
		var s ReturnSignal
		c.Receive(ctx, &s)
		why = wakeReturn
	})
	w.snap.addTo(ctx, sel, &why)
	if w.liveness >= vLiveness {
		sel.AddReceive(w.liveCh, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, &w.signal)
			why = wakeLiveness
		})
	}
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	sel.Select(ctx)
	if err := ctx.Err(); err != nil {
		return wakeTimer, "", err
	}
	return why, reason, nil
}

// untilDeadline shortens a wait of d to end at deadline when that comes
// first. A deadline already past does not shorten it: whatever it was due
// for has been decided at the last wake.
func untilDeadline(d time.Duration, now, deadline time.Time) time.Duration {
	if left := deadline.Sub(now); left > 0 && left < d {
		return left
	}
	return d
}

// provision runs the provision activity. A failure that is not a
// cancellation is handled here (event, clean-up, phase failed) and leaves
// the handle nil; only a cancellation is returned.
func (w *workspace) provision(ctx workflow.Context) error {
	var a *activities.Activities
	var out activities.ProvisionOutput
	interrupted, err := w.step(ctx, w.startOptions(), a.Provision, activities.ProvisionInput{WorkspaceID: w.in.WorkspaceID}, &out)
	if err == nil {
		h := out.Handle
		w.st.Handle = &h
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if interrupted {
		// Deleted half-way: the loop deletes, and Destroy finds what was
		// made from the row or by the workspace id.
		return nil
	}
	msg := w.startError(err)
	w.log.Warn("workspace provisioning failed", "workspace_id", w.in.WorkspaceID, "error", msg)

	w.recordEvent(ctx, wire.EventProvisionFailed, map[string]any{"workspace_type": w.in.Backend, "error": msg})
	var a2 *activities.Activities
	cctx := workflow.WithActivityOptions(ctx, cleanupOptions)
	if err := workflow.ExecuteActivity(cctx, a2.Destroy, activities.DestroyInput{
		WorkspaceID: w.in.WorkspaceID,
		KeepRow:     true,
	}).Get(ctx, nil); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.log.Warn("clean up after provisioning failed", "workspace_id", w.in.WorkspaceID, "error", errorMessage(err))
	}
	w.setPhase(ctx, wire.PhaseFailed, msg)
	return nil
}

// startOptions are the options of a provisioning or a replacement: from
// version vRecovery on, the start timeout bounds it with all its retries.
func (w *workspace) startOptions() workflow.ActivityOptions {
	opts := provisionOptions
	if w.version >= vRecovery {
		opts.ScheduleToCloseTimeout = w.policy.StartTimeout
		opts.StartToCloseTimeout = min(opts.StartToCloseTimeout, w.policy.StartTimeout)
	}
	return opts
}

// returned handles a pool workspace given back by its lessee: a running
// one is reset and goes back to the pool; one that is not running, or
// whose reset fails, is deleted and its pool makes a new one. done is true
// when the workspace is to be deleted, with reason.
func (w *workspace) returned(ctx workflow.Context) (reason string, done bool, err error) {
	if w.in.PoolID == "" {
		return "", false, nil
	}
	if w.st.Phase != wire.PhaseRunning {
		return "returned to its pool while " + w.st.Phase + "; replaced", true, nil
	}
	var a *activities.Activities
	interrupted, rerr := w.step(ctx, resetOptions, a.Reset, activities.ResetInput{WorkspaceID: w.in.WorkspaceID}, nil)
	if ctx.Err() != nil {
		return "", false, ctx.Err()
	}
	if rerr != nil && interrupted {
		// Deleted while resetting: the loop takes the delete.
		return "", false, nil
	}
	if rerr != nil {
		return "reset on return failed; replaced: " + errorMessage(rerr), true, nil
	}
	return "", false, nil
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
		Lifetime:    w.life.version >= vLifetime,
		Watch:       w.watchRequest(ctx),
	}).Get(ctx, &out)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		// The probe itself broke (timed out, panicked): that is a miss too.
		out = activities.ProbeOutput{Reason: "probe: " + errorMessage(err)}
	}
	w.life.note(out.Lifetime)
	w.st.Probes++
	if out.Hit {
		w.st.Hits++
		w.st.Misses = 0
	} else {
		w.st.Misses++
		w.st.Hits = 0
	}
	switch w.st.Phase {
	case wire.PhasePending:
		if out.Hit {
			w.setPhase(ctx, wire.PhaseRunning, "runtime answered")
			if w.st.Recovering {
				w.recovered(ctx)
			}
		} else if w.st.Misses >= MissesToFail {
			w.fail(ctx, out.Reason)
		}
	case wire.PhaseRunning:
		if w.st.Misses >= MissesToFail {
			w.fail(ctx, out.Reason)
		}
	case wire.PhaseFailed:
		if w.st.Hits >= HitsToRecover {
			w.setPhase(ctx, wire.PhaseRunning, fmt.Sprintf("runtime answered %d probes in a row", w.st.Hits))
			switch {
			case w.version >= vSelfHeal:
				// The sandbox came back on its own, but the failure ended
				// its sessions all the same: resume them as a replacement
				// would. This also resets Attempts, so the next failure
				// sets LostAt again and resumes only what it loses.
				w.recovered(ctx)
			case w.version >= vRecovery:
				w.st.Attempts = 0
			}
		}
	}
	// From version vLiveness: sleep on the backstop while the worker's
	// Prober watches a running workspace.
	w.watched = out.Watched && w.st.Phase == wire.PhaseRunning
	return nil
}

// deleteLoop terminates the workspace. A destroy that fails leaves it
// terminating with the error in the reason and is tried again on a timer,
// with backoff, until it succeeds: a delete always completes. Long waits
// continue as new, still deleting.
func (w *workspace) deleteLoop(ctx workflow.Context, reason string) error {
	if reason == "" {
		reason = defaultDeleteReason
	}
	w.st.DeleteReason = reason
	for round := 1; ; round++ {
		err := w.terminate(ctx, reason)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		backoff := min(time.Duration(1<<min(round, 6))*time.Second, time.Minute)
		w.setReason(ctx, fmt.Sprintf("%s; destroy failed (round %d), retrying in %s: %s", reason, round, backoff, errorMessage(err)))
		if err := workflow.Sleep(ctx, backoff); err != nil {
			return err
		}
		// Deletes that arrive meanwhile change nothing: drain them.
		for {
			if _, ok := w.pendingDelete(); !ok {
				break
			}
		}
		if round >= DestroyRoundsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return w.continueAsNew(ctx)
		}
	}
}

// terminate moves to terminating and destroys the workspace (the activity
// also deletes its row).
func (w *workspace) terminate(ctx workflow.Context, reason string) error {
	if reason == "" {
		reason = defaultDeleteReason
	}
	w.setPhase(ctx, wire.PhaseTerminating, reason)
	var a *activities.Activities
	opts := destroyOptions
	if w.version >= vRecovery {
		opts = destroyRoundOptions
	}
	actx := workflow.WithActivityOptions(ctx, opts)
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
	w.life.paused = to == wire.PhasePaused
	if w.version >= vRecovery {
		w.st.PhaseSince = workflow.Now(ctx)
		w.st.Hits, w.st.Misses = 0, 0
	}
	w.storePhase(ctx, from, to, reason)
	if err := workflow.UpsertTypedSearchAttributes(ctx, SearchAttrPhase.ValueSet(to)); err != nil {
		w.log.Warn("upsert phase search attribute", "workspace_id", w.in.WorkspaceID, "to", to, "error", err)
	}
	w.log.Info("workspace phase changed", "workspace_id", w.in.WorkspaceID, "from", from, "to", to, "reason", reason)
}

// setReason records a new reason for the phase the workspace is in.
func (w *workspace) setReason(ctx workflow.Context, reason string) {
	if w.st.Reason == reason {
		return
	}
	w.st.Reason = reason
	w.storePhase(ctx, w.st.Phase, w.st.Phase, reason)
}

func (w *workspace) storePhase(ctx workflow.Context, from, to, reason string) {
	var a *activities.Activities
	lctx := workflow.WithLocalActivityOptions(ctx, recordOptions)
	if err := workflow.ExecuteLocalActivity(lctx, a.SetPhase, activities.SetPhaseInput{
		WorkspaceID: w.in.WorkspaceID, From: from, To: to, Reason: reason,
	}).Get(ctx, nil); err != nil {
		w.log.Warn("store phase change", "workspace_id", w.in.WorkspaceID, "to", to, "error", errorMessage(err))
	}
}

// recordEvent stores one event; failing to store it does not stop the
// workflow.
func (w *workspace) recordEvent(ctx workflow.Context, typ string, data map[string]any) {
	var a *activities.Activities
	lctx := workflow.WithLocalActivityOptions(ctx, recordOptions)
	if err := workflow.ExecuteLocalActivity(lctx, a.RecordEvent, activities.RecordEventInput{
		WorkspaceID: w.in.WorkspaceID, Type: typ, Data: data,
	}).Get(ctx, nil); err != nil {
		w.log.Warn("record event", "workspace_id", w.in.WorkspaceID, "type", typ, "error", errorMessage(err))
	}
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
		if cause := toErr.Unwrap(); cause != nil {
			return toErr.Error() + ": " + errorMessage(cause)
		}
		return toErr.Error()
	}
	return err.Error()
}

// startError is the reason of a provisioning or replacement that failed:
// one that ran out of the start timeout says so, with the step it was at
// when the activity could tell.
func (w *workspace) startError(err error) string {
	msg := errorMessage(err)
	var appErr *temporal.ApplicationError
	if isTimeout(err) || (errors.As(err, &appErr) && appErr.Type() == activities.StartTimeoutType) {
		return fmt.Sprintf("did not start within the start timeout (%s): %s", w.policy.StartTimeout, msg)
	}
	return msg
}

// isTimeout reports whether an activity error is its timeout running out.
func isTimeout(err error) bool {
	var toErr *temporal.TimeoutError
	return errors.As(err, &toErr)
}
