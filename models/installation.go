package models

import (
	"context"
	"time"

	"gorm.io/gorm/clause"
)

// Installation is the one row that names this Primer installation (its
// database). Backends label what they make with it, so two installations
// sharing one container engine never take each other's sandboxes for
// orphans.
type Installation struct {
	// Slot is always installationSlot: the table holds one row.
	Slot      string    `gorm:"primaryKey;size:16" json:"-"`
	ID        string    `gorm:"size:64;not null" json:"id"`
	CreatedAt time.Time `json:"created_at"`
}

const installationSlot = "this"

// InstallationID returns the id of this installation, creating it on first
// use; concurrent first calls agree on one id.
func (s *Store) InstallationID(ctx context.Context) (string, error) {
	in := &Installation{Slot: installationSlot, ID: NewID("pri")}
	if err := s.w.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(in).Error; err != nil {
		return "", dbError(ctx, err, "installation: create")
	}
	var got Installation
	if err := s.w.WithContext(ctx).Where("slot = ?", installationSlot).Take(&got).Error; err != nil {
		return "", dbError(ctx, err, "installation: read")
	}
	return got.ID, nil
}
