package backend

import (
	"time"

	"github.com/primerhq/primer/errs"
)

// MaxLifetime bounds lifetime.max, lifetime.idle, a create's ttl and a
// pool's lease_ttl: a longer one is a typo more often than a wish, and a
// workspace that should live longer should not expire at all.
const MaxLifetime = 30 * 24 * time.Hour

// Lifetime is a template's lifetime policy, as Go durations ("2h"): Max is
// the longest a workspace may live (a create may ask for less with its
// ttl), Idle how long it may go without an exec, file or session call.
// Either may be empty: that bound does not apply. Idle members of a warm
// pool never expire; the bounds count from the lease.
type Lifetime struct {
	Max  string `json:"max,omitempty"`
	Idle string `json:"idle,omitempty"`
	// IdleAction is what happens at the idle deadline: IdleActionDelete
	// (empty means it) or IdleActionPause (the workspace is paused, and
	// deleted as before where its backend cannot pause).
	IdleAction string `json:"idle_action,omitempty"`
}

// Values of Lifetime.IdleAction.
const (
	IdleActionDelete = "delete"
	IdleActionPause  = "pause"
)

// IdleAction returns the template's lifetime.idle_action, IdleActionDelete
// when it sets none.
func (c Common) IdleAction() string {
	if c.Lifetime == nil || c.Lifetime.IdleAction == "" {
		return IdleActionDelete
	}
	return c.Lifetime.IdleAction
}

// Lifetimes returns the template's lifetime bounds; zero means none. It
// expects a document that passed Validate; a value that does not parse
// counts as none.
func (c Common) Lifetimes() (maxLife, idle time.Duration) {
	if c.Lifetime == nil {
		return 0, 0
	}
	if d, err := time.ParseDuration(c.Lifetime.Max); err == nil && d > 0 {
		maxLife = d
	}
	if d, err := time.ParseDuration(c.Lifetime.Idle); err == nil && d > 0 {
		idle = d
	}
	return maxLife, idle
}

// validateLifetime checks lifetime.max and lifetime.idle under prefix.
func (c Common) validateLifetime(prefix string) error {
	if c.Lifetime == nil {
		return nil
	}
	var maxLife time.Duration
	if c.Lifetime.Max != "" {
		d, err := ParseLifetime(prefix+".lifetime.max", c.Lifetime.Max)
		if err != nil {
			return err
		}
		maxLife = d
	}
	switch c.Lifetime.IdleAction {
	case "", IdleActionDelete, IdleActionPause:
	default:
		f := prefix + ".lifetime.idle_action"
		return errs.Field(f, "%s: %q is not one of %q, %q", f, c.Lifetime.IdleAction, IdleActionPause, IdleActionDelete)
	}
	if c.Lifetime.Idle != "" {
		f := prefix + ".lifetime.idle"
		d, err := ParseLifetime(f, c.Lifetime.Idle)
		if err != nil {
			return err
		}
		if maxLife > 0 && d > maxLife {
			return errs.Field(f, "%s: %q is longer than lifetime.max (%s)", f, c.Lifetime.Idle, maxLife)
		}
	}
	return nil
}

// ParseLifetime parses a lifetime duration named field (lifetime.max, ttl,
// lease_ttl): a Go duration above 0 and at most MaxLifetime.
func ParseLifetime(field, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, errs.Field(field, "%s: %q is not a duration (like \"30m\" or \"2h\")", field, s)
	case d <= 0:
		return 0, errs.Field(field, "%s: %q must be more than 0", field, s)
	case d > MaxLifetime:
		return 0, errs.Field(field, "%s: %q is more than %s", field, s, MaxLifetime)
	}
	return d, nil
}
