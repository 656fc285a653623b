package backend

import (
	"net/url"
	"time"

	"github.com/primerhq/primer/errs"
)

// Defaults and bounds of a template's lifecycle policy.
const (
	// DefaultStartTimeout is how long a workspace may stay pending.
	DefaultStartTimeout = 10 * time.Minute
	// DefaultMaxAttempts is how many times stale recovery replaces a
	// sandbox before it escalates.
	DefaultMaxAttempts = 3
	// DefaultRecoverAfter is how long a workspace stays failed before stale
	// recovery starts.
	DefaultRecoverAfter = 30 * time.Second

	// MaxPolicyDuration bounds start_timeout and recovery.after: a longer
	// wait is a typo (10h for 10m) more often than a wish.
	MaxPolicyDuration = 24 * time.Hour
	// MaxRecoveryAttempts bounds recovery.max_attempts.
	MaxRecoveryAttempts = 20
)

// Policy is a template's lifecycle policy as typed values with the defaults
// filled in. It holds no secret (the webhook's URL stays in the template),
// so it may travel through workflow history.
type Policy struct {
	// StartTimeout is how long the workspace may stay pending.
	StartTimeout time.Duration `json:"start_timeout"`
	// MaxAttempts is how many replacements stale recovery makes before it
	// escalates; 0 escalates right after RecoverAfter.
	MaxAttempts int `json:"max_attempts"`
	// RecoverAfter is how long the workspace stays failed before recovery.
	RecoverAfter time.Duration `json:"recover_after"`
	// Webhook is true when the template names a webhook to POST to on
	// escalation.
	Webhook bool `json:"webhook"`
}

// Policy returns the template's lifecycle policy with defaults filled in.
// It is the one place the defaults are applied. It expects a document that
// passed Validate; a value that does not parse gets its default.
func (c Common) Policy() Policy {
	p := Policy{
		StartTimeout: DefaultStartTimeout,
		MaxAttempts:  DefaultMaxAttempts,
		RecoverAfter: DefaultRecoverAfter,
	}
	if d, err := time.ParseDuration(c.StartTimeout); err == nil && d > 0 {
		p.StartTimeout = d
	}
	if r := c.Recovery; r != nil {
		if r.MaxAttempts != nil && *r.MaxAttempts >= 0 {
			p.MaxAttempts = *r.MaxAttempts
		}
		if d, err := time.ParseDuration(r.After); err == nil && d >= 0 {
			p.RecoverAfter = d
		}
		p.Webhook = r.WebhookURL != ""
	}
	return p
}

// validatePolicy checks start_timeout and recovery under prefix.
func (c Common) validatePolicy(prefix string) error {
	if c.StartTimeout != "" {
		f := prefix + ".start_timeout"
		d, err := parseDuration(f, c.StartTimeout)
		if err != nil {
			return err
		}
		if d == 0 {
			return errs.Field(f, "%s: must be more than 0 (leave it out for the default, %s)", f, DefaultStartTimeout)
		}
	}
	r := c.Recovery
	if r == nil {
		return nil
	}
	if r.MaxAttempts != nil && (*r.MaxAttempts < 0 || *r.MaxAttempts > MaxRecoveryAttempts) {
		f := prefix + ".recovery.max_attempts"
		return errs.Field(f, "%s: %d must be between 0 and %d", f, *r.MaxAttempts, MaxRecoveryAttempts)
	}
	if r.After != "" {
		if _, err := parseDuration(prefix+".recovery.after", r.After); err != nil {
			return err
		}
	}
	if r.WebhookURL != "" {
		// The URL may carry a token: the message never repeats it.
		f := prefix + ".recovery.webhook_url"
		u, err := url.Parse(r.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
			return errs.Field(f, "%s: must be an absolute http or https URL", f)
		}
	}
	return nil
}

// parseDuration parses a policy duration named field: a Go duration
// between 0 and MaxPolicyDuration.
func parseDuration(field, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, errs.Field(field, "%s: %q is not a duration (like \"30s\" or \"10m\")", field, s)
	case d < 0:
		return 0, errs.Field(field, "%s: %q must not be negative", field, s)
	case d > MaxPolicyDuration:
		return 0, errs.Field(field, "%s: %q is more than %s", field, s, MaxPolicyDuration)
	}
	return d, nil
}
