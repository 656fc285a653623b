package models

import (
	"context"
	"time"
)

// GatewayUsage is one model call through a workspace's model gateway:
// who made it, which model, what it cost in tokens and how it ended. The
// gateway's budgets sum these rows; no body and no key is ever stored.
type GatewayUsage struct {
	ID          uint64 `gorm:"primaryKey;autoIncrement"`
	TenantID    string `gorm:"size:64;not null;index:idx_gateway_usage_tenant,priority:1"`
	WorkspaceID string `gorm:"size:64;not null;index:idx_gateway_usage_workspace,priority:1"`
	// SessionID is the caller's X-Primer-Session header, if any.
	SessionID    string    `gorm:"size:64;not null;default:''"`
	Model        string    `gorm:"size:256;not null"`
	Status       int       `gorm:"not null"`
	InputTokens  int64     `gorm:"not null;default:0"`
	OutputTokens int64     `gorm:"not null;default:0"`
	CreatedAt    time.Time `gorm:"not null;index:idx_gateway_usage_tenant,priority:2;index:idx_gateway_usage_workspace,priority:2"`
}

// RecordGatewayUsage stores one gateway call.
func (s *Store) RecordGatewayUsage(ctx context.Context, u *GatewayUsage) error {
	if u.CreatedAt.IsZero() {
		u.CreatedAt = time.Now().UTC()
	}
	if err := s.w.WithContext(ctx).Create(u).Error; err != nil {
		return dbError(ctx, err, "gateway usage: record")
	}
	return nil
}

// GatewaySpend is what a tenant or a workspace used through the gateway.
type GatewaySpend struct {
	Requests int64
	Tokens   int64
}

// GatewaySpendSince sums the calls made since since by tenantID, or, when
// workspaceID is not empty, by that workspace of the tenant.
func (s *Store) GatewaySpendSince(ctx context.Context, tenantID, workspaceID string, since time.Time) (GatewaySpend, error) {
	q := s.r.WithContext(ctx).Model(&GatewayUsage{}).Where("tenant_id = ? AND created_at >= ?", tenantID, since.UTC())
	if workspaceID != "" {
		q = q.Where("workspace_id = ?", workspaceID)
	}
	var out struct {
		Requests int64
		Tokens   int64
	}
	if err := q.Select("COUNT(*) AS requests, COALESCE(SUM(input_tokens + output_tokens), 0) AS tokens").Scan(&out).Error; err != nil {
		return GatewaySpend{}, dbError(ctx, err, "gateway usage: sum")
	}
	return GatewaySpend{Requests: out.Requests, Tokens: out.Tokens}, nil
}

// GatewayUsageOf lists workspace id's gateway calls, oldest first.
func (s *Store) GatewayUsageOf(ctx context.Context, workspaceID string) ([]GatewayUsage, error) {
	var out []GatewayUsage
	if err := s.r.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order("id").Find(&out).Error; err != nil {
		return nil, dbError(ctx, err, "gateway usage: list")
	}
	return out, nil
}
