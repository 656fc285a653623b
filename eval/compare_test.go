package eval

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/primerhq/primer/wire"
)

func TestCompare(t *testing.T) {
	withReason := func(r wire.CaseResult, reason string) wire.CaseResult { r.Reason = reason; return r }
	base := []wire.CaseResult{
		done("flip-down", VerdictPass, 0, nil),
		done("flip-up", VerdictFail, 0, nil),
		done("err-up", VerdictError, 0, nil),
		done("to-error", VerdictPass, 0, nil),
		done("same", VerdictPass, 0, fp(0.5)),
		done("same-fail", VerdictFail, 0, nil),
		done("score-up", VerdictPass, 0, fp(0.5)),
		done("score-gone", VerdictPass, 0, fp(0.5)),
		done("score-new", VerdictPass, 0, nil),
		done("score-noise", VerdictPass, 0, fp(0.1+0.2)),
		done("only-base", VerdictPass, 0, nil),
		done("fail-to-error", VerdictFail, 0, nil),
		done("was-done", VerdictPass, 0, nil),
	}
	head := []wire.CaseResult{
		done("only-head", VerdictPass, 0, nil),
		withReason(done("flip-down", VerdictFail, 0, nil), "exit code 1, want 0"),
		done("flip-up", VerdictPass, 0, nil),
		done("err-up", VerdictPass, 0, nil),
		withReason(done("to-error", VerdictError, 0, nil), "workspace lost"),
		done("same", VerdictPass, 0, fp(0.5)),
		done("same-fail", VerdictFail, 0, nil),
		done("score-up", VerdictPass, 0, fp(0.75)),
		done("score-gone", VerdictPass, 0, nil),
		done("score-new", VerdictPass, 0, fp(1)),
		done("score-noise", VerdictPass, 0, fp(0.3)),
		done("fail-to-error", VerdictError, 0, nil),
		{CaseID: "was-done", Status: wire.CaseCanceled},
	}
	cmp := Compare("run-a", base, "run-b", head)
	if cmp.Base != "run-a" || cmp.Head != "run-b" {
		t.Errorf("ids = %s, %s", cmp.Base, cmp.Head)
	}
	wantReg := []CaseChange{
		{Case: "flip-down", From: VerdictPass, To: VerdictFail, Reason: "exit code 1, want 0"},
		{Case: "to-error", From: VerdictPass, To: VerdictError, Reason: "workspace lost"},
	}
	if !reflect.DeepEqual(cmp.Regressions, wantReg) {
		t.Errorf("Regressions = %+v, want %+v", cmp.Regressions, wantReg)
	}
	wantFix := []CaseChange{
		{Case: "err-up", From: VerdictError, To: VerdictPass},
		{Case: "flip-up", From: VerdictFail, To: VerdictPass},
	}
	if !reflect.DeepEqual(cmp.Fixes, wantFix) {
		t.Errorf("Fixes = %+v, want %+v", cmp.Fixes, wantFix)
	}
	if !reflect.DeepEqual(cmp.New, []string{"only-head"}) || !reflect.DeepEqual(cmp.Missing, []string{"only-base"}) {
		t.Errorf("New = %v, Missing = %v", cmp.New, cmp.Missing)
	}
	var scores []string
	for _, sc := range cmp.ScoreChanges {
		scores = append(scores, sc.Case)
	}
	if got := strings.Join(scores, ","); got != "score-gone,score-new,score-up" {
		t.Fatalf("ScoreChanges = %s, want score-gone,score-new,score-up", got)
	}
	gone, added, up := cmp.ScoreChanges[0], cmp.ScoreChanges[1], cmp.ScoreChanges[2]
	if *gone.From != 0.5 || gone.To != nil || added.From != nil || *added.To != 1 {
		t.Errorf("appeared or gone scores: %+v, %+v", gone, added)
	}
	if *up.From != 0.5 || *up.To != 0.75 || up.Delta != 0.25 {
		t.Errorf("score-up = %+v", up)
	}
	// same, same-fail, score-noise; fail-to-error and was-done changed
	// but are neither regressions nor fixes.
	if cmp.Unchanged != 3 {
		t.Errorf("Unchanged = %d, want 3", cmp.Unchanged)
	}

	// The score pointers are copies: changing a result later does not
	// change the comparison.
	*head[7].Score = 9
	if *up.To != 0.75 {
		t.Error("ScoreChange shares the result's score")
	}
}

func TestCompareEmptyListsAreJSONArrays(t *testing.T) {
	same := []wire.CaseResult{done("a", VerdictPass, 0, nil)}
	for _, cmp := range []Comparison{Compare("x", nil, "y", nil), Compare("x", same, "y", same)} {
		out, err := json.Marshal(cmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"regressions", "fixes", "new", "missing", "score_changes"} {
			if !strings.Contains(string(out), `"`+k+`":[]`) {
				t.Errorf("%s is not [] in %s", k, out)
			}
		}
	}
}
