package client

import (
	"context"
	"strconv"

	"github.com/primerhq/primer/wire"
)

// AuditOptions selects audit entries.
type AuditOptions struct {
	// Tenant limits an admin's list to one tenant; others always see
	// their own tenant's.
	Tenant string
	// AfterID, when set, returns the entries after it, oldest first;
	// otherwise the newest, newest first.
	AfterID uint64
	// Limit caps the entries (0: the server's default, 100; at most 1000).
	Limit int
}

// ListAudit returns the audit entries opts selects.
func (c *Client) ListAudit(ctx context.Context, opts AuditOptions) ([]wire.AuditEntry, error) {
	q := query("tenant", opts.Tenant)
	if opts.AfterID > 0 {
		q.Set("after", strconv.FormatUint(opts.AfterID, 10))
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	return listInto[wire.AuditEntry](ctx, c, "/v1/audit", q)
}
