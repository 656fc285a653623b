package api

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	apiclient "github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
)

// TestTypedClientEval drives the suite and run routes through api/client,
// so the client's shapes are checked against the real handlers.
func TestTypedClientEval(t *testing.T) {
	h := newHarness(t)
	fs := h.withSchedules()
	ctx := context.Background()
	c := apiclient.New(h.url, apiclient.WithHTTPClient(h.http()), apiclient.WithToken(h.adminKey))

	// Suites: JSON with a schedule, JSONL, validation errors with their
	// field.
	spec := eval.SuiteSpec{ID: "nightly", TemplateID: "default", Schedule: &eval.Schedule{Cron: "@daily"},
		Cases: []eval.Case{{ID: "a", Command: eval.Command{Script: "true"}}, {ID: "b", Command: eval.Command{Args: []string{"false"}}}}}
	s, err := c.CreateSuite(ctx, spec)
	if err != nil || s.CaseCount != 2 || s.ScheduleStatus == nil || s.ScheduleStatus.ID != "suite-nightly" {
		t.Fatalf("create suite = %+v, %v", s, err)
	}
	bad := spec
	bad.ID, bad.Concurrency = "bad", 100
	if _, err := c.CreateSuite(ctx, bad); !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "spec.concurrency" {
		t.Fatalf("create bad suite: %v (field %q)", err, errs.FieldOf(err))
	}
	s, err = c.CreateSuiteJSONL(ctx, strings.NewReader(suiteJSONL("lines", 5)))
	if err != nil || s.ID != "lines" || s.CaseCount != 5 {
		t.Fatalf("create suite from JSONL = %+v, %v", s, err)
	}
	cases, err := c.SuiteCases(ctx, "nightly")
	if err != nil || len(cases) != 2 || cases[1].ID != "b" || cases[1].Command.Args[0] != "false" {
		t.Fatalf("suite cases = %+v, %v", cases, err)
	}
	list, err := c.ListSuites(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("list suites = %+v, %v", list, err)
	}
	if s, err = c.PauseSchedule(ctx, "nightly"); err != nil || !s.ScheduleStatus.Paused {
		t.Fatalf("pause = %+v, %v", s, err)
	}
	if s, err = c.ResumeSchedule(ctx, "nightly"); err != nil || s.ScheduleStatus.Paused {
		t.Fatalf("resume = %+v, %v", s, err)
	}
	if s, err = c.TriggerSchedule(ctx, "nightly"); err != nil || s.ScheduleStatus.NumActions != 1 {
		t.Fatalf("trigger = %+v, %v", s, err)
	}
	if _, err := c.PauseSchedule(ctx, "lines"); !errs.Is(err, errs.Precondition) {
		t.Fatalf("pause a suite without a schedule: %v", err)
	}
	spec.Schedule = nil
	if s, err = c.UpdateSuite(ctx, "nightly", spec); err != nil || s.ScheduleStatus != nil || fs.get("suite-nightly") != nil {
		t.Fatalf("update = %+v, %v", s, err)
	}
	if s, err = c.UpdateSuiteJSONL(ctx, "lines", strings.NewReader(suiteJSONL("lines", 3))); err != nil || s.CaseCount != 3 {
		t.Fatalf("update from JSONL = %+v, %v", s, err)
	}

	// Runs.
	h.expectRunStarts(2, nil)
	run, err := c.CreateRun(ctx, "nightly", wire.RunRequest{})
	if err != nil || run.Total != 2 || run.TriggeredBy != "api" || run.Final() {
		t.Fatalf("create run = %+v, %v", run, err)
	}
	other, err := c.CreateRun(ctx, "nightly", wire.RunRequest{Cases: []string{"a"}, TriggeredBy: "me"})
	if err != nil || other.Total != 1 || other.TriggeredBy != "me" {
		t.Fatalf("create run of a = %+v, %v", other, err)
	}
	if _, err := c.CreateRun(ctx, "nightly", wire.RunRequest{Cases: []string{"zzz"}}); !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "cases" {
		t.Fatalf("create run of an unknown case: %v", err)
	}
	runs, err := c.ListRuns(ctx, apiclient.RunListOptions{SuiteID: "nightly", Limit: 1})
	if err != nil || len(runs) != 1 || runs[0].ID != other.ID {
		t.Fatalf("list runs = %+v, %v", runs, err)
	}

	// FollowRun sees the progress and returns the finished run.
	seen := make(chan wire.Progress, 16)
	type done struct {
		run *wire.RunView
		err error
	}
	out := make(chan done, 1)
	go func() {
		r, err := c.FollowRun(ctx, run.ID, func(p wire.Progress) { seen <- p })
		out <- done{r, err}
	}()
	if p := <-seen; p.Pending != 2 {
		t.Fatalf("first progress %+v", p)
	}
	h.finish(t, run.ID, 0, eval.VerdictPass, "", 5, nil)
	h.finish(t, run.ID, 1, eval.VerdictFail, "exit code 1, want 0", 5, nil)
	if err := h.store.SetRunStatus(ctx, run.ID, wire.RunSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-out:
		if d.err != nil || d.run.Status != wire.RunSucceeded || d.run.Progress.Pass != 1 || d.run.Progress.Fail != 1 || !d.run.Final() {
			t.Fatalf("follow run = %+v, %v", d.run, d.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("FollowRun did not return after the run finished")
	}
	if _, err := c.FollowRun(ctx, "run-ghost", nil); !errs.Is(err, errs.NotFound) {
		t.Fatalf("follow an unknown run: %v", err)
	}

	results, err := c.RunResults(ctx, run.ID)
	if err != nil || len(results) != 2 || results[1].Reason != "exit code 1, want 0" {
		t.Fatalf("results = %+v, %v", results, err)
	}
	body, err := c.RunResultsRaw(ctx, run.ID, apiclient.FormatJUnit)
	if err != nil {
		t.Fatal(err)
	}
	xmlDoc, _ := io.ReadAll(body)
	body.Close()
	if !strings.Contains(string(xmlDoc), "<testcase") {
		t.Fatalf("JUnit = %s", xmlDoc)
	}
	cmp, err := c.CompareRuns(ctx, other.ID, run.ID)
	if err != nil || cmp.Base != run.ID || strings.Join(cmp.Missing, ",") != "b" {
		t.Fatalf("compare = %+v, %v", cmp, err)
	}
	if _, err := c.CompareRuns(ctx, other.ID, "run-ghost"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("compare with an unknown base: %v", err)
	}

	h.temporal.On("CancelWorkflow", mock.Anything, other.ID, "").Return(nil).Once()
	if r, err := c.CancelRun(ctx, other.ID); err != nil || r.ID != other.ID {
		t.Fatalf("cancel = %+v, %v", r, err)
	}
	if _, err := c.CancelRun(ctx, run.ID); !errs.Is(err, errs.Precondition) {
		t.Fatalf("cancel a finished run: %v", err)
	}
	if err := c.DeleteSuite(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSuite(ctx, "nightly"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("get a deleted suite: %v", err)
	}
}
