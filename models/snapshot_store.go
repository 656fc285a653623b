package models

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// SnapshotFilter selects snapshots; empty fields match all.
type SnapshotFilter struct {
	TenantID    string
	WorkspaceID string
	Phase       string
}

// CreateSnapshot inserts s in phase creating (its ID, TenantID,
// WorkspaceID, TemplateID, ProviderID, Backend and Mode set by the caller).
// Conflict if the id exists; Exhausted when the tenant's snapshots already
// fill its max_snapshot_bytes (checked under the tenant's lock, as
// CreateWorkspace checks max_workspaces): a capture's size is known only
// once it is taken, so the quota refuses new captures once the ready ones
// reach it.
func (s *Store) CreateSnapshot(ctx context.Context, snap *wire.Snapshot) error {
	if snap.ID == "" {
		return errs.Field("id", "snapshot: id is required")
	}
	snap.TenantID = tenantOrDefault(snap.TenantID)
	snap.Phase, snap.Reason, snap.Bytes, snap.ReadyAt = wire.SnapshotCreating, "", 0, nil
	err := s.inQuota(ctx, snap.TenantID, func(tx *gorm.DB, q wire.Quota) error {
		if err := checkSnapshotQuota(tx, snap.TenantID, q); err != nil {
			return err
		}
		return tx.Create(snap).Error
	})
	return writeError(ctx, err, "snapshot", snap.ID, "create")
}

// checkSnapshotQuota refuses a new capture when tenantID's snapshots
// already hold max_snapshot_bytes.
func checkSnapshotQuota(tx *gorm.DB, tenantID string, q wire.Quota) error {
	if q.MaxSnapshotBytes <= 0 {
		return nil
	}
	used, err := snapshotBytes(tx, tenantID)
	if err != nil {
		return err
	}
	if used >= q.MaxSnapshotBytes {
		return exhausted(tenantID, "max_snapshot_bytes", strconv.FormatInt(q.MaxSnapshotBytes, 10), strconv.FormatInt(used, 10), "")
	}
	return nil
}

// snapshotBytes sums the sizes of tenantID's snapshots.
func snapshotBytes(db *gorm.DB, tenantID string) (int64, error) {
	var n int64
	err := db.Model(&wire.Snapshot{}).Where("tenant_id = ?", tenantID).
		Select("coalesce(sum(bytes), 0)").Scan(&n).Error
	return n, err
}

// GetSnapshot returns the snapshot; NotFound if absent.
func (s *Store) GetSnapshot(ctx context.Context, id string) (*wire.Snapshot, error) {
	var snap wire.Snapshot
	if err := s.r.WithContext(ctx).Take(&snap, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "snapshot", id)
	}
	return &snap, nil
}

// ListSnapshots returns the snapshots matching f, newest first.
func (s *Store) ListSnapshots(ctx context.Context, f SnapshotFilter) ([]wire.Snapshot, error) {
	q := s.r.WithContext(ctx).Order("created_at DESC").Order("id DESC")
	for _, c := range []struct{ col, v string }{
		{"tenant_id", f.TenantID},
		{"workspace_id", f.WorkspaceID},
		{"phase", f.Phase},
	} {
		if c.v != "" {
			q = q.Where(c.col+" = ?", c.v)
		}
	}
	snaps := []wire.Snapshot{}
	if err := q.Find(&snaps).Error; err != nil {
		return nil, dbError(ctx, err, "snapshots: list")
	}
	return snaps, nil
}

// SetSnapshotReady records a complete capture: its backend reference (a
// backend.SnapshotRef as JSON) and size. Only a snapshot still creating
// becomes ready: Conflict otherwise (one deleted or failed meanwhile keeps
// its phase, and the caller removes the capture it made). NotFound if
// absent.
func (s *Store) SetSnapshotReady(ctx context.Context, id string, ref json.RawMessage, bytes int64) error {
	if !json.Valid(ref) {
		return errs.Field("ref", "snapshot %s: ref is not JSON", id)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	return s.moveSnapshot(ctx, id, "set ready", wire.SnapshotCreating, map[string]any{
		"phase": wire.SnapshotReady, "reason": "", "ref": string(ref), "bytes": bytes, "ready_at": now,
	})
}

// SetSnapshotFailed records why a capture could not be taken. Only a
// snapshot still creating fails: Conflict otherwise. NotFound if absent.
func (s *Store) SetSnapshotFailed(ctx context.Context, id, reason string) error {
	return s.moveSnapshot(ctx, id, "set failed", wire.SnapshotCreating, map[string]any{
		"phase": wire.SnapshotFailed, "reason": reason,
	})
}

// poolsFillingFrom refuses (Conflict) while pools fill from snapshot id.
// The message names the pools of the snapshot's own tenant, whose members
// may delete it; a pool of another tenant (an admin may make one from any
// snapshot) is only counted, so its id never reaches those members.
func poolsFillingFrom(tx *gorm.DB, id string) error {
	var snap wire.Snapshot
	if err := tx.Select("tenant_id").Where("id = ?", id).Take(&snap).Error; err != nil {
		return err
	}
	var pools []wire.Pool
	if err := tx.Select("id", "tenant_id").Where("snapshot_id = ?", id).Order("id").Find(&pools).Error; err != nil {
		return err
	}
	var own []string
	for _, p := range pools {
		if p.TenantID == snap.TenantID {
			own = append(own, p.ID)
		}
	}
	other := ""
	switch n := len(pools) - len(own); {
	case n == 1:
		other = "1 pool of another tenant"
	case n > 1:
		other = fmt.Sprintf("%d pools of another tenant", n)
	}
	switch {
	case len(pools) == 0:
		return nil
	case len(own) == 0 && len(pools) == 1:
		return errs.E(errs.Conflict, "snapshot %s: %s fills from it; an admin must delete it or change its snapshot_id first", id, other)
	case len(own) == 0:
		return errs.E(errs.Conflict, "snapshot %s: %s fill from it; an admin must delete them or change their snapshot_id first", id, other)
	case len(pools) == 1:
		return errs.E(errs.Conflict, "snapshot %s: pool %s fills from it; delete the pool or change its snapshot_id first", id, own[0])
	case other != "":
		return errs.E(errs.Conflict, "snapshot %s: pools %s and %s fill from it; delete them or change their snapshot_id first",
			id, strings.Join(own, ", "), other)
	default:
		return errs.E(errs.Conflict, "snapshot %s: pools %s fill from it; delete them or change their snapshot_id first",
			id, strings.Join(own, ", "))
	}
}

// MarkSnapshotDeleting moves a snapshot to phase deleting (from any phase)
// and returns it as it now is; the capture is removed from its backend
// after (DeleteSnapshot removes the row once it is). NotFound if absent;
// Conflict, naming them, while pools fill from it: deleting it would leave
// them unable to make a member. The snapshot's row is locked for the check
// and the mark, and CreatePool and UpdatePool lock it too (lockSnapshotOf),
// so a pool made meanwhile is either seen here or refused there.
func (s *Store) MarkSnapshotDeleting(ctx context.Context, id, reason string) (*wire.Snapshot, error) {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.Snapshot{}, "snapshot", id); err != nil {
			return err
		}
		if err := poolsFillingFrom(tx, id); err != nil {
			return err
		}
		return tx.Model(&wire.Snapshot{}).Where("id = ?", id).
			Updates(map[string]any{"phase": wire.SnapshotDeleting, "reason": reason}).Error
	})
	if err != nil {
		return nil, writeError(ctx, err, "snapshot", id, "mark deleting")
	}
	return s.GetSnapshot(ctx, id)
}

// SetSnapshotSignalled records that the source workspace's workflow was
// asked to take snapshot id. NotFound if absent.
func (s *Store) SetSnapshotSignalled(ctx context.Context, id string) error {
	res := s.w.WithContext(ctx).Model(&wire.Snapshot{}).Where("id = ?", id).Update("signalled", true)
	if res.Error != nil {
		return writeError(ctx, res.Error, "snapshot", id, "set signalled")
	}
	if res.RowsAffected == 0 {
		return errs.E(errs.NotFound, "snapshot %s: not found", id)
	}
	return nil
}

// DeleteSnapshot removes the snapshot's row; NotFound if absent.
func (s *Store) DeleteSnapshot(ctx context.Context, id string) error {
	res := s.w.WithContext(ctx).Delete(&wire.Snapshot{}, "id = ?", id)
	if res.Error != nil {
		return writeError(ctx, res.Error, "snapshot", id, "delete")
	}
	if res.RowsAffected == 0 {
		return errs.E(errs.NotFound, "snapshot %s: not found", id)
	}
	return nil
}

// moveSnapshot applies cols to snapshot id if it is in phase from:
// NotFound if absent, Conflict (naming its phase) if it is in another.
func (s *Store) moveSnapshot(ctx context.Context, id, action, from string, cols map[string]any) error {
	res := s.w.WithContext(ctx).Model(&wire.Snapshot{}).Where("id = ? AND phase = ?", id, from).Updates(cols)
	if res.Error != nil {
		return writeError(ctx, res.Error, "snapshot", id, action)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	snap, err := s.GetSnapshot(ctx, id)
	if err != nil {
		return err
	}
	return errs.E(errs.Conflict, "snapshot %s: %s: it is %s, not %s", id, action, snap.Phase, from)
}
