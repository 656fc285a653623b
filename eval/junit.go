package eval

import (
	"encoding/xml"
	"fmt"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// The JUnit XML document, in the shape CI systems (Jenkins, GitLab,
// GitHub test reporters) read.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string          `xml:"name,attr"`
		ID         string          `xml:"id,attr,omitempty"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Time       string          `xml:"time,attr"`
		Timestamp  string          `xml:"timestamp,attr,omitempty"`
		Properties []junitProperty `xml:"properties>property,omitempty"`
		Cases      []junitCase     `xml:"testcase"`
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		ClassName string        `xml:"classname,attr"`
		Name      string        `xml:"name,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitProblem `xml:"failure,omitempty"`
		Error     *junitProblem `xml:"error,omitempty"`
		Skipped   *junitProblem `xml:"skipped,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
		SystemErr string        `xml:"system-err,omitempty"`
	}
	junitProblem struct {
		Message string `xml:"message,attr,omitempty"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",chardata"`
	}
)

// JUnit renders a run's results as JUnit XML: one testsuite named after
// the suite, one testcase per case (classname the suite id, name the case
// id, time in seconds), <failure> for fail, <error> for error, <skipped>
// for cases not final, system-out/system-err with the tails.
func JUnit(run *wire.Run, results []wire.CaseResult) ([]byte, error) {
	if run == nil {
		return nil, errs.E(errs.Other, "junit: no run")
	}
	suite := junitSuite{
		Name:       run.SuiteID,
		ID:         run.ID,
		Properties: []junitProperty{{Name: "run_id", Value: run.ID}, {Name: "status", Value: run.Status}},
		Cases:      make([]junitCase, 0, len(results)),
	}
	if run.Trigger != "" {
		suite.Properties = append(suite.Properties, junitProperty{Name: "trigger", Value: run.Trigger})
	}
	var sumMS int64
	for i := range results {
		r := &results[i]
		tc := junitCase{
			ClassName: run.SuiteID,
			Name:      r.CaseID,
			Time:      seconds(r.DurationMS),
			SystemOut: r.Stdout,
			SystemErr: r.Stderr,
		}
		sumMS += r.DurationMS
		switch {
		case r.Status != wire.CaseDone:
			suite.Skipped++
			tc.Skipped = &junitProblem{Message: r.Status}
		case r.Verdict == VerdictPass:
		case r.Verdict == VerdictFail:
			suite.Failures++
			tc.Failure = &junitProblem{Message: r.Reason, Type: VerdictFail, Text: detail(r)}
		default:
			suite.Errors++
			tc.Error = &junitProblem{Message: r.Reason, Type: VerdictError, Text: detail(r)}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Tests = len(suite.Cases)
	// The suite's time is the run's wall time when known: its cases ran
	// concurrently, so their sum overstates it.
	suite.Time = seconds(sumMS)
	if run.StartedAt != nil {
		suite.Timestamp = run.StartedAt.UTC().Format(time.RFC3339)
		if run.EndedAt != nil {
			suite.Time = seconds(run.EndedAt.Sub(*run.StartedAt).Milliseconds())
		}
	}
	doc := junitSuites{
		Name:     run.SuiteID,
		Tests:    suite.Tests,
		Failures: suite.Failures,
		Errors:   suite.Errors,
		Skipped:  suite.Skipped,
		Time:     suite.Time,
		Suites:   []junitSuite{suite},
	}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, errs.E(errs.Other, "junit: run %s: %w", run.ID, err)
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

// detail is the body of a failure or error: the reason and, when the
// command ran, its exit code.
func detail(r *wire.CaseResult) string {
	if r.ExitCode == nil {
		return r.Reason
	}
	return fmt.Sprintf("%s\nexit code: %d", r.Reason, *r.ExitCode)
}

// seconds formats milliseconds as JUnit's decimal seconds.
func seconds(ms int64) string {
	return fmt.Sprintf("%.3f", float64(ms)/1000)
}
