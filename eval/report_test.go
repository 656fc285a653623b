package eval

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/primerhq/primer/wire"
)

func fp(f float64) *float64 { return &f }

func done(id, verdict string, ms int64, score *float64) wire.CaseResult {
	return wire.CaseResult{CaseID: id, Status: wire.CaseDone, Verdict: verdict, DurationMS: ms, Score: score}
}

func TestSummarize(t *testing.T) {
	results := []wire.CaseResult{
		done("a", VerdictPass, 100, fp(1)),
		done("b", VerdictPass, 300, fp(0.5)),
		done("c", VerdictFail, 200, nil),
		done("d", VerdictError, 400, fp(0)),
		{CaseID: "e", Status: wire.CasePending},
		{CaseID: "f", Status: wire.CaseRunning, DurationMS: 99999, Score: fp(100)},
		{CaseID: "g", Status: wire.CaseCanceled, DurationMS: 99999},
	}
	p := Summarize(results)
	want := wire.Progress{Total: 7, Pending: 1, Running: 1, Pass: 2, Fail: 1, Error: 1, Canceled: 1,
		PassRate: 0.5, DurationP50MS: 200, DurationP95MS: 400}
	if p.MeanScore == nil || math.Abs(*p.MeanScore-0.5) > 1e-12 {
		t.Errorf("MeanScore = %v, want 0.5 (over final cases with a score)", p.MeanScore)
	}
	p.MeanScore = nil
	if p != want {
		t.Errorf("Summarize =\n%+v, want\n%+v", p, want)
	}

	empty := Summarize(nil)
	if empty != (wire.Progress{}) {
		t.Errorf("Summarize(nil) = %+v", empty)
	}
	out, _ := json.Marshal(Summarize([]wire.CaseResult{{Status: wire.CasePending}}))
	if strings.Contains(string(out), "mean_score") || !strings.Contains(string(out), `"pass_rate":0`) {
		t.Errorf("progress without final cases = %s", out)
	}
}

func TestPercentile(t *testing.T) {
	hundred := make([]int64, 100)
	for i := range hundred {
		hundred[i] = int64(i + 1)
	}
	tests := []struct {
		name   string
		sorted []int64
		pct    int
		want   int64
	}{
		{"none", nil, 50, 0},
		{"one", []int64{7}, 95, 7},
		{"p50 of two", []int64{1, 2}, 50, 1},
		{"p50 of 1..100", hundred, 50, 50},
		{"p95 of 1..100", hundred, 95, 95},
		{"p95 of 1..10 is the max", hundred[:10], 95, 10},
		{"p50 of five", []int64{10, 20, 30, 40, 50}, 50, 30},
	}
	for _, tt := range tests {
		if got := percentile(tt.sorted, tt.pct); got != tt.want {
			t.Errorf("%s: percentile = %d, want %d", tt.name, got, tt.want)
		}
	}
}
