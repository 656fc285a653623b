package models

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// CreateWorkspace inserts w; Conflict if the id exists. An empty ID is
// filled with NewID("ws"). The store does not check the template exists (the
// API resolves it first), but it locks the template row so a concurrent
// DeleteTemplate sees the new workspace, and sets w.TemplateGeneration to the
// template's current Generation (0 when there is no such template).
//
// PoolID and PoolState are stored as given: both empty, or a pool that
// exists (NotFound, field pool_id, if not) and one of the pool states
// (Invalid, field pool_state, if not).
//
// An empty TenantID is stored as DefaultTenantID. The tenant's quota is
// checked in the same transaction as the insert, under a lock on the tenant
// row: Exhausted when the workspace would pass max_workspaces,
// max_cpu_cores or max_memory_bytes, Invalid when the tenant limits CPU or
// memory and the workspace has no such limit (quota.go).
func (s *Store) CreateWorkspace(ctx context.Context, w *wire.Workspace) error {
	if w.ID == "" {
		w.ID = NewID("ws")
	}
	if err := checkJSON("handle", "workspace "+w.ID, w.Handle); err != nil {
		return err
	}
	switch {
	case w.PoolID == "" && w.PoolState != "":
		return errs.Field("pool_state", "workspace %s: pool_state %q without a pool_id", w.ID, w.PoolState)
	case w.PoolID != "" && !poolStates[w.PoolState]:
		return errs.Field("pool_state", "workspace %s: pool_state %q: want %s, %s or %s", w.ID, w.PoolState, wire.PoolIdle, wire.PoolLeased, wire.PoolReturning)
	}
	if w.CreatedAt.IsZero() {
		// Set here, as stored, so the caller's copy equals what a read returns.
		w.CreatedAt = storedTime(time.Now())
	}
	if w.UpdatedAt.IsZero() {
		w.UpdatedAt = w.CreatedAt
	}
	w.CreatedAt, w.UpdatedAt = storedTime(w.CreatedAt), storedTime(w.UpdatedAt)
	w.TenantID = tenantOrDefault(w.TenantID)
	// The tenant first (inQuota): a create in a tenant with a quota takes
	// its lock before any other, so two creates cannot both see room for
	// one more.
	err := s.inQuota(ctx, w.TenantID, func(tx *gorm.DB, q wire.Quota) error {
		if err := checkWorkspaceQuota(tx, w.TenantID, q, w); err != nil {
			return err
		}
		var gens []int64
		err := tx.Model(&wire.Template{}).Clauses(forShare).Where("id = ?", w.TemplateID).Pluck("generation", &gens).Error
		if err != nil {
			return err
		}
		w.TemplateGeneration = 0
		if len(gens) > 0 {
			w.TemplateGeneration = gens[0]
		}
		if w.PoolID != "" {
			// FOR SHARE: a concurrent DeletePool waits for this workspace.
			err := lockRow(tx, forShare, &wire.Pool{}, "pool", w.PoolID)
			if errs.Is(err, errs.NotFound) {
				return &errs.Error{Kind: errs.NotFound, Field: "pool_id",
					Msg: fmt.Sprintf("workspace %s: pool %s: not found", w.ID, w.PoolID)}
			}
			if err != nil {
				return err
			}
		}
		return tx.Create(w).Error
	})
	return writeError(ctx, err, "workspace", w.ID, "create")
}

// GetWorkspace returns the workspace; NotFound if absent.
func (s *Store) GetWorkspace(ctx context.Context, id string) (*wire.Workspace, error) {
	var w wire.Workspace
	if err := s.r.WithContext(ctx).Take(&w, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "workspace", id)
	}
	return &w, nil
}

// ListWorkspaces returns workspaces matching f, newest first.
func (s *Store) ListWorkspaces(ctx context.Context, f WorkspaceFilter) ([]wire.Workspace, error) {
	q := s.r.WithContext(ctx).Order("created_at DESC").Order("id DESC")
	for _, c := range []struct{ col, v string }{
		{"tenant_id", f.TenantID},
		{"template_id", f.TemplateID},
		{"provider_id", f.ProviderID},
		{"backend", f.Backend},
		{"phase", f.Phase},
		{"pool_id", f.PoolID},
		{"pool_state", f.PoolState},
	} {
		if c.v != "" {
			q = q.Where(c.col+" = ?", c.v)
		}
	}
	if f.Limit > 0 {
		q = q.Limit(f.Limit)
	}
	ws := []wire.Workspace{}
	if err := q.Find(&ws).Error; err != nil {
		return nil, dbError(ctx, err, "workspaces: list")
	}
	return ws, nil
}

// validPhases are the phases SetWorkspacePhase accepts.
var validPhases = map[string]bool{
	wire.PhasePending: true, wire.PhaseRunning: true, wire.PhaseFailed: true, wire.PhaseTerminating: true, wire.PhaseEscalated: true, wire.PhasePaused: true,
}

// SetWorkspacePhase sets phase and reason; NotFound if absent, Invalid (field
// phase) for a phase DESIGN.md does not name.
func (s *Store) SetWorkspacePhase(ctx context.Context, id, phase, reason string) error {
	if !validPhases[phase] {
		return errs.Field("phase", "workspace %s: unknown phase %q", id, phase)
	}
	return s.updateWorkspace(ctx, id, "set phase", map[string]any{"phase": phase, "reason": reason})
}

// SetWorkspaceRuntime stores the backend handle, path and runtime token;
// NotFound if absent, Invalid (field handle) if handle is not JSON.
func (s *Store) SetWorkspaceRuntime(ctx context.Context, id string, handle []byte, path, token string) error {
	if err := checkJSON("handle", "workspace "+id, handle); err != nil {
		return err
	}
	return s.updateWorkspace(ctx, id, "set runtime", map[string]any{
		"handle":        jsonColumn(handle),
		"path":          path,
		"runtime_token": token,
	})
}

// SetWorkspaceLabels replaces a workspace's labels (a warm lease labels the
// workspace for its lessee); NotFound if absent.
func (s *Store) SetWorkspaceLabels(ctx context.Context, id string, labels map[string]string) error {
	raw, err := json.Marshal(labels)
	if err != nil {
		return errs.E(errs.Invalid, "workspace %s: labels: %w", id, err)
	}
	return s.updateWorkspace(ctx, id, "set labels", map[string]any{"labels": string(raw)})
}

// SetWorkspaceEnv replaces a workspace's own environment (a warm create
// gives the taken member its creator's env); NotFound if absent. The
// error never holds a value.
func (s *Store) SetWorkspaceEnv(ctx context.Context, id string, env map[string]string) error {
	raw, err := json.Marshal(env)
	if err != nil {
		return errs.E(errs.Invalid, "workspace %s: env: not encodable", id)
	}
	return s.updateWorkspace(ctx, id, "set env", map[string]any{"env": string(raw)})
}

// SetWorkspaceEgress records a workspace's own egress (a warm create on a
// template that closes its network already); NotFound if absent.
func (s *Store) SetWorkspaceEgress(ctx context.Context, id, egress string) error {
	return s.updateWorkspace(ctx, id, "set egress", map[string]any{"egress": egress})
}

// SetWorkspaceExpireAction records what a workspace's expiry does (a warm
// create on a pool member asking for wire.ExpireActionPause).
func (s *Store) SetWorkspaceExpireAction(ctx context.Context, id, action string) error {
	return s.updateWorkspace(ctx, id, "set expire action", map[string]any{"expire_action": action})
}

// updateWorkspace sets cols (and updated_at) on workspace id; NotFound if absent.
func (s *Store) updateWorkspace(ctx context.Context, id, action string, cols map[string]any) error {
	db := s.w.WithContext(ctx)
	cols["updated_at"] = db.NowFunc()
	res := db.Model(&wire.Workspace{}).Where("id = ?", id).Updates(cols)
	if res.Error == nil && res.RowsAffected == 0 {
		return notFound("workspace", id)
	}
	return writeError(ctx, res.Error, "workspace", id, action)
}

// DeleteWorkspace removes the workspace row; its open sessions end with
// reason workspace_deleted in the same transaction. NotFound if absent.
// Its events stay, so a stream can still show how it ended.
func (s *Store) DeleteWorkspace(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.Workspace{}, "workspace", id); err != nil {
			return err
		}
		if _, err := endSessions(tx, "workspace_id = ?", id, wire.ReasonWorkspaceDeleted); err != nil {
			return err
		}
		// Its preview links die with it (an id is never reused, but a
		// link must not outlive what it opened).
		if err := tx.Delete(&wire.Preview{}, "workspace_id = ?", id).Error; err != nil {
			return err
		}
		if err := tx.Delete(&wire.Workspace{}, "id = ?", id).Error; err != nil {
			return err
		}
		// Its event streams end once they see the row gone.
		return s.notifyGone(tx, id)
	})
	if err == nil {
		s.hub.wake(0, workspaceTopic(id))
	}
	return writeError(ctx, err, "workspace", id, "delete")
}
