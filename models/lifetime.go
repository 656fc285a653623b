package models

import (
	"context"
	"time"

	"github.com/primerhq/primer/wire"
)

// StartDeadlines returns the deadlines of a workspace whose life (or
// lease) starts at now: it expires after ttl when that is set, else after
// maxLife; it may be extended up to maxLife; it goes idle after idle; its
// lease runs out after leaseTTL. Zero durations set no deadline.
func StartDeadlines(now time.Time, maxLife, ttl, idle, leaseTTL time.Duration) wire.Deadlines {
	at := func(d time.Duration) *time.Time {
		if d <= 0 {
			return nil
		}
		t := storedTime(now.Add(d))
		return &t
	}
	d := wire.Deadlines{MaxExpiresAt: at(maxLife), IdleDeadline: at(idle), LeaseExpiresAt: at(leaseTTL)}
	d.ExpiresAt = at(maxLife)
	if ttl > 0 {
		d.ExpiresAt = at(ttl)
	}
	return d
}

// SetDeadlines replaces the workspace's lifetime deadlines (nil clears
// one); NotFound if the workspace does not exist.
func (s *Store) SetDeadlines(ctx context.Context, id string, d wire.Deadlines) error {
	return s.updateWorkspace(ctx, id, "set deadlines", deadlineColumns(d))
}

// TouchWorkspace records activity on the workspace: its idle deadline, if
// it has one, moves to until. It is one UPDATE of one row by its key that
// leaves updated_at alone; callers throttle it (see api's touch).
func (s *Store) TouchWorkspace(ctx context.Context, id string, until time.Time) error {
	err := s.w.WithContext(ctx).Model(&wire.Workspace{}).
		Where("id = ? AND idle_deadline IS NOT NULL", id).
		UpdateColumn("idle_deadline", storedTime(until)).Error
	return writeError(ctx, err, "workspace", id, "touch")
}

// deadlineColumns are d's columns for an update; nil is NULL.
func deadlineColumns(d wire.Deadlines) map[string]any {
	col := func(t *time.Time) any {
		if t == nil {
			return nil
		}
		return storedTime(*t)
	}
	return map[string]any{
		"expires_at":       col(d.ExpiresAt),
		"max_expires_at":   col(d.MaxExpiresAt),
		"idle_deadline":    col(d.IdleDeadline),
		"lease_expires_at": col(d.LeaseExpiresAt),
	}
}
