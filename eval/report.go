package eval

import (
	"slices"

	"github.com/primerhq/primer/wire"
)

// Summarize computes a run's progress from its results. A case is final
// when its status is models.CaseDone; a final case without a known
// verdict counts as an error, a status Primer does not know as pending.
func Summarize(results []wire.CaseResult) wire.Progress {
	p := wire.Progress{Total: len(results)}
	var (
		durations []int64
		scoreSum  float64
		scored    int
	)
	for i := range results {
		r := &results[i]
		switch r.Status {
		case wire.CaseDone:
		case wire.CaseRunning:
			p.Running++
			continue
		case wire.CaseCanceled:
			p.Canceled++
			continue
		default:
			p.Pending++
			continue
		}
		switch r.Verdict {
		case VerdictPass:
			p.Pass++
		case VerdictFail:
			p.Fail++
		default:
			p.Error++
		}
		durations = append(durations, r.DurationMS)
		if r.Score != nil {
			scoreSum += *r.Score
			scored++
		}
	}
	if final := p.Pass + p.Fail + p.Error; final > 0 {
		p.PassRate = float64(p.Pass) / float64(final)
	}
	if scored > 0 {
		mean := scoreSum / float64(scored)
		p.MeanScore = &mean
	}
	slices.Sort(durations)
	p.DurationP50MS = percentile(durations, 50)
	p.DurationP95MS = percentile(durations, 95)
	return p
}

// percentile is the nearest-rank percentile of sorted: the smallest value
// at least pct percent of the values are less than or equal to; 0 for
// none.
func percentile(sorted []int64, pct int) int64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := (pct*n + 99) / 100 // ceil(pct/100 * n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
