package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/wire"
)

// Workflow versions of the lifetime change (workflow.GetVersion change id
// versionLifetime), separate from versionRecovery so other changes to the
// workflow version on their own.
const (
	versionLifetime = "lifetime"
	// vLifetime enforces the workspace's lifetime deadlines: the probe
	// brings them back with its result, the workflow wakes at the nearest
	// one, reads them again (an extend or an exec may have moved them) and
	// deletes the workspace (expired, idle) or takes back its lease
	// (lease_expired) when one has passed.
	vLifetime workflow.Version = 1
)

// Workflow versions of the expire-pause change (change id
// versionExpirePause).
const (
	versionExpirePause = "expire_pause"
	// vExpirePause pauses, rather than deletes, a workspace whose
	// expire_action is pause when its ExpiresAt passes (E2B's autoPause),
	// unless ExpiresAt is its MaxExpiresAt; while such a workspace is
	// paused only MaxExpiresAt applies, so it waits for a resume (an E2B
	// connect extends it first) instead of being deleted at once.
	vExpirePause workflow.Version = 1
)

// lifetime is what the workflow knows of its workspace's deadlines: the
// last ones a probe or a check read. It is not carried over
// continue-as-new; the next probe reads them again.
type lifetime struct {
	version workflow.Version
	known   *activities.Lifetime
	// paused is set while the workspace is paused (version vSnapshot):
	// its idle deadline does not apply.
	paused bool
	// expirePause is the version of change versionExpirePause.
	expirePause workflow.Version
}

// effective is got as the workflow enforces it: from version
// vExpirePause, a paused workspace whose expire_action is pause expires
// only at its MaxExpiresAt (none when it has none), as a paused E2B
// sandbox outlives its timeout.
func (l *lifetime) effective(got activities.Lifetime) activities.Lifetime {
	if l.expirePause >= vExpirePause && l.paused && got.ExpireAction == wire.ExpireActionPause {
		got.ExpiresAt = got.MaxExpiresAt
	}
	return got
}

// note keeps the deadlines a probe read.
func (l *lifetime) note(got *activities.Lifetime) {
	if l.version >= vLifetime && got != nil {
		l.known = got
	}
}

// next is the nearest deadline known, zero when none.
func (l *lifetime) next() time.Time {
	if l.known == nil || l.known.Resting {
		return time.Time{}
	}
	known := l.effective(*l.known)
	deadlines := []time.Time{known.ExpiresAt, known.LeaseExpiresAt}
	if !l.paused {
		deadlines = append(deadlines, known.IdleDeadline)
	}
	var at time.Time
	for _, t := range deadlines {
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	return at
}

// wait shortens d (negative: no timer) so the workflow wakes at the
// nearest known deadline.
func (l *lifetime) wait(d time.Duration, now time.Time) time.Duration {
	at := l.next()
	if at.IsZero() {
		return d
	}
	left := max(at.Sub(now), 0)
	if d < 0 || left < d {
		return left
	}
	return d
}

// due says which deadline of got has passed at now: models.ReasonExpired
// first (it ends the workspace whatever else holds), then
// models.ReasonLeaseExpired, then models.ReasonIdle; "" when none.
func due(got activities.Lifetime, now time.Time) string {
	passed := func(t time.Time) bool { return !t.IsZero() && !now.Before(t) }
	switch {
	case got.Resting:
		return ""
	case passed(got.ExpiresAt):
		return wire.ReasonExpired
	case passed(got.LeaseExpiresAt):
		return wire.ReasonLeaseExpired
	case passed(got.IdleDeadline):
		return wire.ReasonIdle
	}
	return ""
}

// lifetimeTick runs at each wake of the loop from version vLifetime on.
// When a known deadline has passed it reads the deadlines again and acts
// on the one that still has: the workspace is deleted (done, with the
// reason) when it expired or went idle; a lease that ran out is taken back
// (reset and returned to its pool through the return path, or deleted
// when the lease made the workspace).
func (w *workspace) lifetimeTick(ctx workflow.Context) (reason string, done bool, err error) {
	if w.life.version < vLifetime {
		return "", false, nil
	}
	now := workflow.Now(ctx)
	if at := w.life.next(); at.IsZero() || now.Before(at) {
		return "", false, nil
	}
	var a *activities.Activities
	var got activities.CheckLifetimeOutput
	lctx := workflow.WithLocalActivityOptions(ctx, recordOptions)
	if err := workflow.ExecuteLocalActivity(lctx, a.CheckLifetime, activities.CheckLifetimeInput{
		WorkspaceID: w.in.WorkspaceID,
	}).Get(ctx, &got); err != nil {
		if ctx.Err() != nil {
			return "", false, ctx.Err()
		}
		// The next probe reads the deadlines again.
		w.log.Warn("check lifetime", "workspace_id", w.in.WorkspaceID, "error", errorMessage(err))
		w.life.known = nil
		return "", false, nil
	}
	if got.Gone {
		w.life.known = nil
		return "", false, nil
	}
	w.life.known = &got.Lifetime
	eff := w.life.effective(got.Lifetime)
	why := due(eff, now)
	if why == wire.ReasonIdle && w.life.paused {
		// A paused workspace is idle by design: only its max applies.
		return "", false, nil
	}
	switch why {
	case "":
		return "", false, nil
	case wire.ReasonIdle:
		if w.snap.version >= vSnapshot && got.IdleAction == backend.IdleActionPause {
			return w.pauseAt(ctx, wire.ReasonIdle, got.Lifetime.IdleDeadline)
		}
		fallthrough
	case wire.ReasonExpired:
		at := eff.ExpiresAt
		if why == wire.ReasonIdle {
			at = got.Lifetime.IdleDeadline
		} else if w.life.expirePause >= vExpirePause && w.snap.version >= vSnapshot && !w.life.paused && got.Lifetime.PausesAtExpiry() {
			return w.pauseAt(ctx, wire.ReasonExpired, at)
		}
		w.recordEvent(ctx, wire.EventExpired, map[string]any{"reason": why, "deadline": at.UTC().Format(time.RFC3339Nano)})
		w.log.Info("workspace expired", "workspace_id", w.in.WorkspaceID, "reason", why)
		return why, true, nil
	}
	return w.leaseExpired(ctx)
}

// leaseExpired takes back a workspace whose lease ran out.
func (w *workspace) leaseExpired(ctx workflow.Context) (reason string, done bool, err error) {
	w.life.known = nil
	var a *activities.Activities
	var out activities.ExpireLeaseOutput
	lctx := workflow.WithLocalActivityOptions(ctx, recordOptions)
	if err := workflow.ExecuteLocalActivity(lctx, a.ExpireLease, activities.ExpireLeaseInput{
		WorkspaceID: w.in.WorkspaceID,
	}).Get(ctx, &out); err != nil {
		if ctx.Err() != nil {
			return "", false, ctx.Err()
		}
		w.log.Warn("expire lease", "workspace_id", w.in.WorkspaceID, "error", errorMessage(err))
		return "", false, nil
	}
	switch {
	case !out.TakenBack:
		return "", false, nil
	case out.PoolID == "" || w.in.PoolID == "":
		// A cold lease made this workspace for its lessee: there is no
		// pool to return it to.
		return wire.ReasonLeaseExpired, true, nil
	}
	reason, done, err = w.returned(ctx)
	if done {
		reason = wire.ReasonLeaseExpired + ": " + reason
	}
	return reason, done, err
}

// pauseAt pauses a workspace at a deadline that pauses it rather than
// deleting it: its idle deadline when its template's lifetime.idle_action
// is pause (version vSnapshot), its expiry when its expire_action is pause
// (version vExpirePause); cause is wire.ReasonIdle or ReasonExpired. One
// that cannot be paused (a backend without a Pauser, a pause that fails)
// is deleted as before, the reason saying why it was not paused.
func (w *workspace) pauseAt(ctx workflow.Context, cause string, deadline time.Time) (reason string, done bool, err error) {
	paused, why, err := w.pause(ctx, PauseSignal{Reason: cause})
	if err != nil {
		return "", false, err
	}
	if paused {
		w.log.Info("workspace paused at its deadline", "workspace_id", w.in.WorkspaceID, "reason", cause)
		return "", false, nil
	}
	if w.deleteCh.Len() > 0 {
		// Deleted while pausing: the loop takes the delete.
		return "", false, nil
	}
	reason = cause + "; not paused: " + why
	w.recordEvent(ctx, wire.EventExpired, map[string]any{"reason": reason, "deadline": deadline.UTC().Format(time.RFC3339Nano)})
	w.log.Info("workspace expired", "workspace_id", w.in.WorkspaceID, "reason", reason)
	return reason, true, nil
}
