package eval

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// parsed is what a CI system reads of a JUnit document.
type parsed struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Suites   []struct {
		Name     string  `xml:"name,attr"`
		Tests    int     `xml:"tests,attr"`
		Failures int     `xml:"failures,attr"`
		Errors   int     `xml:"errors,attr"`
		Skipped  int     `xml:"skipped,attr"`
		Time     float64 `xml:"time,attr"`
		Cases    []struct {
			ClassName string  `xml:"classname,attr"`
			Name      string  `xml:"name,attr"`
			Time      float64 `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			SystemOut string `xml:"system-out"`
			SystemErr string `xml:"system-err"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnit(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	end := start.Add(90 * time.Second)
	run := &wire.Run{ID: "run-1", SuiteID: "py-basics", Status: wire.RunSucceeded, StartedAt: &start, EndedAt: &end}
	fail := done("b", VerdictFail, 2500, nil)
	fail.Reason, fail.ExitCode = `stdout does not contain "<ok> & 'done'"`, intp(1)
	fail.Stdout, fail.Stderr = "got \x00\x1b[31mred\x1b[0m <b>", "Traceback ]]> end"
	errored := done("c", VerdictError, 10, nil)
	errored.Reason = "workspace ws-1: lost"
	results := []wire.CaseResult{
		done("a", VerdictPass, 1234, fp(1)),
		fail,
		errored,
		{CaseID: "d", Status: wire.CaseCanceled},
		{CaseID: "e", Status: wire.CasePending},
	}
	out, err := JUnit(run, results)
	if err != nil {
		t.Fatalf("JUnit: %v", err)
	}
	if !strings.HasPrefix(string(out), xml.Header) {
		t.Errorf("no XML header:\n%s", out)
	}
	var doc parsed
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("parse back: %v\n%s", err, out)
	}
	if doc.Tests != 5 || doc.Failures != 1 || doc.Errors != 1 || doc.Skipped != 2 {
		t.Errorf("testsuites counts = %d/%d/%d/%d, want 5/1/1/2", doc.Tests, doc.Failures, doc.Errors, doc.Skipped)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d testsuites, want 1", len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Name != "py-basics" || s.Tests != 5 || s.Failures != 1 || s.Errors != 1 || s.Skipped != 2 || s.Time != 90 {
		t.Errorf("testsuite = %s tests %d failures %d errors %d skipped %d time %v", s.Name, s.Tests, s.Failures, s.Errors, s.Skipped, s.Time)
	}
	// The counts agree with the elements, as CI systems recount them.
	var failures, errors, skipped int
	for _, c := range s.Cases {
		if c.Failure != nil {
			failures++
		}
		if c.Error != nil {
			errors++
		}
		if c.Skipped != nil {
			skipped++
		}
		if c.ClassName != "py-basics" {
			t.Errorf("case %s classname = %q", c.Name, c.ClassName)
		}
	}
	if len(s.Cases) != s.Tests || failures != s.Failures || errors != s.Errors || skipped != s.Skipped {
		t.Errorf("elements: %d cases %d failures %d errors %d skipped; attributes say %d/%d/%d/%d",
			len(s.Cases), failures, errors, skipped, s.Tests, s.Failures, s.Errors, s.Skipped)
	}
	a, b, c, d := s.Cases[0], s.Cases[1], s.Cases[2], s.Cases[3]
	if a.Name != "a" || a.Time != 1.234 || a.Failure != nil || a.Error != nil || a.Skipped != nil {
		t.Errorf("passing case = %+v", a)
	}
	if b.Failure == nil || b.Failure.Message != fail.Reason || !strings.Contains(b.Failure.Text, "exit code: 1") || b.Time != 2.5 {
		t.Errorf("failing case = %+v", b)
	}
	// A NUL byte cannot be in XML: it becomes U+FFFD, the rest is kept.
	if b.SystemOut != "got \uFFFD\uFFFD[31mred\uFFFD[0m <b>" || b.SystemErr != fail.Stderr {
		t.Errorf("tails = %q, %q", b.SystemOut, b.SystemErr)
	}
	if c.Error == nil || c.Error.Message != "workspace ws-1: lost" {
		t.Errorf("error case = %+v", c)
	}
	if d.Skipped == nil || d.Skipped.Message != wire.CaseCanceled {
		t.Errorf("canceled case = %+v", d)
	}

	// A run not begun: the suite's time is the sum of its cases'.
	out, err = JUnit(&wire.Run{ID: "run-2", SuiteID: "s"}, []wire.CaseResult{done("a", VerdictPass, 1500, nil), done("b", VerdictPass, 500, nil)})
	if err != nil {
		t.Fatal(err)
	}
	doc = parsed{}
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Suites[0].Time != 2 || doc.Tests != 2 || doc.Failures != 0 {
		t.Errorf("run without times: %+v", doc.Suites[0])
	}

	// No results is an empty, valid suite.
	out, err = JUnit(run, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc = parsed{}
	if err := xml.Unmarshal(out, &doc); err != nil || doc.Tests != 0 || len(doc.Suites) != 1 {
		t.Errorf("empty run: %v %+v", err, doc)
	}
	if _, err := JUnit(nil, nil); err == nil {
		t.Error("JUnit(nil) passed")
	}
}
