package activities

import (
	"context"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Lifetime is a workspace's lifetime deadlines as the workflow sees them:
// zero times do not apply. It carries no secret, so it may go through
// history.
type Lifetime struct {
	ExpiresAt      time.Time `json:",omitempty"`
	IdleDeadline   time.Time `json:",omitempty"`
	LeaseExpiresAt time.Time `json:",omitempty"`
	// Resting is true for an idle or returning member of a warm pool,
	// which never expires: its deadlines start with a lease.
	Resting bool `json:",omitempty"`
	// MaxExpiresAt and ExpireAction say what ExpiresAt does (workflow
	// version vExpirePause): with wire.ExpireActionPause the workspace is
	// paused at an ExpiresAt before MaxExpiresAt, and while paused only
	// MaxExpiresAt deletes it.
	MaxExpiresAt time.Time `json:",omitempty"`
	ExpireAction string    `json:",omitempty"`
}

// PausesAtExpiry reports whether reaching ExpiresAt pauses the workspace
// rather than deleting it: it asked for that, and ExpiresAt is not the
// template's lifetime.max, which deletes whatever was asked.
func (l Lifetime) PausesAtExpiry() bool {
	return l.ExpireAction == wire.ExpireActionPause && !l.ExpiresAt.IsZero() &&
		(l.MaxExpiresAt.IsZero() || l.ExpiresAt.Before(l.MaxExpiresAt))
}

// lifetimeOf returns ws's deadlines.
func lifetimeOf(ws *wire.Workspace) *Lifetime {
	l := &Lifetime{Resting: ws.PoolState == wire.PoolIdle || ws.PoolState == wire.PoolReturning}
	if ws.ExpiresAt != nil {
		l.ExpiresAt = *ws.ExpiresAt
	}
	if ws.IdleDeadline != nil {
		l.IdleDeadline = *ws.IdleDeadline
	}
	if ws.LeaseExpiresAt != nil {
		l.LeaseExpiresAt = *ws.LeaseExpiresAt
	}
	if ws.MaxExpiresAt != nil {
		l.MaxExpiresAt = *ws.MaxExpiresAt
	}
	l.ExpireAction = ws.ExpireAction
	return l
}

// CheckLifetimeInput names the workspace whose deadlines to read.
type CheckLifetimeInput struct {
	WorkspaceID string
}

// CheckLifetimeOutput is the workspace's deadlines as stored; Gone is
// true when its row no longer exists.
type CheckLifetimeOutput struct {
	Lifetime Lifetime
	Gone     bool
	// IdleAction is the template's lifetime.idle_action
	// (backend.IdleActionPause or IdleActionDelete), read only once the
	// idle deadline has passed; empty otherwise.
	IdleAction string `json:",omitempty"`
}

// CheckLifetime reads the workspace's lifetime deadlines. The workflow
// runs it as a local activity when a deadline it learnt from a probe has
// passed, to see whether an extend or activity moved it since.
func (a *Activities) CheckLifetime(ctx context.Context, in CheckLifetimeInput) (CheckLifetimeOutput, error) {
	ws, err := a.Store.GetWorkspace(ctx, in.WorkspaceID)
	if errs.Is(err, errs.NotFound) {
		return CheckLifetimeOutput{Gone: true}, nil
	}
	if err != nil {
		return CheckLifetimeOutput{}, Classify(errs.Within("workspace "+in.WorkspaceID+": check lifetime", err))
	}
	out := CheckLifetimeOutput{Lifetime: *lifetimeOf(ws)}
	if l := out.Lifetime; !l.Resting && !l.IdleDeadline.IsZero() && !time.Now().Before(l.IdleDeadline) {
		// Only then does the workflow need it: the template is not read
		// at every deadline check.
		common, err := TemplateCommon(ctx, a.Store, ws.TemplateID)
		if err != nil {
			// A template that cannot be read keeps the default: delete.
			a.logger().Warn("read idle_action", "workspace_id", ws.ID, "template_id", ws.TemplateID, "error", err)
		} else {
			out.IdleAction = common.IdleAction()
		}
	}
	return out, nil
}

// ExpireLeaseInput names the workspace whose lease ran out.
type ExpireLeaseInput struct {
	WorkspaceID string
}

// ExpireLeaseOutput says whether the lease was taken back: false when the
// workspace is no longer leased (returned meanwhile).
type ExpireLeaseOutput struct {
	TakenBack bool
	// PoolID is the pool the workspace goes back to; empty for a lease
	// that made a new workspace (a cold lease), which is deleted instead.
	PoolID string
}

// ExpireLease takes back a workspace whose lease ran out: a pool member
// moves from leased to returning, as a return through the API does, so
// the workflow resets it and puts it back in its pool; the event
// workspace.lease_expired is recorded either way.
func (a *Activities) ExpireLease(ctx context.Context, in ExpireLeaseInput) (ExpireLeaseOutput, error) {
	out, err := a.expireLease(ctx, in.WorkspaceID)
	if err != nil {
		return ExpireLeaseOutput{}, Classify(err)
	}
	return out, nil
}

func (a *Activities) expireLease(ctx context.Context, id string) (ExpireLeaseOutput, error) {
	ws, err := a.Store.GetWorkspace(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return ExpireLeaseOutput{}, nil
	}
	if err != nil {
		return ExpireLeaseOutput{}, errs.Within("workspace "+id+": expire lease", err)
	}
	out := ExpireLeaseOutput{TakenBack: true, PoolID: ws.PoolID}
	if ws.PoolID != "" {
		err := a.Store.SetPoolState(ctx, id, wire.PoolLeased, wire.PoolReturning)
		if errs.Is(err, errs.Conflict) {
			// Returned (or detached) since the deadline was read.
			return ExpireLeaseOutput{}, nil
		}
		if err != nil {
			return ExpireLeaseOutput{}, errs.Within("workspace "+id+": expire lease", err)
		}
	}
	data := map[string]any{"reason": wire.ReasonLeaseExpired, "pool_id": ws.PoolID}
	if ws.LeaseExpiresAt != nil {
		data["lease_expires_at"] = ws.LeaseExpiresAt.Format(time.RFC3339Nano)
	}
	// The lease is taken back now: a retry would find the workspace
	// returning and not take it back again, so a lost event is only logged.
	if _, err := a.recordEvent(ctx, id, wire.EventLeaseExpired, data); err != nil {
		a.logger().Warn("record lease expiry", "workspace_id", id, "error", err)
	}
	a.logger().Info("workspace lease expired", "workspace_id", id, "pool_id", ws.PoolID)
	return out, nil
}
