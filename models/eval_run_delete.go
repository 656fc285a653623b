package models

import (
	"context"

	"gorm.io/gorm"

	"github.com/primerhq/primer/wire"
)

// DeleteRun removes a run and its case results in one transaction;
// NotFound if the run does not exist. It undoes a CreateRun whose workflow
// could not be started, so no run sits pending with nothing to move it.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Delete(&wire.CaseResult{}, "run_id = ?", id).Error; err != nil {
			return err
		}
		res := tx.Delete(&wire.Run{}, "id = ?", id)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return notFound("run", id)
		}
		return nil
	})
	return writeError(ctx, err, "run", id, "delete")
}
