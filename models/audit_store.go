package models

import (
	"context"
	"time"
	"unicode/utf8"
)

// AuditFilter selects audit entries. The zero value is the newest
// DefaultAuditLimit entries of every tenant.
type AuditFilter struct {
	// TenantID limits the entries to one tenant; "" is every tenant.
	TenantID string
	// AfterID, when set, returns the entries with a larger id, oldest
	// first: what a follower asks for with the last id it saw.
	AfterID uint64
	// Limit caps the entries returned (0: DefaultAuditLimit).
	Limit int
}

// DefaultAuditLimit is how many audit entries a list returns unless asked.
const DefaultAuditLimit = 100

// AppendAudit stores e, giving it an id and (if zero) the current time.
// Fields longer than their columns are cut, so an odd path can never make
// an audit write fail.
func (s *Store) AppendAudit(ctx context.Context, e *AuditEntry) error {
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now()
	}
	e.CreatedAt = storedTime(e.CreatedAt)
	e.KeyID = truncate(e.KeyID, 64)
	e.TenantID = truncate(e.TenantID, 64)
	e.Action = truncate(e.Action, 64)
	e.Resource = truncate(e.Resource, 300)
	e.Result = truncate(e.Result, 32)
	e.Address = truncate(e.Address, 64)
	if err := s.w.WithContext(ctx).Create(e).Error; err != nil {
		return dbError(ctx, err, "audit: append "+e.Action)
	}
	return nil
}

// ListAudit returns the entries f selects: with AfterID, those after it,
// oldest first; otherwise the newest ones, newest first.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	q := s.r.WithContext(ctx).Limit(limit)
	if f.TenantID != "" {
		q = q.Where("tenant_id = ?", f.TenantID)
	}
	if f.AfterID > 0 {
		q = q.Where("id > ?", f.AfterID).Order("id")
	} else {
		q = q.Order("id DESC")
	}
	es := []AuditEntry{}
	if err := q.Find(&es).Error; err != nil {
		return nil, dbError(ctx, err, "audit: list")
	}
	return es, nil
}

// truncate cuts s to at most n bytes without splitting a UTF-8 character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
