package activities

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// Lifecycle creates and deletes workspaces the way the API does: a row
// and its workflow. The pool activities use it; the workflows package
// implements it (starter.Starter), since activities cannot import the
// workflows that call them.
type Lifecycle interface {
	// CreateWorkspace stores a workspace and starts its workflow.
	CreateWorkspace(ctx context.Context, req CreateWorkspaceRequest) (*wire.Workspace, error)
	// DeleteWorkspace asks the workspace's workflow to destroy it.
	DeleteWorkspace(ctx context.Context, w *wire.Workspace, reason string) error
	// NotifyPool wakes a pool's workflow.
	NotifyPool(ctx context.Context, poolID string) error
	// ReturnWorkspace gives a leased pool workspace (pool state already
	// returning) back to its workflow, which resets it and puts it back
	// in the pool, or replaces it.
	ReturnWorkspace(ctx context.Context, w *wire.Workspace) error
	// AdoptWorkspace starts the workflow of a pending, never provisioned
	// workspace whose create stopped between storing its row and starting
	// its workflow; true if it started one.
	AdoptWorkspace(ctx context.Context, w *wire.Workspace) (bool, error)
	// SignalSnapshot asks workspace w's workflow to take snapshot snap,
	// stored creating, and records that it was asked (Signalled). Asking
	// twice is harmless: a snapshot already taken is not taken again.
	SignalSnapshot(ctx context.Context, w *wire.Workspace, snap *wire.Snapshot) error
}

// CreateWorkspaceRequest is a workspace to create.
type CreateWorkspaceRequest struct {
	// TenantID owns the new workspace: the caller's tenant, a pool's or a
	// run's. Its quotas apply. Empty means models.DefaultTenantID.
	TenantID   string
	TemplateID string
	Labels     map[string]string
	// PoolID makes the workspace an idle member of that pool.
	PoolID string
	// TTL, when set, is how long the workspace lives, at most the
	// template's lifetime.max; zero means lifetime.max (if any).
	TTL time.Duration
	// LeaseTTL, when set, makes the workspace a lease that is taken back
	// (deleted, as it belongs to no pool) after it unless extended.
	LeaseTTL time.Duration
	// Env is the workspace's own environment (wire.Workspace.Env).
	Env map[string]string
	// Egress is the workspace's own egress (wire.Workspace.Egress): empty
	// or deny_all.
	Egress string
	// ExpireAction is the workspace's wire.Workspace.ExpireAction: empty
	// (delete) or wire.ExpireActionPause.
	ExpireAction string
	// ByAdmin says the workspace is made on an admin's authority: an
	// admin's request, or a pool or suite whose last write was an admin's
	// (Workspace.ByAdmin). Only such a workspace may run on a host backend
	// or be made from another tenant's template (host_rule.go).
	ByAdmin bool
	// SnapshotID starts the workspace from that snapshot (a create with
	// snapshot_id, a pool filled from one): its row carries it and its
	// provision waits for the snapshot to be ready.
	SnapshotID string
}

// ReconcilePoolInput names the pool to look at.
type ReconcilePoolInput struct {
	PoolID string
}

// ReconcilePoolOutput is what one pass found and did.
type ReconcilePoolOutput struct {
	// Gone is true when the pool no longer exists: its idle workspaces were
	// deleted and its leased ones left to their lessees.
	Gone bool
	// Idle counts idle members made from the current template (running or
	// still starting); Stale those made from an older one; Leased the
	// members out with a lessee or being returned, which count toward the
	// pool's size like idle ones.
	Idle, Stale, Leased int
	// Created and Removed count the workspaces this pass created and deleted.
	Created, Removed int
}

// ReconcilePool is one pass of a pool's workflow. A pool of size Size
// holds Size workspaces, idle or leased: members out with a lessee or
// being returned count toward the size, so a lease does not make the pool
// create one and the return that follows does not make it delete one (a
// lease/return loop would otherwise cost a create and a delete per lease).
// The pass creates the missing members, deletes idle ones that failed (a
// warm pool hands out only working workspaces) or are too many (only idle
// ones: a leased member is its lessee's until it comes back), and replaces
// idle ones made from an older version of the template one at a time: one
// new workspace is made, and only when every new one runs is one old one
// deleted, so the pool never has fewer ready to lease than it holds at
// rest (Size minus those leased) while it rolls over.
func (a *Activities) ReconcilePool(ctx context.Context, in ReconcilePoolInput) (ReconcilePoolOutput, error) {
	out, err := a.reconcilePool(ctx, in.PoolID)
	if err != nil {
		return ReconcilePoolOutput{}, Classify(err)
	}
	return out, nil
}

func (a *Activities) reconcilePool(ctx context.Context, poolID string) (ReconcilePoolOutput, error) {
	var out ReconcilePoolOutput
	if a.Lifecycle == nil {
		return out, errs.E(errs.Invalid, "pool %s: no lifecycle configured", poolID)
	}
	members, err := a.Store.ListWorkspaces(ctx, models.WorkspaceFilter{PoolID: poolID})
	if err != nil {
		return out, fmt.Errorf("pool %s: list workspaces: %w", poolID, err)
	}
	// Oldest first: stale and surplus workspaces go in creation order.
	sort.SliceStable(members, func(i, j int) bool { return members[i].CreatedAt.Before(members[j].CreatedAt) })

	p, err := a.Store.GetPool(ctx, poolID)
	if errs.Is(err, errs.NotFound) {
		out.Gone = true
		for i := range members {
			if members[i].PoolState == wire.PoolIdle && members[i].Phase != wire.PhaseTerminating {
				if err := a.Lifecycle.DeleteWorkspace(ctx, &members[i], "pool "+poolID+" deleted"); err != nil {
					return out, err
				}
				out.Removed++
			}
		}
		if err := a.Store.DetachPool(ctx, poolID); err != nil {
			return out, fmt.Errorf("pool %s: detach leased workspaces: %w", poolID, err)
		}
		a.logger().Info("pool deleted", "pool_id", poolID, "removed", out.Removed)
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("pool %s: %w", poolID, err)
	}
	tmpl, err := a.Store.GetTemplate(ctx, p.TemplateID)
	if err != nil {
		return out, fmt.Errorf("pool %s: template %s: %w", poolID, p.TemplateID, err)
	}

	var fresh, stale, broken []*wire.Workspace
	freshReady := 0
	for i := range members {
		m := &members[i]
		switch {
		case m.Phase == wire.PhaseTerminating:
			// On its way out, idle or leased (its lessee deleted it):
			// not counted, so the pool replaces it.
		case m.PoolState != wire.PoolIdle:
			// Leased or being returned: part of the pool, not ours to
			// delete. One that fails while leased is its lessee's to
			// recover, return (a failed reset deletes it) or delete.
			out.Leased++
		case m.Phase == wire.PhaseFailed || m.Phase == wire.PhaseEscalated:
			broken = append(broken, m)
		case m.TemplateID != p.TemplateID || m.TemplateGeneration != tmpl.Generation:
			stale = append(stale, m)
		default:
			fresh = append(fresh, m)
			if m.Phase == wire.PhaseRunning {
				freshReady++
			}
		}
	}
	out.Idle, out.Stale = len(fresh), len(stale)

	var remove []*wire.Workspace
	remove = append(remove, broken...)
	held := len(fresh) + len(stale) + out.Leased
	create := max(0, p.Size-held)
	switch {
	case len(stale) > 0 && create == 0 && freshReady == len(fresh):
		// Roll over: past the size (after a surge, or a size cut) an old
		// one goes; at the size one new one is made first.
		if held > p.Size {
			remove = append(remove, stale[0])
		} else {
			create = 1
		}
	case len(stale) == 0 && held > p.Size:
		// Too many (the size went down): the newest idle ones go, those
		// still starting first. Leased members count but stay; they are
		// removed when they come back idle, if still too many.
		surplus := held - p.Size
		for i := len(fresh) - 1; i >= 0 && surplus > 0; i-- {
			if fresh[i].Phase != wire.PhaseRunning {
				remove = append(remove, fresh[i])
				surplus--
			}
		}
		for i := len(fresh) - 1; i >= 0 && surplus > 0; i-- {
			if fresh[i].Phase == wire.PhaseRunning {
				remove = append(remove, fresh[i])
				surplus--
			}
		}
	}

	for _, m := range remove {
		reason := fmt.Sprintf("pool %s: replaced (%s)", poolID, m.Phase)
		if m.TemplateGeneration != tmpl.Generation || m.TemplateID != p.TemplateID {
			reason = fmt.Sprintf("pool %s: replaced by one from the current template", poolID)
		}
		if err := a.Lifecycle.DeleteWorkspace(ctx, m, reason); err != nil {
			return out, err
		}
		out.Removed++
	}
	for range create {
		_, err := a.Lifecycle.CreateWorkspace(ctx, CreateWorkspaceRequest{TenantID: p.TenantID, TemplateID: p.TemplateID, PoolID: poolID,
			ByAdmin: p.AdminWritten, SnapshotID: p.SnapshotID})
		if errs.Is(err, errs.Exhausted) {
			// The tenant's quota is full: the pool stays short until
			// something of the tenant goes. One warning per pass, and the
			// pass succeeds, so the next one (on the interval, or the
			// signal of a delete) tries again without a retry storm.
			a.logger().Warn("pool short: tenant quota reached", "pool_id", poolID, "tenant_id", p.TenantID,
				"missing", create-out.Created, "error", err.Error())
			break
		}
		if err != nil {
			return out, fmt.Errorf("pool %s: create workspace: %w", poolID, err)
		}
		out.Created++
	}
	if out.Created > 0 || out.Removed > 0 {
		a.logger().Info("pool replenished", "pool_id", poolID, "idle", out.Idle, "stale", out.Stale,
			"leased", out.Leased, "created", out.Created, "removed", out.Removed)
	}
	return out, nil
}
