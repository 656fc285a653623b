package wire

import "time"

// Lifetime reasons: why a workspace was deleted (the reason of its
// terminating phase) or taken back to its pool.
const (
	// ReasonExpired: the workspace reached its ExpiresAt (lifetime.max or
	// the create's ttl, as extended).
	ReasonExpired = "expired"
	// ReasonIdle: no exec, file or session call before its IdleDeadline.
	ReasonIdle = "idle"
	// ReasonLeaseExpired: a leased workspace was neither returned nor
	// extended before its LeaseExpiresAt.
	ReasonLeaseExpired = "lease_expired"
)

// Expire actions: what a workspace's ExpiresAt does (Workspace.ExpireAction).
const (
	// ExpireActionDelete deletes the workspace (reason ReasonExpired).
	ExpireActionDelete = "delete"
	// ExpireActionPause pauses it instead, its files kept, unless the
	// deadline is its MaxExpiresAt.
	ExpireActionPause = "pause"
)

// Lifetime events.
const (
	// EventExpired is recorded before a workspace is deleted for its
	// lifetime; its data's reason is ReasonExpired or ReasonIdle.
	EventExpired = "workspace.expired"
	// EventLeaseExpired is recorded when a lease runs out and the
	// workspace is taken back (reason ReasonLeaseExpired).
	EventLeaseExpired = "workspace.lease_expired"
)

// Deadlines are a workspace's lifetime deadlines; nil fields do not apply.
type Deadlines struct {
	ExpiresAt      *time.Time
	MaxExpiresAt   *time.Time
	IdleDeadline   *time.Time
	LeaseExpiresAt *time.Time
}

// Deadlines returns w's lifetime deadlines.
func (w *Workspace) Deadlines() Deadlines {
	return Deadlines{ExpiresAt: w.ExpiresAt, MaxExpiresAt: w.MaxExpiresAt, IdleDeadline: w.IdleDeadline, LeaseExpiresAt: w.LeaseExpiresAt}
}

// SetDeadlines sets d on w's fields, as stored.
func (w *Workspace) SetDeadlines(d Deadlines) {
	w.ExpiresAt, w.MaxExpiresAt = microsPtr(d.ExpiresAt), microsPtr(d.MaxExpiresAt)
	w.IdleDeadline, w.LeaseExpiresAt = microsPtr(d.IdleDeadline), microsPtr(d.LeaseExpiresAt)
}

// microsPtr is t as the store keeps it: UTC, to the microsecond (what
// PostgreSQL holds), so a deadline set here equals one read back.
func microsPtr(t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return t
	}
	st := t.UTC().Truncate(time.Microsecond)
	return &st
}
