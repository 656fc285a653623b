package models

import (
	"context"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// CreatePreview stores a preview link's row (p.ID set by the caller).
func (s *Store) CreatePreview(ctx context.Context, p *wire.Preview) error {
	if p.ID == "" || p.WorkspaceID == "" {
		return errs.E(errs.Invalid, "preview: id and workspace_id are required")
	}
	p.TenantID = tenantOrDefault(p.TenantID)
	p.CreatedAt = storedTime(time.Now())
	p.ExpiresAt = storedTime(p.ExpiresAt)
	p.RevokedAt = nil
	return writeError(ctx, s.w.WithContext(ctx).Create(p).Error, "preview", p.ID, "create")
}

// GetPreview returns the preview link id, revoked or expired ones too.
func (s *Store) GetPreview(ctx context.Context, id string) (*wire.Preview, error) {
	var p wire.Preview
	if err := s.r.WithContext(ctx).Take(&p, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "preview", id)
	}
	return &p, nil
}

// ListPreviews returns a workspace's live preview links (neither revoked
// nor expired), newest first.
func (s *Store) ListPreviews(ctx context.Context, workspaceID string) ([]wire.Preview, error) {
	out := []wire.Preview{}
	err := s.r.WithContext(ctx).Where("workspace_id = ? AND revoked_at IS NULL AND expires_at > ?", workspaceID, storedTime(time.Now())).
		Order("created_at DESC, id").Find(&out).Error
	if err != nil {
		return nil, dbError(ctx, err, "workspace "+workspaceID+": list previews")
	}
	return out, nil
}

// RevokePreview revokes the preview link id of workspaceID; revoking one
// already revoked is not an error (the first revocation's time stays).
func (s *Store) RevokePreview(ctx context.Context, workspaceID, id string) (*wire.Preview, error) {
	db := s.w.WithContext(ctx)
	res := db.Model(&wire.Preview{}).Where("id = ? AND workspace_id = ? AND revoked_at IS NULL", id, workspaceID).
		Update("revoked_at", storedTime(time.Now()))
	if res.Error != nil {
		return nil, writeError(ctx, res.Error, "preview", id, "revoke")
	}
	p, err := s.GetPreview(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.WorkspaceID != workspaceID {
		return nil, notFound("preview", id)
	}
	return p, nil
}

// revokeWorkspacePreviews revokes every live preview link of a workspace:
// a workspace that goes back to its pool will be someone else's, and no
// link of its last lessee may reach it.
func (s *Store) revokeWorkspacePreviews(ctx context.Context, workspaceID string) error {
	err := s.w.WithContext(ctx).Model(&wire.Preview{}).Where("workspace_id = ? AND revoked_at IS NULL", workspaceID).
		Update("revoked_at", storedTime(time.Now())).Error
	if err != nil {
		return dbError(ctx, err, "workspace "+workspaceID+": revoke previews")
	}
	return nil
}
