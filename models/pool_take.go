package models

import (
	"context"
	"encoding/json"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// TakeWorkspace takes one idle, running workspace of the pool out of it for
// good, in one statement: its pool_id and pool_state are cleared and its
// labels set to labels, and it is returned as stored. This is a warm create:
// the workspace becomes a plain one, the pool counts one member fewer and
// makes a new one. Only workspaces made from the pool template's current
// generation are taken, so a create never gets an older recipe than the one
// asked for; the oldest is taken first. It returns nil, nil when the pool has
// no such workspace or does not exist.
//
// Like LeaseWorkspace it is one UPDATE ... RETURNING whose subquery picks the
// row, FOR UPDATE SKIP LOCKED on PostgreSQL, so concurrent takes and leases
// get different workspaces; SQLite runs it under its single writer lock.
func (s *Store) TakeWorkspace(ctx context.Context, poolID string, labels map[string]string) (*wire.Workspace, error) {
	raw, err := json.Marshal(labels)
	if err != nil {
		return nil, errs.E(errs.Invalid, "pool %s: take workspace: labels: %w", poolID, err)
	}
	db := s.w.WithContext(ctx)
	pick := db.Session(&gorm.Session{NewDB: true}).Model(&wire.Workspace{}).Select("id").
		Where("pool_id = ? AND pool_state = ? AND phase = ?", poolID, wire.PoolIdle, wire.PhaseRunning).
		Where(`EXISTS (SELECT 1 FROM pools p JOIN templates t ON t.id = p.template_id
			WHERE p.id = ? AND t.id = workspaces.template_id AND t.generation = workspaces.template_generation)`, poolID).
		Order("created_at, id").Limit(1)
	if s.dialect == DialectPostgres {
		pick = pick.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
	}
	var got []wire.Workspace
	err = db.Model(&got).Clauses(clause.Returning{}).
		Where("id = (?)", pick).Where("pool_state = ?", wire.PoolIdle).
		Updates(map[string]any{"pool_id": "", "pool_state": "", "labels": string(raw), "updated_at": db.NowFunc()}).Error
	if err != nil {
		return nil, dbError(ctx, err, "pool "+poolID+": take workspace")
	}
	if len(got) == 0 {
		return nil, nil
	}
	return &got[0], nil
}
