package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// parseTTL parses an optional lifetime duration named field ("ttl",
// "lease_ttl"); "" is 0.
func parseTTL(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return backend.ParseLifetime(field, s)
}

// checkTTL refuses a ttl longer than the template's lifetime.max.
func checkTTL(t *wire.Template, ttl time.Duration) error {
	if ttl <= 0 {
		return nil
	}
	templateID := t.ID
	var common backend.Common
	_ = json.Unmarshal(t.Backend, &common)
	if maxLife, _ := common.Lifetimes(); maxLife > 0 && ttl > maxLife {
		return errs.Field("ttl", "ttl: %s is longer than template %s's lifetime.max (%s)", ttl, templateID, maxLife)
	}
	return nil
}

// startLifetime starts the deadlines of a workspace that leaves the rest
// of a pool (a lease, a warm create): from now, with the template's bounds
// the workspace was made with, ttl and leaseTTL (zero: none). Nothing is
// written when no deadline applies.
func (s *server) startLifetime(ctx context.Context, w *wire.Workspace, ttl, leaseTTL time.Duration) error {
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	d := models.StartDeadlines(time.Now(), ms(w.MaxLifetimeMS), ttl, ms(w.IdleTimeoutMS), leaseTTL)
	if d == (wire.Deadlines{}) {
		return nil
	}
	if err := s.cfg.Store.SetDeadlines(ctx, w.ID, d); err != nil {
		return err
	}
	w.SetDeadlines(d)
	return nil
}

// touchFraction is how far behind (as a fraction of the idle timeout) the
// stored idle deadline may lag before a call writes it again: calls on a
// busy workspace cost one UPDATE per tenth of its idle timeout, not one
// each. The workflow reads the deadline again before it acts on it.
const touchFraction = 10

// touch records an exec, file or session call on w: its idle deadline
// moves to now plus its idle timeout, written only when the stored one
// lags by more than touchFraction of the timeout. A deadline set further
// out by an extend is left alone. A failed write is only logged: the call
// itself succeeded.
func (s *server) touch(ctx context.Context, w *wire.Workspace) {
	if w.IdleDeadline == nil || w.IdleTimeoutMS <= 0 {
		return
	}
	idle := time.Duration(w.IdleTimeoutMS) * time.Millisecond
	until := time.Now().Add(idle)
	if until.Sub(*w.IdleDeadline) < idle/touchFraction {
		return
	}
	if err := s.cfg.Store.TouchWorkspace(ctx, w.ID, until); err != nil {
		s.log.Warn("workspace: record activity", "workspace_id", w.ID, "error", err.Error())
		return
	}
	w.IdleDeadline = &until
}

// extendWorkspace pushes a workspace's deadlines out: its expiry, its
// lease and its idle deadline, by a duration or to a time, never past the
// longest its template allows (max_expires_at; 400 naming the field).
func (s *server) extendWorkspace(c *gin.Context) {
	var spec wire.ExtendRequest
	if err := s.decodeJSON(c, &spec, "", false); err != nil {
		s.fail(c, err)
		return
	}
	var by time.Duration
	var until time.Time
	switch {
	case spec.By != "" && spec.Until != "":
		s.fail(c, errs.Field("by", "by, until: give one, not both"))
		return
	case spec.By != "":
		d, err := backend.ParseLifetime("by", spec.By)
		if err != nil {
			s.fail(c, err)
			return
		}
		by = d
	case spec.Until != "":
		t, err := time.Parse(time.RFC3339, spec.Until)
		if err != nil {
			s.fail(c, errs.Field("until", "until: %q is not an RFC 3339 time (like \"2025-01-02T15:04:05Z\")", spec.Until))
			return
		}
		if !t.After(time.Now()) {
			s.fail(c, errs.Field("until", "until: %s is not in the future", spec.Until))
			return
		}
		until = t
	default:
		s.fail(c, errs.Field("by", "by: required (or until)"))
		return
	}
	if spec.Exact && spec.Until == "" {
		s.fail(c, errs.Field("exact", "exact: needs until (the deadline to set)"))
		return
	}
	ctx := c.Request.Context()
	w, err := s.workspaceOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if w.Phase == wire.PhaseTerminating {
		s.fail(c, errs.E(errs.Precondition, "workspace %s: terminating; nothing to extend", w.ID))
		return
	}
	d, err := extended(w, by, until, spec.Exact, time.Now())
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cfg.Store.SetDeadlines(ctx, w.ID, d); err != nil {
		s.fail(c, err)
		return
	}
	w.SetDeadlines(d)
	s.log.Info("workspace extended", "workspace_id", w.ID)
	c.JSON(http.StatusOK, w)
}

// extended returns w's deadlines pushed out by by, or to until: the
// expiry and the lease move, within max_expires_at; the idle deadline
// moves with them (an extend says the workspace is wanted until then) and
// never to before now plus the idle timeout. exact (with until) moves them
// to until even when that is sooner. Precondition when w has no deadline;
// Invalid, naming by or until, past max_expires_at.
func extended(w *wire.Workspace, by time.Duration, until time.Time, exact bool, now time.Time) (wire.Deadlines, error) {
	d := w.Deadlines()
	if d.ExpiresAt == nil && d.LeaseExpiresAt == nil && d.IdleDeadline == nil {
		return d, errs.E(errs.Precondition, "workspace %s: has no deadline to extend (no lifetime, no lease ttl)", w.ID)
	}
	field := "until"
	if by > 0 {
		field = "by"
	}
	push := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		next := until
		if by > 0 {
			next = t.Add(by)
		}
		if next.Before(*t) && !exact {
			next = *t
		}
		return &next
	}
	d.ExpiresAt = push(d.ExpiresAt)
	d.LeaseExpiresAt = push(d.LeaseExpiresAt)
	if m := d.MaxExpiresAt; m != nil {
		for _, t := range []*time.Time{d.ExpiresAt, d.LeaseExpiresAt} {
			if t != nil && t.After(*m) {
				return d, errs.Field(field, "%s: would move the deadline to %s, past the longest workspace %s may live (max_expires_at %s)",
					field, t.UTC().Format(time.RFC3339), w.ID, m.UTC().Format(time.RFC3339))
			}
		}
	}
	if d.IdleDeadline != nil {
		idle := now.Add(time.Duration(w.IdleTimeoutMS) * time.Millisecond)
		next := push(d.IdleDeadline)
		if next.Before(idle) {
			next = &idle
		}
		d.IdleDeadline = next
	}
	return d, nil
}

// leaseTTL is the lease ttl of a lease from pool poolID: the one asked
// for, else the pool's (read when p is nil), else none.
func (s *server) leaseTTL(ctx context.Context, p *wire.Pool, asked time.Duration, poolID string) time.Duration {
	if asked > 0 {
		return asked
	}
	if p == nil {
		got, err := s.cfg.Store.GetPool(ctx, poolID)
		if err != nil {
			s.log.Warn("pool: read lease ttl", "pool_id", poolID, "error", err.Error())
			return 0
		}
		p = got
	}
	d, err := time.ParseDuration(p.LeaseTTL)
	if err != nil || d <= 0 {
		return 0
	}
	return d
}
