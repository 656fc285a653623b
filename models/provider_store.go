package models

import (
	"context"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// CreateProvider inserts p; Conflict if the id exists.
func (s *Store) CreateProvider(ctx context.Context, p *wire.Provider) error {
	if p.ID == "" {
		return errs.Field("id", "provider: id is required")
	}
	if err := checkJSON("config", "provider "+p.ID, p.Config); err != nil {
		return err
	}
	if err := s.w.WithContext(ctx).Create(p).Error; err != nil {
		return writeError(ctx, err, "provider", p.ID, "create")
	}
	return nil
}

// GetProvider returns the provider; NotFound if absent.
func (s *Store) GetProvider(ctx context.Context, id string) (*wire.Provider, error) {
	var p wire.Provider
	if err := s.r.WithContext(ctx).Take(&p, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "provider", id)
	}
	return &p, nil
}

// ListProviders returns providers ordered by id: every one when tenant is
// empty (internal callers, an admin), else the tenant's own and the shared
// ones, which every tenant may build templates on.
func (s *Store) ListProviders(ctx context.Context, tenant string) ([]wire.Provider, error) {
	q := s.r.WithContext(ctx).Order("id")
	if tenant != "" {
		q = q.Where("tenant_id = ? OR shared = ?", tenant, true)
	}
	ps := []wire.Provider{}
	if err := q.Find(&ps).Error; err != nil {
		return nil, dbError(ctx, err, "providers: list")
	}
	return ps, nil
}

// UpdateProvider replaces provider, config and shared of an existing provider;
// NotFound if absent. On success p holds the stored row (timestamps included).
func (s *Store) UpdateProvider(ctx context.Context, p *wire.Provider) error {
	if err := checkJSON("config", "provider "+p.ID, p.Config); err != nil {
		return err
	}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&wire.Provider{}).Where("id = ?", p.ID).Updates(map[string]any{
			"provider":   p.Provider,
			"config":     jsonColumn(p.Config),
			"shared":     p.Shared,
			"updated_at": tx.NowFunc(),
		})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return notFound("provider", p.ID)
		}
		return reload(tx, p, p.ID)
	})
	return writeError(ctx, err, "provider", p.ID, "update")
}

// DeleteProvider deletes the provider; NotFound if absent, Conflict if a
// template or a workspace references it.
func (s *Store) DeleteProvider(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.Provider{}, "provider", id); err != nil {
			return err
		}
		if ref, err := firstID(tx, &wire.Template{}, "provider_id = ?", id); err != nil || ref != "" {
			return inUse(err, "provider", id, "template", ref)
		}
		if ref, err := firstID(tx, &wire.Workspace{}, "provider_id = ?", id); err != nil || ref != "" {
			return inUse(err, "provider", id, "workspace", ref)
		}
		return tx.Delete(&wire.Provider{}, "id = ?", id).Error
	})
	return writeError(ctx, err, "provider", id, "delete")
}
