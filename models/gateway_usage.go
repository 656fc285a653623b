package models

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// GatewayUsage is one model call through a workspace's model gateway:
// who made it, which model, what it cost in tokens and how it ended. The
// gateway's budgets sum these rows; no body and no key is ever stored.
// A call's row is written before it is forwarded (ReserveGatewayCall),
// with Status 0 while it is in flight, so it holds its place in its
// request budgets; FinishGatewayUsage fills it in once the provider
// answered, and DropGatewayUsage removes it for a call that never reached
// the provider.
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

// gatewayLockClass is the first key of the PostgreSQL advisory lock, per
// tenant, that serialises ReserveGatewayCall.
const gatewayLockClass = 0x7067

// GatewayBound is one budget on gateway calls since Since: of the tenant's
// workspace WorkspaceID, or of the whole tenant when that is empty. A zero
// Requests or Tokens does not bound.
type GatewayBound struct {
	WorkspaceID      string
	Requests, Tokens int64
	Since            time.Time
}

// ReserveGatewayCall writes u, a call about to be forwarded, unless one of
// bounds is already used up: then it writes nothing and returns that
// bound's index and what was spent against it; otherwise -1. The check and
// the write are one step under a lock per tenant (SQLite's single writer,
// an advisory lock on PostgreSQL), so of calls made at once from any
// process, exactly as many pass as a request budget has left. Tokens are
// known only once a call ends, so calls in flight together may pass a
// token budget's last tokens; never a request budget's last request.
func (s *Store) ReserveGatewayCall(ctx context.Context, u *GatewayUsage, bounds []GatewayBound) (int, GatewaySpend, error) {
	if u.CreatedAt.IsZero() {
		u.CreatedAt = time.Now().UTC()
	}
	over, spent := -1, GatewaySpend{}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if s.dialect == DialectPostgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?, hashtext(?))", gatewayLockClass, u.TenantID).Error; err != nil {
				return err
			}
		}
		for i, b := range bounds {
			if b.Requests <= 0 && b.Tokens <= 0 {
				continue
			}
			got, err := gatewaySpend(tx, u.TenantID, b.WorkspaceID, b.Since)
			if err != nil {
				return err
			}
			if (b.Requests > 0 && got.Requests >= b.Requests) || (b.Tokens > 0 && got.Tokens >= b.Tokens) {
				over, spent = i, got
				return nil
			}
		}
		return tx.Create(u).Error
	})
	if err != nil {
		return -1, GatewaySpend{}, dbError(ctx, err, "gateway usage: reserve")
	}
	return over, spent, nil
}

// FinishGatewayUsage writes the outcome of the call u was reserved for:
// its session, status and tokens.
func (s *Store) FinishGatewayUsage(ctx context.Context, u *GatewayUsage) error {
	err := s.w.WithContext(ctx).Model(&GatewayUsage{}).Where("id = ?", u.ID).Updates(map[string]any{
		"session_id": u.SessionID, "status": u.Status, "input_tokens": u.InputTokens, "output_tokens": u.OutputTokens}).Error
	if err != nil {
		return dbError(ctx, err, "gateway usage: finish")
	}
	return nil
}

// DropGatewayUsage removes the row of a call that did not become usage.
func (s *Store) DropGatewayUsage(ctx context.Context, id uint64) error {
	if err := s.w.WithContext(ctx).Where("id = ?", id).Delete(&GatewayUsage{}).Error; err != nil {
		return dbError(ctx, err, "gateway usage: drop")
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
	got, err := gatewaySpend(s.r.WithContext(ctx), tenantID, workspaceID, since)
	if err != nil {
		return GatewaySpend{}, dbError(ctx, err, "gateway usage: sum")
	}
	return got, nil
}

func gatewaySpend(db *gorm.DB, tenantID, workspaceID string, since time.Time) (GatewaySpend, error) {
	q := db.Model(&GatewayUsage{}).Where("tenant_id = ? AND created_at >= ?", tenantID, since.UTC())
	if workspaceID != "" {
		q = q.Where("workspace_id = ?", workspaceID)
	}
	var out GatewaySpend
	err := q.Select("COUNT(*) AS requests, COALESCE(SUM(input_tokens + output_tokens), 0) AS tokens").Scan(&out).Error
	return out, err
}

// GatewayUsageOf lists workspace id's gateway calls, oldest first.
func (s *Store) GatewayUsageOf(ctx context.Context, workspaceID string) ([]GatewayUsage, error) {
	var out []GatewayUsage
	if err := s.r.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order("id").Find(&out).Error; err != nil {
		return nil, dbError(ctx, err, "gateway usage: list")
	}
	return out, nil
}
