package vm

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/primerhq/primer/errs"
)

// candidate is a host of the fleet as placement sees it: its config and
// what a survey of it found.
type candidate struct {
	HostConfig
	// Load is the number of Primer workspaces on the host (their state
	// directories, of any installation: each takes room) plus those being
	// placed there now.
	Load int
	// Err is why the host could not be surveyed; such a host takes nothing.
	Err error
}

// matches reports whether labels hold every label of selector.
func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// selectorString renders a selector for messages: {gpu=a100, zone=b}.
func selectorString(sel map[string]string) string {
	parts := make([]string, 0, len(sel))
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		parts = append(parts, k+"="+sel[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// matching describes the hosts a selector picks, for messages.
func matching(sel map[string]string) string {
	if len(sel) == 0 {
		return ""
	}
	return " matching selector " + selectorString(sel)
}

// checkSelector returns an Invalid error naming spec.backend.selector when
// no host of the fleet matches sel.
func checkSelector(hosts []HostConfig, sel map[string]string) error {
	for _, h := range hosts {
		if matches(h.Labels, sel) {
			return nil
		}
	}
	return errs.Field("spec.backend.selector", "spec.backend.selector: template selector %s matches no host of the provider", selectorString(sel))
}

// place picks the least loaded host that matches sel, is reachable and has
// room under its max_workspaces; ties go to the host listed first. No
// matching host is Invalid (the template is wrong); matching hosts that are
// all full or unreachable are Unavailable (retrying may find room).
func place(hosts []candidate, sel map[string]string) (string, error) {
	var (
		best                *candidate
		matched, full, down int
		refused             int // down with a refusal retrying cannot change
		firstErr            error
	)
	for i := range hosts {
		h := &hosts[i]
		if !matches(h.Labels, sel) {
			continue
		}
		matched++
		switch {
		case h.Err != nil:
			down++
			if errs.Is(h.Err, errs.Forbidden) {
				// A host key that does not match known_hosts: the host
				// stays refused until an admin changes one of them.
				refused++
			}
			if firstErr == nil || (errs.Is(h.Err, errs.Forbidden) && !errs.Is(firstErr, errs.Forbidden)) {
				firstErr = h.Err
			}
		case h.MaxWorkspaces != nil && h.Load >= *h.MaxWorkspaces:
			full++
		case best == nil || h.Load < best.Load:
			best = h
		}
	}
	switch {
	case best != nil:
		return best.Address, nil
	case matched == 0:
		return "", errs.Field("spec.backend.selector", "spec.backend.selector: template selector %s matches no host of the provider", selectorString(sel))
	case down == matched && refused == matched:
		// Every host refuses for good: fail now, naming the refusal,
		// instead of retrying until the activity's deadline.
		return "", errs.E(errs.Forbidden, "no host%s can be used: %w", matching(sel), firstErr)
	case down == matched:
		return "", errs.E(errs.Unavailable, "no host%s is reachable: %w", matching(sel), firstErr)
	}
	msg := fmt.Sprintf("all %d hosts%s are full (max_workspaces)", full, matching(sel))
	if down > 0 {
		msg += fmt.Sprintf("; %d unreachable: %v", down, firstErr)
	}
	return "", errs.E(errs.Unavailable, "%s", msg)
}
