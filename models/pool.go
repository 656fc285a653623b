package models

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// poolStates are the values of Workspace.PoolState for a pool's workspace.
var poolStates = map[string]bool{wire.PoolIdle: true, wire.PoolLeased: true, wire.PoolReturning: true}

// CreatePool inserts p; Conflict if the id exists, NotFound (field
// template_id) if the template does not, Invalid (field size) unless Size is
// 0..MaxPoolSize. Size 0 is stored as DefaultPoolSize. An empty TenantID is
// stored as DefaultTenantID; Exhausted if the tenant already holds its
// max_pools (checked in the insert's transaction, under the tenant's lock).
func (s *Store) CreatePool(ctx context.Context, p *wire.Pool) error {
	if p.ID == "" {
		return errs.Field("id", "pool: id is required")
	}
	if err := checkPool(p); err != nil {
		return err
	}
	p.TenantID = tenantOrDefault(p.TenantID)
	// The tenant first, as in CreateWorkspace: creates in one tenant with
	// a quota take turns, so max_pools holds under concurrency.
	err := s.inQuota(ctx, p.TenantID, func(tx *gorm.DB, q wire.Quota) error {
		if err := checkPoolQuota(tx, p.TenantID, q); err != nil {
			return err
		}
		if err := lockTemplateOf(tx, p); err != nil {
			return err
		}
		if err := lockSnapshotOf(tx, p); err != nil {
			return err
		}
		return tx.Create(p).Error
	})
	return writeError(ctx, err, "pool", p.ID, "create")
}

// GetPool returns the pool; NotFound if absent.
func (s *Store) GetPool(ctx context.Context, id string) (*wire.Pool, error) {
	var p wire.Pool
	if err := s.r.WithContext(ctx).Take(&p, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "pool", id)
	}
	return &p, nil
}

// ListPools returns pools ordered by id, those of templateID only when it
// is not empty, those of tenant only when it is not empty.
func (s *Store) ListPools(ctx context.Context, templateID, tenant string) ([]wire.Pool, error) {
	q := s.r.WithContext(ctx).Order("id")
	if templateID != "" {
		q = q.Where("template_id = ?", templateID)
	}
	if tenant != "" {
		q = q.Where("tenant_id = ?", tenant)
	}
	ps := []wire.Pool{}
	if err := q.Find(&ps).Error; err != nil {
		return nil, dbError(ctx, err, "pools: list")
	}
	return ps, nil
}

// UpdatePool replaces template_id, size, lease_ttl and admin_written of an existing pool, with the
// checks of CreatePool; NotFound if absent. On success p holds the stored row.
func (s *Store) UpdatePool(ctx context.Context, p *wire.Pool) error {
	if err := checkPool(p); err != nil {
		return err
	}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.Pool{}, "pool", p.ID); err != nil {
			return err
		}
		if err := lockTemplateOf(tx, p); err != nil {
			return err
		}
		if err := lockSnapshotOf(tx, p); err != nil {
			return err
		}
		err := tx.Model(&wire.Pool{}).Where("id = ?", p.ID).Updates(map[string]any{
			"template_id":   p.TemplateID,
			"size":          p.Size,
			"lease_ttl":     p.LeaseTTL,
			"snapshot_id":   p.SnapshotID,
			"admin_written": p.AdminWritten,
			"updated_at":    tx.NowFunc(),
		}).Error
		if err != nil {
			return err
		}
		return reload(tx, p, p.ID)
	})
	return writeError(ctx, err, "pool", p.ID, "update")
}

// DeletePool deletes the pool row; NotFound if absent. Its workspaces keep
// their pool_id: the caller detaches the leased ones (DetachPool) and
// destroys the others.
func (s *Store) DeletePool(ctx context.Context, id string) error {
	res := s.w.WithContext(ctx).Delete(&wire.Pool{}, "id = ?", id)
	if res.Error == nil && res.RowsAffected == 0 {
		return notFound("pool", id)
	}
	return writeError(ctx, res.Error, "pool", id, "delete")
}

// LeaseWorkspace takes one idle, running workspace of the pool and marks it
// leased, in one statement, and returns it as stored. It prefers workspaces
// made from the pool template's current generation, then the oldest. It
// returns nil, nil when the pool has no such workspace, and NotFound when the
// pool does not exist.
//
// This is the warm-lease hot path: one UPDATE ... RETURNING whose subquery
// picks the row. On PostgreSQL the subquery takes the row FOR UPDATE SKIP
// LOCKED, so concurrent leases pick different rows instead of queueing on,
// or both getting, the same one; SQLite runs the statement under its single
// writer lock, which gives the same guarantee.
func (s *Store) LeaseWorkspace(ctx context.Context, poolID string) (*wire.Workspace, error) {
	return s.LeaseWorkspaceLabelled(ctx, poolID, nil)
}

// LeaseWorkspaceLabelled is LeaseWorkspace that also sets the leased
// workspace's labels (replacing its own) in the same statement, so the
// lessee's mark (an eval run's labels) can never be missing from a
// workspace it leased, whatever happens to the caller in between. Nil
// labels leave them as they are.
func (s *Store) LeaseWorkspaceLabelled(ctx context.Context, poolID string, labels map[string]string) (*wire.Workspace, error) {
	cols := map[string]any{"pool_state": wire.PoolLeased}
	if labels != nil {
		raw, err := json.Marshal(labels)
		if err != nil {
			return nil, errs.E(errs.Invalid, "pool %s: lease workspace: labels: %w", poolID, err)
		}
		cols["labels"] = string(raw)
	}
	db := s.w.WithContext(ctx)
	cols["updated_at"] = db.NowFunc()
	// Fresh ones first (made from the pool's template at its current
	// generation), then the oldest. One expression: GORM drops an ORDER BY
	// expression when more columns are added after it.
	order := clause.Expr{SQL: `CASE WHEN EXISTS (SELECT 1 FROM pools p JOIN templates t ON t.id = p.template_id
		WHERE p.id = ? AND t.id = workspaces.template_id AND t.generation = workspaces.template_generation) THEN 0 ELSE 1 END,
		created_at, id`, Vars: []any{poolID}, WithoutParentheses: true}
	pick := db.Session(&gorm.Session{NewDB: true}).Model(&wire.Workspace{}).Select("id").
		Where("pool_id = ? AND pool_state = ? AND phase = ?", poolID, wire.PoolIdle, wire.PhaseRunning).
		Order(clause.OrderBy{Expression: order}).Limit(1)
	if s.dialect == DialectPostgres {
		pick = pick.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
	}
	var got []wire.Workspace
	err := db.Model(&got).Clauses(clause.Returning{}).
		Where("id = (?)", pick).Where("pool_state = ?", wire.PoolIdle).
		Updates(cols).Error
	if err != nil {
		return nil, dbError(ctx, err, "pool "+poolID+": lease workspace")
	}
	if len(got) > 0 {
		return &got[0], nil
	}
	// Nothing to lease: only now is it worth telling a missing pool apart.
	var ids []string
	if err := s.r.WithContext(ctx).Model(&wire.Pool{}).Where("id = ?", poolID).Pluck("id", &ids).Error; err != nil {
		return nil, dbError(ctx, err, "pool "+poolID+": lease workspace")
	}
	if len(ids) == 0 {
		return nil, notFound("pool", poolID)
	}
	return nil, nil
}

// SetPoolState moves a workspace's pool state from from to to, only if it is
// from now: Conflict, naming the current state, if it is not; NotFound if
// the workspace does not exist; Invalid (field pool_state) if either state is
// not "", idle, leased or returning.
func (s *Store) SetPoolState(ctx context.Context, workspaceID, from, to string) error {
	for _, st := range []string{from, to} {
		if st != "" && !poolStates[st] {
			return errs.Field("pool_state", "workspace %s: unknown pool state %q", workspaceID, st)
		}
	}
	db := s.w.WithContext(ctx)
	cols := map[string]any{"pool_state": to, "updated_at": db.NowFunc()}
	if to == wire.PoolIdle {
		// Idle members never expire: their deadlines start with the next lease.
		maps.Copy(cols, deadlineColumns(wire.Deadlines{}))
	}
	res := db.Model(&wire.Workspace{}).Where("id = ? AND pool_state = ?", workspaceID, from).Updates(cols)
	if res.Error != nil {
		return writeError(ctx, res.Error, "workspace", workspaceID, "set pool state")
	}
	if res.RowsAffected > 0 {
		if to != wire.PoolLeased {
			return s.revokeWorkspacePreviews(ctx, workspaceID)
		}
		return nil
	}
	var states []string
	if err := db.Model(&wire.Workspace{}).Where("id = ?", workspaceID).Pluck("pool_state", &states).Error; err != nil {
		return dbError(ctx, err, "workspace "+workspaceID+": set pool state")
	}
	if len(states) == 0 {
		return notFound("workspace", workspaceID)
	}
	return errs.E(errs.Conflict, "workspace %s: pool state is %q, not %q", workspaceID, states[0], from)
}

// DetachPool takes the pool's leased and returning workspaces out of it
// (empty pool_id and pool_state), so they stay with their lessee when the
// pool is deleted. Idle workspaces are left in the pool for the caller to
// destroy. An unknown pool has none to detach: nil.
func (s *Store) DetachPool(ctx context.Context, poolID string) error {
	db := s.w.WithContext(ctx)
	err := db.Model(&wire.Workspace{}).Where("pool_id = ? AND pool_state IN ?", poolID, []string{wire.PoolLeased, wire.PoolReturning}).
		Updates(map[string]any{"pool_id": "", "pool_state": "", "updated_at": db.NowFunc()}).Error
	if err != nil {
		return dbError(ctx, err, "pool "+poolID+": detach")
	}
	return nil
}

// checkPool validates the fields of p a caller sets and fills Size 0 with
// DefaultPoolSize.
func checkPool(p *wire.Pool) error {
	if p.TemplateID == "" {
		return errs.Field("template_id", "pool %s: template_id is required", p.ID)
	}
	if p.Size < 0 || p.Size > wire.MaxPoolSize {
		return errs.Field("size", "pool %s: size %d: want 0 (default %d) to %d", p.ID, p.Size, wire.DefaultPoolSize, wire.MaxPoolSize)
	}
	if p.LeaseTTL != "" {
		if d, err := time.ParseDuration(p.LeaseTTL); err != nil || d <= 0 {
			return errs.Field("lease_ttl", "pool %s: lease_ttl %q: want a duration above 0 (like \"30m\")", p.ID, p.LeaseTTL)
		}
	}
	if p.Size == 0 {
		p.Size = wire.DefaultPoolSize
	}
	return nil
}

// lockTemplateOf locks p's template against deletion for the rest of tx;
// NotFound (field template_id) if it does not exist.
// lockSnapshotOf locks the snapshot p fills from (if any) against a
// concurrent MarkSnapshotDeleting and refuses one being deleted: NotFound
// or Conflict, naming the field snapshot_id.
func lockSnapshotOf(tx *gorm.DB, p *wire.Pool) error {
	if p.SnapshotID == "" {
		return nil
	}
	var phases []string
	if err := tx.Model(&wire.Snapshot{}).Clauses(forShare).Where("id = ?", p.SnapshotID).Pluck("phase", &phases).Error; err != nil {
		return err
	}
	switch {
	case len(phases) == 0:
		return &errs.Error{Kind: errs.NotFound, Field: "snapshot_id",
			Msg: fmt.Sprintf("pool %s: snapshot %s: not found", p.ID, p.SnapshotID)}
	case phases[0] == wire.SnapshotDeleting:
		return &errs.Error{Kind: errs.Conflict, Field: "snapshot_id",
			Msg: fmt.Sprintf("pool %s: snapshot %s is being deleted", p.ID, p.SnapshotID)}
	}
	return nil
}

func lockTemplateOf(tx *gorm.DB, p *wire.Pool) error {
	err := lockRow(tx, forShare, &wire.Template{}, "template", p.TemplateID)
	if errs.Is(err, errs.NotFound) {
		return &errs.Error{Kind: errs.NotFound, Field: "template_id",
			Msg: fmt.Sprintf("pool %s: template %s: not found", p.ID, p.TemplateID)}
	}
	return err
}
