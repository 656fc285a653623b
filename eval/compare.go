package eval

import (
	"math"
	"slices"
	"strings"

	"github.com/primerhq/primer/wire"
)

// scoreEpsilon is how much two scores may differ and still be the same:
// scores are floats a case computed, often after JSON round trips.
const scoreEpsilon = 1e-9

// Comparison lists how a run (head) differs from another (base), by case id.
type Comparison struct {
	Base string `json:"base"`
	Head string `json:"head"`
	// Regressions passed in base and did not pass in head (fail or error).
	Regressions []CaseChange `json:"regressions"`
	// Fixes did not pass in base and pass in head.
	Fixes []CaseChange `json:"fixes"`
	// New cases are only in head; Missing only in base.
	New     []string `json:"new"`
	Missing []string `json:"missing"`
	// ScoreChanges are cases in both whose score differs.
	ScoreChanges []ScoreChange `json:"score_changes"`
	// Unchanged counts cases in both with the same verdict and score.
	Unchanged int `json:"unchanged"`
}

// CaseChange is one case whose verdict changed.
type CaseChange struct {
	Case   string `json:"case"`
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason,omitempty"` // head's reason
}

// ScoreChange is one case whose score changed. Delta is To - From when
// both are set, 0 when the score appeared or went away.
type ScoreChange struct {
	Case  string   `json:"case"`
	From  *float64 `json:"from"`
	To    *float64 `json:"to"`
	Delta float64  `json:"delta"`
}

// Compare compares head with base; every list is sorted by case id and
// never nil. A case only counts as a regression or fix between final
// verdicts (pass and fail or error); a case not final in either run is
// neither, nor unchanged.
func Compare(baseID string, base []wire.CaseResult, headID string, head []wire.CaseResult) Comparison {
	cmp := Comparison{
		Base:         baseID,
		Head:         headID,
		Regressions:  []CaseChange{},
		Fixes:        []CaseChange{},
		New:          []string{},
		Missing:      []string{},
		ScoreChanges: []ScoreChange{},
	}
	baseByID := make(map[string]*wire.CaseResult, len(base))
	for i := range base {
		baseByID[base[i].CaseID] = &base[i]
	}
	headIDs := make(map[string]bool, len(head))
	for i := range head {
		h := &head[i]
		if headIDs[h.CaseID] {
			continue // one result per case; the first wins
		}
		headIDs[h.CaseID] = true
		b, ok := baseByID[h.CaseID]
		if !ok {
			cmp.New = append(cmp.New, h.CaseID)
			continue
		}
		from, to := finalVerdict(b), finalVerdict(h)
		changed := false
		switch {
		case from == VerdictPass && (to == VerdictFail || to == VerdictError):
			cmp.Regressions = append(cmp.Regressions, CaseChange{Case: h.CaseID, From: from, To: to, Reason: h.Reason})
			changed = true
		case (from == VerdictFail || from == VerdictError) && to == VerdictPass:
			cmp.Fixes = append(cmp.Fixes, CaseChange{Case: h.CaseID, From: from, To: to, Reason: h.Reason})
			changed = true
		case from != to:
			changed = true
		}
		if sc, ok := scoreChange(h.CaseID, b.Score, h.Score); ok {
			cmp.ScoreChanges = append(cmp.ScoreChanges, sc)
			changed = true
		}
		if !changed {
			cmp.Unchanged++
		}
	}
	for i := range base {
		if id := base[i].CaseID; !headIDs[id] {
			headIDs[id] = true // list each missing case once
			cmp.Missing = append(cmp.Missing, id)
		}
	}

	byCase := func(a, b CaseChange) int { return strings.Compare(a.Case, b.Case) }
	slices.SortFunc(cmp.Regressions, byCase)
	slices.SortFunc(cmp.Fixes, byCase)
	slices.SortFunc(cmp.ScoreChanges, func(a, b ScoreChange) int { return strings.Compare(a.Case, b.Case) })
	slices.Sort(cmp.New)
	slices.Sort(cmp.Missing)
	return cmp
}

// finalVerdict is r's verdict when it is final, else its status
// (pending, running, canceled), so a finished case never compares equal
// to an unfinished one.
func finalVerdict(r *wire.CaseResult) string {
	if r.Status == wire.CaseDone {
		return r.Verdict
	}
	return r.Status
}

// scoreChange reports whether a case's score changed from from to to,
// and how; the pointers it returns are copies.
func scoreChange(id string, from, to *float64) (ScoreChange, bool) {
	switch {
	case from == nil && to == nil:
		return ScoreChange{}, false
	case from != nil && to != nil:
		if math.Abs(*to-*from) <= scoreEpsilon {
			return ScoreChange{}, false
		}
		f, t := *from, *to
		return ScoreChange{Case: id, From: &f, To: &t, Delta: t - f}, true
	case from != nil:
		f := *from
		return ScoreChange{Case: id, From: &f}, true
	default:
		t := *to
		return ScoreChange{Case: id, To: &t}, true
	}
}
