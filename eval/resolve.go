package eval

import (
	"maps"
	"slices"

	"github.com/primerhq/primer/errs"
)

// Resolve returns c with the suite's defaults applied: Timeout (else
// DefaultTimeout), Env and Files merged (the case's entries win), Setup
// (the defaults' commands first, then the case's). Env, Files and Setup
// are new: changing them changes neither the suite nor its case.
func (s *SuiteSpec) Resolve(c Case) Case {
	switch {
	case c.Timeout != 0:
	case s.Defaults.Timeout != 0:
		c.Timeout = s.Defaults.Timeout
	default:
		c.Timeout = Duration(DefaultTimeout)
	}
	c.Env = merge(s.Defaults.Env, c.Env)
	c.Files = merge(s.Defaults.Files, c.Files)
	if n := len(s.Defaults.Setup) + len(c.Setup); n > 0 {
		setup := make([]string, 0, n)
		setup = append(setup, s.Defaults.Setup...)
		c.Setup = append(setup, c.Setup...)
	} else {
		c.Setup = nil
	}
	return c
}

// merge returns a new map of base's entries overridden by over's, nil
// when both are empty.
func merge[V any](base, over map[string]V) map[string]V {
	if len(base)+len(over) == 0 {
		return nil
	}
	m := make(map[string]V, len(base)+len(over))
	maps.Copy(m, base)
	maps.Copy(m, over)
	return m
}

// Select returns the indexes of cases the selection picks, in order;
// errs.Invalid (field "cases") naming an id the suite does not have, or
// saying the selection picks no case. A case is picked when its id is
// among sel.Cases (if any are given) and it carries every label of
// sel.Labels; an empty selection picks every case.
func Select(cases []Case, sel Selection) ([]int, error) {
	var want map[string]bool
	if len(sel.Cases) > 0 {
		have := make(map[string]bool, len(cases))
		for _, c := range cases {
			have[c.ID] = true
		}
		want = make(map[string]bool, len(sel.Cases))
		for _, id := range sel.Cases {
			if !have[id] {
				return nil, errs.Field("cases", "cases: suite has no case %q", id)
			}
			want[id] = true
		}
	}
	var picked []int
	for i, c := range cases {
		if want != nil && !want[c.ID] {
			continue
		}
		if !hasLabels(c.Labels, sel.Labels) {
			continue
		}
		picked = append(picked, i)
	}
	if len(picked) == 0 {
		if len(sel.Labels) > 0 {
			keys := slices.Sorted(maps.Keys(sel.Labels))
			return nil, errs.Field("cases", "cases: the selection picks no case (no case has every label of %v)", keys)
		}
		return nil, errs.Field("cases", "cases: the selection picks no case")
	}
	return picked, nil
}

// hasLabels reports whether labels holds every entry of want.
func hasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
