package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/wire"
)

// Change versionSnapshot of WorkspaceWorkflow: snapshots, pause and
// resume. It is its own change id, beside versionRecovery, so it versions
// on its own; only runs of version vRecovery and later ask for it.
const (
	versionSnapshot = "snapshot"
	// vSnapshot makes the loop's wait take SignalSnapshot, SignalPause and
	// SignalResume:
	//
	//   - snapshot: the Snapshot activity captures the sandbox into the
	//     snapshot row the API made (creating -> ready, event
	//     workspace.snapshot_taken); a failure fails the row with its
	//     reason (workspace.snapshot_failed). A delete interrupts it.
	//     A running, pending or paused workspace can be captured; the
	//     phase does not change.
	//   - pause: the Pause activity stops the sandbox's compute, keeping
	//     its files; phase paused. A paused workspace is not probed (nor
	//     watched by the worker's Prober), its idle deadline does not
	//     apply, and a delete destroys it as any other.
	//   - resume: the Resume activity starts it again; phase pending, and
	//     the probe that hits makes it running.
	//   - a template's lifetime.idle_action pause pauses the workspace at
	//     its idle deadline instead of deleting it (a backend that cannot
	//     pause deletes it, the reason saying why).
	vSnapshot workflow.Version = 1
)

// Options of the snapshot, pause and resume steps.
var (
	// snapshotOptions: a capture of a large sandbox (a docker commit of
	// gigabytes, a volume streamed out) takes minutes; a few retries of
	// an engine that hiccups, then the snapshot fails with the reason.
	snapshotOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         backoff(30*time.Second, 4),
	}
	// pauseOptions are a pause's or a resume's: a container stopped or
	// started, a StatefulSet scaled.
	pauseOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         backoff(30*time.Second, 4),
	}
)

// snapshotSignals are the channels of version vSnapshot's signals and the
// last payload each wait took.
type snapshotSignals struct {
	version    workflow.Version
	snapshotCh workflow.ReceiveChannel
	pauseCh    workflow.ReceiveChannel
	resumeCh   workflow.ReceiveChannel
	snapshot   SnapshotSignal
	pause      PauseSignal
	resume     ResumeSignal
}

// addTo makes sel take the signals from version vSnapshot on; each sets
// *why.
func (s *snapshotSignals) addTo(ctx workflow.Context, sel workflow.Selector, why *wake) {
	if s.version < vSnapshot {
		return
	}
	sel.AddReceive(s.snapshotCh, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, &s.snapshot)
		*why = wakeSnapshot
	})
	sel.AddReceive(s.pauseCh, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, &s.pause)
		*why = wakePause
	})
	sel.AddReceive(s.resumeCh, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, &s.resume)
		*why = wakeResume
	})
}

// pending reports whether a signal of version vSnapshot waits to be taken
// (a run must not continue as new over it).
func (s *snapshotSignals) pending() bool {
	return s.version >= vSnapshot && (s.snapshotCh.Len() > 0 || s.pauseCh.Len() > 0 || s.resumeCh.Len() > 0)
}

// takeSnapshot captures the sandbox into snapshot s.SnapshotID. Only a
// cancellation of the workflow is returned: a failure is recorded on the
// snapshot, and a delete that interrupted it is left for the loop.
func (w *workspace) takeSnapshot(ctx workflow.Context, s SnapshotSignal) error {
	if w.st.Handle == nil || (w.st.Phase != wire.PhaseRunning && w.st.Phase != wire.PhasePending && w.st.Phase != wire.PhasePaused) {
		w.failSnapshot(ctx, s.SnapshotID, "the workspace is "+w.st.Phase+" with no sandbox to capture")
		return nil
	}
	var a *activities.Activities
	var out activities.SnapshotOutput
	interrupted, err := w.step(ctx, snapshotOptions, a.Snapshot, activities.SnapshotInput{
		WorkspaceID: w.in.WorkspaceID,
		SnapshotID:  s.SnapshotID,
		Mode:        s.Mode,
		Handle:      w.st.Handle,
	}, &out)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch {
	case err == nil:
		w.log.Info("snapshot taken", "workspace_id", w.in.WorkspaceID, "snapshot_id", s.SnapshotID, "bytes", out.Bytes, "discarded", out.Discarded)
	case interrupted:
		w.failSnapshot(ctx, s.SnapshotID, "the workspace was deleted while the snapshot was taken")
	default:
		w.failSnapshot(ctx, s.SnapshotID, errorMessage(err))
	}
	return nil
}

// failSnapshot records that snapshot id could not be taken.
func (w *workspace) failSnapshot(ctx workflow.Context, id, reason string) {
	w.log.Warn("snapshot failed", "workspace_id", w.in.WorkspaceID, "snapshot_id", id, "reason", reason)
	var a *activities.Activities
	lctx := workflow.WithLocalActivityOptions(ctx, recordOptions)
	if err := workflow.ExecuteLocalActivity(lctx, a.FailSnapshot, activities.FailSnapshotInput{
		WorkspaceID: w.in.WorkspaceID, SnapshotID: id, Reason: reason,
	}).Get(ctx, nil); err != nil {
		// The reconciler fails a snapshot whose workspace is gone; one
		// whose workspace lives is failed by the next snapshot attempt's
		// store write at the latest.
		w.log.Warn("record snapshot failure", "workspace_id", w.in.WorkspaceID, "snapshot_id", id, "error", errorMessage(err))
	}
}

// pause stops the workspace's compute (phase paused). paused reports
// whether it is paused now; when not, why says why (the workspace kept
// its phase). Only a cancellation of the workflow is returned.
func (w *workspace) pause(ctx workflow.Context, s PauseSignal) (paused bool, why string, err error) {
	if w.st.Phase == wire.PhasePaused {
		return true, "", nil
	}
	if w.st.Handle == nil || (w.st.Phase != wire.PhaseRunning && w.st.Phase != wire.PhasePending) {
		return false, "the workspace is " + w.st.Phase, nil
	}
	reason := s.Reason
	if reason == "" {
		reason = "paused"
	}
	var a *activities.Activities
	var out activities.PauseOutput
	interrupted, perr := w.step(ctx, pauseOptions, a.Pause, activities.PauseInput{
		WorkspaceID: w.in.WorkspaceID, Mode: s.Mode, Reason: reason, Handle: w.st.Handle,
	}, &out)
	if ctx.Err() != nil {
		return false, "", ctx.Err()
	}
	if perr != nil {
		if interrupted {
			return false, "deleted while pausing", nil
		}
		return false, errorMessage(perr), nil
	}
	h := out.Handle
	w.st.Handle = &h
	w.watched = false
	w.setPhase(ctx, wire.PhasePaused, reason)
	return true, "", nil
}

// onPause applies a pause signal; a pause that fails leaves the phase and
// says why in its reason.
func (w *workspace) onPause(ctx workflow.Context, s PauseSignal) error {
	paused, why, err := w.pause(ctx, s)
	if err != nil || paused {
		return err
	}
	w.log.Warn("pause failed", "workspace_id", w.in.WorkspaceID, "reason", why)
	if w.st.Handle != nil && w.deleteCh.Len() == 0 {
		w.setReason(ctx, "pause failed: "+why)
	}
	return nil
}

// onResume starts a paused workspace again: phase pending, and the next
// probe (at once) makes it running. A resume that fails leaves it paused
// with the reason.
func (w *workspace) onResume(ctx workflow.Context, s ResumeSignal) error {
	if w.st.Phase != wire.PhasePaused {
		return nil
	}
	reason := s.Reason
	if reason == "" {
		reason = "resumed"
	}
	var a *activities.Activities
	var out activities.ResumeOutput
	interrupted, err := w.step(ctx, pauseOptions, a.Resume, activities.ResumeInput{
		WorkspaceID: w.in.WorkspaceID, Reason: reason, Handle: w.st.Handle,
	}, &out)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		if !interrupted {
			w.log.Warn("resume failed", "workspace_id", w.in.WorkspaceID, "error", errorMessage(err))
			w.setReason(ctx, "resume failed: "+errorMessage(err))
		}
		return nil
	}
	h := out.Handle
	w.st.Handle = &h
	w.setPhase(ctx, wire.PhasePending, reason)
	return nil
}
