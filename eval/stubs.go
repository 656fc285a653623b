package eval

import (
	"io"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
)

// Check validates a suite document and fills its defaults (Concurrency,
// Retries, Schedule.Overlap and TimeZone). Every error is errs.Invalid
// naming the field as a path under "spec", e.g. "spec.cases[3].id",
// "spec.concurrency", "spec.schedule.cron", "spec.cases[2].files[../x]".
// It checks: id; exactly one of template_id and pool_id; concurrency and
// retries in range; at least one case and at most MaxCases; case ids valid
// and unique; a command on every case; paths (files, expect.files,
// score_file, collect, defaults.files) relative and inside the workspace;
// timeouts in range; stdout_matches compiles; labels; schedule (cron or
// interval, not both; time zone loads; overlap known). It does not check
// that the template or pool exists.
func (s *SuiteSpec) Check() error {
	return errs.E(errs.Other, "eval: Check not implemented")
}

// ReadJSONL reads a suite as JSONL: the first line is the suite spec
// (its cases, if any, come first), each further non-empty line one case.
// Errors name the line ("line 7: ..."); more than max bytes is
// errs.TooLarge.
func ReadJSONL(r io.Reader, max int64) (*SuiteSpec, error) {
	return nil, errs.E(errs.Other, "eval: ReadJSONL not implemented")
}

// ReadCasesJSONL reads cases, one JSON object a line.
func ReadCasesJSONL(r io.Reader, max int64) ([]Case, error) {
	return nil, errs.E(errs.Other, "eval: ReadCasesJSONL not implemented")
}

// Resolve returns c with the suite's defaults applied: Timeout (else
// DefaultTimeout), Env and Files merged (the case's entries win), Setup
// (the defaults' commands first, then the case's).
func (s *SuiteSpec) Resolve(c Case) Case {
	return c
}

// Select returns the indexes of cases the selection picks, in order;
// errs.Invalid (field "cases") naming an id the suite does not have.
func Select(cases []Case, sel Selection) ([]int, error) {
	return nil, errs.E(errs.Other, "eval: Select not implemented")
}

// Judge gives the verdict of one executed attempt: pass, or fail with a
// reason saying the first expectation not met ("exit code 1, want 0";
// "stdout does not contain \"ok\""; "timed out after 30s"; "file out.txt:
// content differs"; "setup[0]: exit status 2").
func Judge(c Case, o Outcome) (verdict, reason string) {
	return VerdictError, "eval: Judge not implemented"
}

// Progress is a run's live summary.
type Progress struct {
	Total    int `json:"total"`
	Pending  int `json:"pending"`
	Running  int `json:"running"`
	Pass     int `json:"pass"`
	Fail     int `json:"fail"`
	Error    int `json:"error"`
	Canceled int `json:"canceled"`
	// PassRate is pass / (pass+fail+error), 0 when none is final.
	PassRate float64 `json:"pass_rate"`
	// MeanScore is the mean of the final cases' scores, nil when none has one.
	MeanScore *float64 `json:"mean_score,omitempty"`
	// DurationP50MS and DurationP95MS are over the final cases' durations.
	DurationP50MS int64 `json:"duration_p50_ms"`
	DurationP95MS int64 `json:"duration_p95_ms"`
}

// Summarize computes a run's progress from its results.
func Summarize(results []models.CaseResult) Progress {
	return Progress{}
}

// JUnit renders a run's results as JUnit XML: one testsuite named after
// the suite, one testcase per case (classname the suite id, name the case
// id, time in seconds), <failure> for fail, <error> for error, <skipped>
// for cases not final, system-out/system-err with the tails.
func JUnit(run *models.Run, results []models.CaseResult) ([]byte, error) {
	return nil, errs.E(errs.Other, "eval: JUnit not implemented")
}

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

// ScoreChange is one case whose score changed.
type ScoreChange struct {
	Case  string   `json:"case"`
	From  *float64 `json:"from"`
	To    *float64 `json:"to"`
	Delta float64  `json:"delta"`
}

// Compare compares head with base; every list is sorted by case id and
// never nil.
func Compare(baseID string, base []models.CaseResult, headID string, head []models.CaseResult) Comparison {
	return Comparison{Base: baseID, Head: headID}
}
