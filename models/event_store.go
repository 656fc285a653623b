package models

import (
	"context"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// eventLockClass is the first key of the PostgreSQL advisory lock that
// serialises AppendEvent (see AppendEvent).
const eventLockClass = 0x7072

// AppendEvent stores an event, setting its ID and CreatedAt, and its
// TenantID to its workspace's tenant (tenantOfEvents), so a workspace's
// events stay its tenant's after the row is gone.
//
// IDs come from a sequence, and on PostgreSQL two concurrent inserts can
// commit out of ID order, so a stream resuming after ID 7 could miss an ID 6
// committed later. One advisory lock held until commit makes IDs visible in
// order: per workspace would do for one workspace's stream, but a tenant's
// stream (ListTenantEvents) spans its workspaces, and an admin's spans the
// tenants. The transaction is a lookup and an insert, so the lock is held for
// about a millisecond. SQLite's single writer does the same.
func (s *Store) AppendEvent(ctx context.Context, e *wire.Event) error {
	if e.WorkspaceID == "" {
		return errs.Field("workspace_id", "event: workspace_id is required")
	}
	if e.Type == "" {
		return errs.Field("type", "event: type is required")
	}
	if err := checkJSON("data", "event "+e.Type, e.Data); err != nil {
		return err
	}
	e.ID = 0
	e.CreatedAt = s.w.NowFunc()
	db := s.w.WithContext(ctx)
	var err error
	if s.dialect == DialectPostgres {
		err = db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?, 0)", eventLockClass).Error; err != nil {
				return err
			}
			if err := tenantOfEvent(tx, e); err != nil {
				return err
			}
			if err := tx.Create(e).Error; err != nil {
				return err
			}
			// Delivered at commit to every process that LISTENs.
			return tx.Exec("SELECT pg_notify(?, ?)", s.channel, s.notifyPayload(e)).Error
		})
	} else {
		err = db.Transaction(func(tx *gorm.DB) error {
			if err := tenantOfEvent(tx, e); err != nil {
				return err
			}
			return tx.Create(e).Error
		})
	}
	if err != nil {
		return dbError(ctx, err, "workspace "+e.WorkspaceID+": append event "+e.Type)
	}
	s.announce(e)
	return nil
}

// ListEvents returns a workspace's events with ID > afterID, oldest first, at most limit (0: all).
func (s *Store) ListEvents(ctx context.Context, workspaceID string, afterID uint64, limit int) ([]wire.Event, error) {
	q := s.r.WithContext(ctx).Where("workspace_id = ? AND id > ?", workspaceID, afterID).Order("id")
	if limit > 0 {
		q = q.Limit(limit)
	}
	es := []wire.Event{}
	if err := q.Find(&es).Error; err != nil {
		return nil, dbError(ctx, err, "workspace "+workspaceID+": list events")
	}
	return es, nil
}

// ListTenantEvents returns the events of tenant's workspaces (every
// tenant's when tenant is "") with ID > afterID, oldest first, at most limit
// (0: all). The range is read on the (tenant_id, id) index.
func (s *Store) ListTenantEvents(ctx context.Context, tenant string, afterID uint64, limit int) ([]wire.Event, error) {
	q := s.r.WithContext(ctx).Where("id > ?", afterID)
	if tenant != "" {
		q = q.Where("tenant_id = ?", tenant)
	}
	q = q.Order("id")
	if limit > 0 {
		q = q.Limit(limit)
	}
	es := []wire.Event{}
	if err := q.Find(&es).Error; err != nil {
		return nil, dbError(ctx, err, "tenant "+tenant+": list events")
	}
	return es, nil
}

// LatestEventID returns the ID of tenant's newest event (every tenant's
// when tenant is ""), 0 when there is none: where a stream of what happens
// from now on starts.
func (s *Store) LatestEventID(ctx context.Context, tenant string) (uint64, error) {
	q := s.r.WithContext(ctx).Model(&wire.Event{})
	if tenant != "" {
		q = q.Where("tenant_id = ?", tenant)
	}
	var id *uint64
	if err := q.Select("MAX(id)").Scan(&id).Error; err != nil {
		return 0, dbError(ctx, err, "tenant "+tenant+": latest event")
	}
	if id == nil {
		return 0, nil
	}
	return *id, nil
}

// LatestEvents returns a workspace's newest n events, newest first.
func (s *Store) LatestEvents(ctx context.Context, workspaceID string, n int) ([]wire.Event, error) {
	es := []wire.Event{}
	if err := s.r.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order("id DESC").Limit(n).Find(&es).Error; err != nil {
		return nil, dbError(ctx, err, "workspace "+workspaceID+": latest events")
	}
	return es, nil
}

// tenantOfEvent sets e.TenantID to its workspace's tenant: from the
// workspace row, or once the row is deleted (workspace.destroyed is written
// around then) from the workspace's earlier events. The caller's value is
// kept only when neither exists.
func tenantOfEvent(tx *gorm.DB, e *wire.Event) error {
	var tenants []string
	if err := tx.Model(&wire.Workspace{}).Where("id = ?", e.WorkspaceID).Pluck("tenant_id", &tenants).Error; err != nil {
		return err
	}
	if len(tenants) == 0 {
		err := tx.Model(&wire.Event{}).Where("workspace_id = ?", e.WorkspaceID).Order("id DESC").Limit(1).Pluck("tenant_id", &tenants).Error
		if err != nil {
			return err
		}
	}
	if len(tenants) > 0 {
		e.TenantID = tenants[0]
	}
	return nil
}
