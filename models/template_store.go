package models

import (
	"context"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// CreateTemplate inserts t with Generation 1; Conflict if the id exists,
// Invalid (field provider_id) if the provider does not.
func (s *Store) CreateTemplate(ctx context.Context, t *wire.Template) error {
	if t.ID == "" {
		return errs.Field("id", "template: id is required")
	}
	if err := checkJSON("backend", "template "+t.ID, t.Backend); err != nil {
		return err
	}
	t.Generation = 1
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockProviderOf(tx, t); err != nil {
			return err
		}
		return tx.Create(t).Error
	})
	return writeError(ctx, err, "template", t.ID, "create")
}

// GetTemplate returns the template; NotFound if absent.
func (s *Store) GetTemplate(ctx context.Context, id string) (*wire.Template, error) {
	var t wire.Template
	if err := s.r.WithContext(ctx).Take(&t, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "template", id)
	}
	return &t, nil
}

// ListTemplates returns templates ordered by id, those of providerID only
// when it is not empty, those of tenant only when it is not empty.
func (s *Store) ListTemplates(ctx context.Context, providerID, tenant string) ([]wire.Template, error) {
	q := s.r.WithContext(ctx).Order("id")
	if providerID != "" {
		q = q.Where("provider_id = ?", providerID)
	}
	if tenant != "" {
		q = q.Where("tenant_id = ?", tenant)
	}
	ts := []wire.Template{}
	if err := q.Find(&ts).Error; err != nil {
		return nil, dbError(ctx, err, "templates: list")
	}
	return ts, nil
}

// UpdateTemplate replaces an existing template (AdminWritten included:
// it says who made this write) and increments its
// Generation in the same statement; NotFound if absent, Invalid (field
// provider_id) if its provider does not exist. On success t holds the stored
// row, new generation included.
func (s *Store) UpdateTemplate(ctx context.Context, t *wire.Template) error {
	if err := checkJSON("backend", "template "+t.ID, t.Backend); err != nil {
		return err
	}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.Template{}, "template", t.ID); err != nil {
			return err
		}
		if err := lockProviderOf(tx, t); err != nil {
			return err
		}
		err := tx.Model(&wire.Template{}).Where("id = ?", t.ID).Updates(map[string]any{
			"provider_id":   t.ProviderID,
			"description":   t.Description,
			"backend":       jsonColumn(t.Backend),
			"admin_written": t.AdminWritten,
			"generation":    gorm.Expr("generation + 1"),
			"updated_at":    tx.NowFunc(),
		}).Error
		if err != nil {
			return err
		}
		return reload(tx, t, t.ID)
	})
	return writeError(ctx, err, "template", t.ID, "update")
}

// DeleteTemplate deletes the template; NotFound if absent, Conflict if a
// workspace uses it (every workspace row is live: destroyed ones are deleted)
// or a warm pool references it.
func (s *Store) DeleteTemplate(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.Template{}, "template", id); err != nil {
			return err
		}
		if ref, err := firstID(tx, &wire.Workspace{}, "template_id = ?", id); err != nil || ref != "" {
			return inUse(err, "template", id, "workspace", ref)
		}
		if ref, err := firstID(tx, &wire.Pool{}, "template_id = ?", id); err != nil || ref != "" {
			return inUse(err, "template", id, "pool", ref)
		}
		return tx.Delete(&wire.Template{}, "id = ?", id).Error
	})
	return writeError(ctx, err, "template", id, "delete")
}

// lockProviderOf locks t's provider against deletion for the rest of tx;
// Invalid (field provider_id) if it does not exist.
func lockProviderOf(tx *gorm.DB, t *wire.Template) error {
	err := lockRow(tx, forShare, &wire.Provider{}, "provider", t.ProviderID)
	if errs.Is(err, errs.NotFound) {
		return errs.Field("provider_id", "template %s: provider %s: not found", t.ID, t.ProviderID)
	}
	return err
}
