package models

import (
	"context"
	"time"

	"github.com/primerhq/primer/wire"
)

// ReasonImplicitReleased is the reason an implicit snapshot is deleted
// with when nothing uses it any more.
const ReasonImplicitReleased = "implicit snapshot of a fork: no workspace or pool uses it any more"

// unusedImplicit selects the implicit snapshots that are done (ready or
// failed) and that no workspace was made from and no pool fills from.
const unusedImplicit = "implicit = ? AND phase IN ? AND " +
	"NOT EXISTS (SELECT 1 FROM workspaces WHERE workspaces.snapshot_id = snapshots.id) AND " +
	"NOT EXISTS (SELECT 1 FROM pools WHERE pools.snapshot_id = snapshots.id)"

// ReleaseImplicitSnapshots marks deleting every implicit snapshot (the
// one a fork takes for its children) created before before that is ready
// or failed and that no workspace row names as its snapshot_id and no pool
// fills from: the fork's last child is gone, so nobody asked to keep it,
// and it would count against max_snapshot_bytes for ever. A snapshot a
// user took is never released, nor one still creating (its children may
// all be deleted while it is taken; it is released once it is done). It
// returns the ids it marked; the caller removes their captures and rows as
// for any deleting snapshot.
//
// The check and the mark are one statement per snapshot, so a workspace
// made from it before the mark keeps it; a create that names it after
// finds it deleting and fails with that reason.
func (s *Store) ReleaseImplicitSnapshots(ctx context.Context, before time.Time) ([]string, error) {
	done := []string{wire.SnapshotReady, wire.SnapshotFailed}
	var ids []string
	err := s.r.WithContext(ctx).Model(&wire.Snapshot{}).
		Where(unusedImplicit, true, done).Where("created_at < ?", storedTime(before)).
		Order("id").Pluck("id", &ids).Error
	if err != nil {
		return nil, dbError(ctx, err, "snapshots: list unused implicit")
	}
	var released []string
	for _, id := range ids {
		res := s.w.WithContext(ctx).Model(&wire.Snapshot{}).Where("id = ?", id).Where(unusedImplicit, true, done).
			Updates(map[string]any{"phase": wire.SnapshotDeleting, "reason": ReasonImplicitReleased})
		if res.Error != nil {
			return released, writeError(ctx, res.Error, "snapshot", id, "release")
		}
		if res.RowsAffected == 1 {
			released = append(released, id)
		}
	}
	return released, nil
}
