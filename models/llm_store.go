package models

import (
	"context"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// CreateLLMProvider inserts p; Conflict if the id exists.
func (s *Store) CreateLLMProvider(ctx context.Context, p *wire.LLMProvider) error {
	if p.ID == "" {
		return errs.Field("id", "llm provider: id is required")
	}
	err := s.w.WithContext(ctx).Create(p).Error
	return writeError(ctx, err, "llm provider", p.ID, "create")
}

// GetLLMProvider returns the provider, key included; NotFound if absent.
func (s *Store) GetLLMProvider(ctx context.Context, id string) (*wire.LLMProvider, error) {
	var p wire.LLMProvider
	if err := s.r.WithContext(ctx).Take(&p, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "llm provider", id)
	}
	return &p, nil
}

// ListLLMProviders returns providers ordered by id, those of tenant only
// when it is not empty.
func (s *Store) ListLLMProviders(ctx context.Context, tenant string) ([]wire.LLMProvider, error) {
	q := s.r.WithContext(ctx).Order("id")
	if tenant != "" {
		q = q.Where("tenant_id = ?", tenant)
	}
	ps := []wire.LLMProvider{}
	if err := q.Find(&ps).Error; err != nil {
		return nil, dbError(ctx, err, "llm providers: list")
	}
	return ps, nil
}

// UpdateLLMProvider replaces an existing provider's kind, base URL and key;
// NotFound if absent. On success p holds the stored row.
func (s *Store) UpdateLLMProvider(ctx context.Context, p *wire.LLMProvider) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.LLMProvider{}, "llm provider", p.ID); err != nil {
			return err
		}
		err := tx.Model(&wire.LLMProvider{}).Where("id = ?", p.ID).Updates(map[string]any{
			"kind":        p.Kind,
			"base_url":    p.BaseURL,
			"api_key":     p.APIKey,
			"api_key_env": p.APIKeyEnv,
			"updated_at":  tx.NowFunc(),
		}).Error
		if err != nil {
			return err
		}
		return reload(tx, p, p.ID)
	})
	return writeError(ctx, err, "llm provider", p.ID, "update")
}

// DeleteLLMProvider deletes the provider; NotFound if absent, Conflict if
// an agent uses it.
func (s *Store) DeleteLLMProvider(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.LLMProvider{}, "llm provider", id); err != nil {
			return err
		}
		if ref, err := firstID(tx, &wire.Agent{}, "provider_id = ?", id); err != nil || ref != "" {
			return inUse(err, "llm provider", id, "agent", ref)
		}
		return tx.Delete(&wire.LLMProvider{}, "id = ?", id).Error
	})
	return writeError(ctx, err, "llm provider", id, "delete")
}

// CreateAgent inserts a; Conflict if the id exists, Invalid (field
// model.provider_id) if the provider does not.
func (s *Store) CreateAgent(ctx context.Context, a *wire.Agent) error {
	if a.ID == "" {
		return errs.Field("id", "agent: id is required")
	}
	a.ProviderID = a.Model.ProviderID
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockLLMProviderOf(tx, a); err != nil {
			return err
		}
		return tx.Create(a).Error
	})
	return writeError(ctx, err, "agent", a.ID, "create")
}

// GetAgent returns the agent; NotFound if absent.
func (s *Store) GetAgent(ctx context.Context, id string) (*wire.Agent, error) {
	var a wire.Agent
	if err := s.r.WithContext(ctx).Take(&a, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "agent", id)
	}
	return &a, nil
}

// ListAgents returns agents ordered by id, those of tenant only when it is
// not empty.
func (s *Store) ListAgents(ctx context.Context, tenant string) ([]wire.Agent, error) {
	q := s.r.WithContext(ctx).Order("id")
	if tenant != "" {
		q = q.Where("tenant_id = ?", tenant)
	}
	as := []wire.Agent{}
	if err := q.Find(&as).Error; err != nil {
		return nil, dbError(ctx, err, "agents: list")
	}
	return as, nil
}

// UpdateAgent replaces an existing agent; NotFound if absent, Invalid
// (field model.provider_id) if its provider does not exist. On success a
// holds the stored row.
func (s *Store) UpdateAgent(ctx context.Context, a *wire.Agent) error {
	a.ProviderID = a.Model.ProviderID
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.Agent{}, "agent", a.ID); err != nil {
			return err
		}
		if err := lockLLMProviderOf(tx, a); err != nil {
			return err
		}
		// Select writes every column, zero values included (a cleared
		// description or tool list).
		err := tx.Model(&wire.Agent{ID: a.ID}).
			Select("description", "provider_id", "model", "system_prompt", "tools", "max_turns", "timeout", "updated_at").
			Updates(&wire.Agent{Description: a.Description, ProviderID: a.ProviderID, Model: a.Model,
				SystemPrompt: a.SystemPrompt, Tools: a.Tools, MaxTurns: a.MaxTurns, Timeout: a.Timeout,
				UpdatedAt: tx.NowFunc()}).Error
		if err != nil {
			return err
		}
		return reload(tx, a, a.ID)
	})
	return writeError(ctx, err, "agent", a.ID, "update")
}

// DeleteAgent deletes the agent; NotFound if absent.
func (s *Store) DeleteAgent(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.Agent{}, "agent", id); err != nil {
			return err
		}
		return tx.Delete(&wire.Agent{}, "id = ?", id).Error
	})
	return writeError(ctx, err, "agent", id, "delete")
}

// lockLLMProviderOf locks a's provider against deletion for the rest of
// tx; Invalid (field model.provider_id) if it does not exist.
func lockLLMProviderOf(tx *gorm.DB, a *wire.Agent) error {
	err := lockRow(tx, forShare, &wire.LLMProvider{}, "llm provider", a.ProviderID)
	if errs.Is(err, errs.NotFound) {
		return errs.Field("model.provider_id", "agent %s: llm provider %s: not found", a.ID, a.ProviderID)
	}
	return err
}
