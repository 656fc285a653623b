package models

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/primerhq/primer/wire"
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
	// Since, when set, leaves out entries made before it: a tenant's
	// members see the entries from their tenant's creation on, not those
	// of a deleted tenant that had the same id.
	Since time.Time
}

// DefaultAuditLimit is how many audit entries a list returns unless asked.
const DefaultAuditLimit = 100

// AppendAudit stores e, giving it an id and (if zero) the current time.
// Every field is sanitised first (SanitizeAudit), so no path, name or
// address a client sends can make the write fail.
func (s *Store) AppendAudit(ctx context.Context, e *wire.AuditEntry) error {
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now()
	}
	e.CreatedAt = storedTime(e.CreatedAt)
	e.KeyID = SanitizeAudit(e.KeyID, 64)
	e.TenantID = SanitizeAudit(e.TenantID, 64)
	e.Action = SanitizeAudit(e.Action, 64)
	e.Resource = SanitizeAudit(e.Resource, 300)
	e.Result = SanitizeAudit(e.Result, 32)
	e.Address = SanitizeAudit(e.Address, 64)
	if err := s.w.WithContext(ctx).Create(e).Error; err != nil {
		return dbError(ctx, err, "audit: append "+e.Action)
	}
	return nil
}

// FinishAudit records how the request of entry id ended: its status,
// result and resource (a create names its new object only once it ran).
func (s *Store) FinishAudit(ctx context.Context, id uint64, status int, result, resource string) error {
	err := s.w.WithContext(ctx).Model(&wire.AuditEntry{}).Where("id = ?", id).Updates(map[string]any{
		"status": status, "result": SanitizeAudit(result, 32), "resource": SanitizeAudit(resource, 300),
	}).Error
	if err != nil {
		return dbError(ctx, err, fmt.Sprintf("audit: finish entry %d", id))
	}
	return nil
}

// ListAudit returns the entries f selects: with AfterID, those after it,
// oldest first; otherwise the newest ones, newest first.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter) ([]wire.AuditEntry, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	q := s.r.WithContext(ctx).Limit(limit)
	if f.TenantID != "" {
		q = q.Where("tenant_id = ?", f.TenantID)
	}
	if !f.Since.IsZero() {
		q = q.Where("created_at >= ?", storedTime(f.Since))
	}
	if f.AfterID > 0 {
		q = q.Where("id > ?", f.AfterID).Order("id")
	} else {
		q = q.Order("id DESC")
	}
	es := []wire.AuditEntry{}
	if err := q.Find(&es).Error; err != nil {
		return nil, dbError(ctx, err, "audit: list")
	}
	return es, nil
}

// SanitizeAudit makes s storable in an audit column of n bytes on every
// database, keeping it unambiguous: bytes that are not UTF-8, control
// characters (NUL included) and '%' itself are written as %XX, so a path
// with odd bytes is recorded as what it was rather than refused by
// PostgreSQL; the result is cut to n bytes without splitting a character
// or an escape.
func SanitizeAudit(s string, n int) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '%' || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean && len(s) <= n {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		piece := s[i : i+size]
		if (r == utf8.RuneError && size <= 1) || unicode.IsControl(r) || r == '%' {
			var esc strings.Builder
			for _, c := range []byte(piece) {
				fmt.Fprintf(&esc, "%%%02X", c)
			}
			piece = esc.String()
		}
		if b.Len()+len(piece) > n {
			break
		}
		b.WriteString(piece)
		i += size
	}
	return b.String()
}
