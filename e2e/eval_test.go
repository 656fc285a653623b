package e2e

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/activities/evalrun"
	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
)

// This file runs eval suites end to end on the local backend: a run's
// results in every format, a comparison of two runs that a CI job gates
// on, bad documents, and a suite's Temporal Schedule.

// script is a case command run with sh -c.
func script(s string) eval.Command { return eval.Command{Script: s} }

// waitRun follows the run until it ends and returns it.
func waitRun(t *testing.T, api *client.Client, id string, d time.Duration) *wire.RunView {
	t.Helper()
	ctx := ctxT(t, d)
	run, err := api.FollowRun(ctx, id, nil)
	if err != nil {
		t.Fatalf("follow run %s: %v", id, err)
	}
	return run
}

// verdicts maps each case id of the run to its verdict.
func verdicts(t *testing.T, api *client.Client, runID string) map[string]string {
	t.Helper()
	results, err := api.RunResults(ctxT(t, time.Minute), runID)
	if err != nil {
		t.Fatalf("results of %s: %v", runID, err)
	}
	out := map[string]string{}
	for _, r := range results {
		if r.Status != wire.CaseDone {
			t.Errorf("run %s: case %s is %s, want done", runID, r.CaseID, r.Status)
		}
		out[r.CaseID] = r.Verdict
	}
	return out
}

// runWorkspaces lists the workspaces still labelled as the run's.
func runWorkspaces(t *testing.T, api *client.Client, runID string) []string {
	t.Helper()
	ws, err := api.ListWorkspaces(ctxT(t, 30*time.Second), client.WorkspaceListOptions{})
	if err != nil {
		t.Fatalf("list workspaces: %v", err)
	}
	var out []string
	for _, w := range ws {
		if w.Labels[evalrun.LabelRun] == runID {
			out = append(out, w.ID+" ("+w.Phase+")")
		}
	}
	return out
}

// noWorkspaceLeft waits until no workspace carries the run's label.
func noWorkspaceLeft(t *testing.T, api *client.Client, runID string) {
	t.Helper()
	eventually(t, time.Minute, "no workspace of run "+runID+" left", func() bool {
		return len(runWorkspaces(t, api, runID)) == 0
	})
}

// junitCounts parses a JUnit document and returns its totals.
func junitCounts(t *testing.T, body io.Reader) (tests, failures, errored int) {
	t.Helper()
	var doc struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Errors   int `xml:"errors,attr"`
			Cases    []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Error   *struct{} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	data, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("JUnit XML does not parse: %v\n%s", err, data)
	}
	for _, s := range doc.Suites {
		n, f, e := 0, 0, 0
		for _, c := range s.Cases {
			n++
			if c.Failure != nil {
				f++
			}
			if c.Error != nil {
				e++
			}
		}
		if n != s.Tests || f != s.Failures || e != s.Errors {
			t.Errorf("JUnit totals tests=%d failures=%d errors=%d disagree with its testcases (%d, %d, %d)", s.Tests, s.Failures, s.Errors, n, f, e)
		}
		tests, failures, errored = tests+n, failures+f, errored+e
	}
	return tests, failures, errored
}

// TestEvalOnLocal runs a suite on the local backend: results as JSON, JSONL
// and JUnit; two runs in which one case flips each way, compared through
// the API and through primectl, whose exit code gates a CI job; canceling a
// finished run; bad documents that create nothing.
func TestEvalOnLocal(t *testing.T) {
	p := startPrimer(t)
	ctx := ctxT(t, 5*time.Minute)
	state := filepath.Join(t.TempDir(), "state")
	setState := func(s string) {
		t.Helper()
		if err := os.WriteFile(state, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const apiKey = "sk-e2e-0a1b2c3d4e5f"
	score := func(v float64) string { return fmt.Sprintf(`{"score": %g, "metrics": {"tokens": 12}}`, v) }
	spec := eval.SuiteSpec{
		ID:          "flips",
		TemplateID:  wire.DefaultTemplateID,
		Concurrency: 2,
		Defaults:    eval.CaseDefaults{Env: map[string]string{"API_KEY": apiKey}},
		Cases: []eval.Case{
			{ID: "hello", Command: script(`echo "key $API_KEY from $(basename $PWD)"`), Expect: eval.Expect{StdoutContains: []string{" from ws-"}}},
			{ID: "a", Command: script("grep -q a-pass " + state)},
			{ID: "b", Command: script("grep -q b-pass " + state)},
			{ID: "scored", Files: map[string]eval.File{"score.json": eval.Text(score(0.5))},
				Command:   script(`echo out > out.txt; grep -q b-pass ` + state + ` && printf '` + score(0.9) + `' > score.json`),
				ScoreFile: "score.json", Collect: []string{"out.txt"}},
			{ID: "wrong-exit", Command: script("exit 3"), Expect: eval.Expect{ExitCode: intp(3)}, Labels: map[string]string{"kind": "exit"}},
		},
	}
	if _, err := p.api.CreateSuite(ctx, spec); err != nil {
		t.Fatalf("create suite: %v", err)
	}

	setState("a-pass")
	run1, err := p.api.CreateRun(ctx, "flips", wire.RunRequest{TriggeredBy: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(run1.ID, "run-") || run1.Total != 5 || run1.Trigger != wire.TriggerUser || run1.TriggeredBy != "e2e" {
		t.Errorf("run = %+v; want run-..., 5 cases, triggered by the user e2e", run1.Run)
	}
	done1 := waitRun(t, p.api, run1.ID, 2*time.Minute)
	if done1.Status != wire.RunSucceeded || done1.Progress.Pass != 3 || done1.Progress.Fail != 2 || done1.Progress.Error != 0 {
		t.Fatalf("run 1 = %s %+v; want succeeded with 3 pass, 2 fail", done1.Status, done1.Progress)
	}
	if got := verdicts(t, p.api, run1.ID); got["a"] != eval.VerdictPass || got["b"] != eval.VerdictFail || got["hello"] != eval.VerdictPass ||
		got["wrong-exit"] != eval.VerdictPass || got["scored"] != eval.VerdictFail {
		t.Errorf("run 1 verdicts = %v", got)
	}
	noWorkspaceLeft(t, p.api, run1.ID)

	setState("b-pass")
	run2, err := p.api.CreateRun(ctx, "flips", wire.RunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	done2 := waitRun(t, p.api, run2.ID, 2*time.Minute)
	if done2.Progress.Pass != 4 || done2.Progress.Fail != 1 {
		t.Fatalf("run 2 progress = %+v; want 4 pass, 1 fail", done2.Progress)
	}
	results, err := p.api.RunResults(ctx, run2.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		var attempts []eval.Attempt
		_ = json.Unmarshal(r.Attempts, &attempts)
		if len(attempts) != 1 || !strings.HasPrefix(attempts[0].WorkspaceID, "ws-") {
			t.Errorf("case %s attempts = %s; want one, on a workspace", r.CaseID, r.Attempts)
		}
		if r.CaseID == "hello" && !strings.Contains(r.Stdout, "key [redacted] from ws-") {
			t.Errorf("hello's stdout = %q; want the env value the command printed redacted", r.Stdout)
		}
		if r.CaseID != "scored" {
			continue
		}
		var arts []eval.Artifact
		_ = json.Unmarshal(r.Artifacts, &arts)
		if r.Score == nil || *r.Score != 0.9 || r.Metrics["tokens"] != 12 || len(arts) != 1 || string(arts[0].Data) != "out\n" {
			t.Errorf("scored = score %v metrics %v artifacts %s", r.Score, r.Metrics, r.Artifacts)
		}
	}

	// Compare: a regressed, b fixed; the score went up.
	cmp, err := p.api.CompareRuns(ctx, run2.ID, run1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Regressions) != 1 || cmp.Regressions[0].Case != "a" || len(cmp.Fixes) != 2 || len(cmp.New) != 0 || len(cmp.Missing) != 0 {
		t.Errorf("compare = %+v; want a regressed, b and scored fixed", cmp)
	}
	if _, _, code := p.primectl("", "run", "compare", run2.ID, "--base", run1.ID); code != 3 {
		t.Errorf("primectl run compare with a regression exited %d, want 3", code)
	}
	if out, _, code := p.primectl("", "run", "compare", run2.ID, "--base", run2.ID); code != 0 {
		t.Errorf("primectl run compare of a run with itself exited %d, want 0: %s", code, out)
	}

	// JUnit parses and its counts match the run's.
	body, err := p.api.RunResultsRaw(ctx, run2.ID, client.FormatJUnit)
	if err != nil {
		t.Fatal(err)
	}
	tests, failures, errored := junitCounts(t, body)
	body.Close()
	if tests != 5 || failures != 1 || errored != 0 {
		t.Errorf("JUnit counts tests=%d failures=%d errors=%d; want 5, 1, 0", tests, failures, errored)
	}
	out, _, code := p.primectl("", "run", "results", run2.ID, "-o", "jsonl")
	if code != 0 || strings.Count(out, "\n") != 5 {
		t.Errorf("primectl run results -o jsonl = exit %d, %d lines; want 5", code, strings.Count(out, "\n"))
	}
	// The env value is nowhere a client can read.
	junit, _, _ := p.primectl("", "run", "results", run2.ID, "-o", "junit")
	suite, _, _ := p.primectl("", "get", "suite", "flips", "-o", "json")
	cases, _, _ := p.primectl("", "suite", "cases", "flips")
	for name, body := range map[string]string{"results jsonl": out, "results junit": junit, "suite": suite, "cases": cases} {
		if strings.Contains(body, apiKey) || body == "" {
			t.Errorf("%s: holds the env value or is empty: %.300s", name, body)
		}
	}

	// A run of a subset by label.
	sub, err := p.api.CreateRun(ctx, "flips", wire.RunRequest{Labels: map[string]string{"kind": "exit"}})
	if err != nil || sub.Total != 1 {
		t.Fatalf("run by label = %+v, %v; want one case", sub, err)
	}
	waitRun(t, p.api, sub.ID, time.Minute)

	// A finished run cannot be canceled.
	if _, err := p.api.CancelRun(ctx, run1.ID); !errs.Is(err, errs.Precondition) {
		t.Errorf("cancel a finished run = %v; want failed_precondition (409)", err)
	}

	// Bad documents are refused with the field, and create nothing.
	bad := []struct {
		name  string
		spec  eval.SuiteSpec
		field string
		kind  errs.Kind // Invalid unless set
	}{
		{"duplicate case ids", eval.SuiteSpec{ID: "bad", TemplateID: "default", Cases: []eval.Case{{ID: "x", Command: script("true")}, {ID: "x", Command: script("true")}}}, "spec.cases[1].id", 0},
		{"no cases", eval.SuiteSpec{ID: "bad", TemplateID: "default"}, "spec.cases", 0},
		{"unknown template", eval.SuiteSpec{ID: "bad", TemplateID: "nope", Cases: []eval.Case{{ID: "x", Command: script("true")}}}, "spec.template_id", errs.NotFound},
		{"unknown pool", eval.SuiteSpec{ID: "bad", PoolID: "nope", Cases: []eval.Case{{ID: "x", Command: script("true")}}}, "spec.pool_id", errs.NotFound},
		{"both", eval.SuiteSpec{ID: "bad", TemplateID: "default", PoolID: "p", Cases: []eval.Case{{ID: "x", Command: script("true")}}}, "spec.template_id", 0},
		{"path leaves", eval.SuiteSpec{ID: "bad", TemplateID: "default", Cases: []eval.Case{{ID: "x", Command: script("true"), Files: map[string]eval.File{"../x": eval.Text("x")}}}}, "spec.cases[0].files[../x]", 0},
		{"bad cron", eval.SuiteSpec{ID: "bad", TemplateID: "default", Schedule: &eval.Schedule{Cron: "61 * * * *"}, Cases: []eval.Case{{ID: "x", Command: script("true")}}}, "spec.schedule.cron", 0},
		{"concurrency", eval.SuiteSpec{ID: "bad", TemplateID: "default", Concurrency: 1000, Cases: []eval.Case{{ID: "x", Command: script("true")}}}, "spec.concurrency", 0},
	}
	for _, c := range bad {
		_, err := p.api.CreateSuite(ctx, c.spec)
		kind := c.kind
		if kind == errs.Other {
			kind = errs.Invalid
		}
		var e *errs.Error
		if !errs.Is(err, kind) || !errors.As(err, &e) || e.Field != c.field {
			t.Errorf("%s: create = %v; want %s naming %s", c.name, err, kind, c.field)
		}
		if _, err := p.api.GetSuite(ctx, "bad"); !errs.Is(err, errs.NotFound) {
			t.Errorf("%s: the suite exists after a refused create: %v", c.name, err)
		}
	}
}

func intp(n int) *int { return &n }

// TestEvalSchedule gives a suite a short interval: its Temporal Schedule
// starts runs by itself, pause stops that, trigger starts one now, and the
// schedule goes away with the suite.
func TestEvalSchedule(t *testing.T) {
	p := startPrimer(t)
	ctx := ctxT(t, 4*time.Minute)
	spec := eval.SuiteSpec{
		ID: "nightly", TemplateID: wire.DefaultTemplateID,
		Schedule: &eval.Schedule{Interval: eval.Duration(2 * time.Second)},
		Cases:    []eval.Case{{ID: "ok", Command: script("true")}},
	}
	if _, err := p.api.CreateSuite(ctx, spec); err != nil {
		t.Fatalf("create suite: %v", err)
	}
	scheduled := func() []wire.Run {
		runs, err := p.api.ListRuns(ctx, client.RunListOptions{SuiteID: "nightly"})
		if err != nil {
			t.Fatal(err)
		}
		var out []wire.Run
		for _, r := range runs {
			if r.Trigger == wire.TriggerSchedule {
				out = append(out, r)
			}
		}
		return out
	}
	eventually(t, time.Minute, "two runs started by the schedule, one finished", func() bool {
		runs := scheduled()
		return len(runs) >= 2 && runs[len(runs)-1].Status == wire.RunSucceeded
	})
	first := scheduled()[len(scheduled())-1]
	if first.TriggeredBy == "" || !strings.HasPrefix(first.ID, "run-") {
		t.Errorf("scheduled run = %+v; want run-... triggered by the schedule", first)
	}
	if got := verdicts(t, p.api, first.ID); got["ok"] != eval.VerdictPass {
		t.Errorf("scheduled run verdicts = %v", got)
	}

	tc := p.srv.TemporalClient()
	h := tc.ScheduleClient().GetHandle(ctx, "suite-nightly")
	if _, err := h.Describe(ctx); err != nil {
		t.Fatalf("the Temporal schedule suite-nightly: %v", err)
	}

	// Paused: no run starts by itself.
	su, err := p.api.PauseSchedule(ctx, "nightly")
	if err != nil || su.ScheduleStatus == nil || !su.ScheduleStatus.Paused {
		t.Fatalf("pause = %+v, %v; want paused", su, err)
	}
	d, err := h.Describe(ctx)
	if err != nil || !d.Schedule.State.Paused {
		t.Fatalf("Temporal schedule after pause: %+v, %v", d, err)
	}
	actions := d.Info.NumActions
	// Three intervals with nothing started: the schedule counts its actions.
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		d, err := h.Describe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Info.NumActions != actions {
			t.Fatalf("a paused schedule took action %d (was %d)", d.Info.NumActions, actions)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Trigger starts one now, paused or not.
	before := len(scheduled())
	if _, err := p.api.TriggerSchedule(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "a run started by trigger", func() bool { return len(scheduled()) == before+1 })

	// The schedule goes with the suite.
	if err := p.api.DeleteSuite(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Describe(ctx); err == nil {
		t.Errorf("the Temporal schedule still exists after its suite was deleted")
	}
}

// TestEvalCancel cancels a run while its cases run: the commands are
// killed, the cases not finished end canceled, the run ends canceled and
// holds no workspace.
func TestEvalCancel(t *testing.T) {
	p := startPrimer(t)
	ctx := ctxT(t, 3*time.Minute)
	marker := filepath.Join(t.TempDir(), "started")
	spec := eval.SuiteSpec{ID: "slow", TemplateID: wire.DefaultTemplateID, Concurrency: 2}
	for _, id := range []string{"s1", "s2", "s3", "s4"} {
		spec.Cases = append(spec.Cases, eval.Case{ID: id, Command: script("echo " + id + " >> " + marker + "; exec sleep 97.25")})
	}
	if _, err := p.api.CreateSuite(ctx, spec); err != nil {
		t.Fatal(err)
	}
	run, err := p.api.CreateRun(ctx, "slow", wire.RunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "two cases running", func() bool {
		data, _ := os.ReadFile(marker)
		return strings.Count(string(data), "\n") == 2
	})
	if _, err := p.api.CancelRun(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	done := waitRun(t, p.api, run.ID, 2*time.Minute)
	if done.Status != wire.RunCanceled || done.Progress.Canceled != 4 || done.Progress.Pass+done.Progress.Fail+done.Progress.Error != 0 {
		t.Errorf("canceled run = %s %+v; want canceled with every case canceled", done.Status, done.Progress)
	}
	noWorkspaceLeft(t, p.api, run.ID)
	eventually(t, 30*time.Second, "the cases' commands killed", func() bool {
		out, _ := exec.Command("pgrep", "-f", "sleep 97.25").Output()
		return len(strings.TrimSpace(string(out))) == 0
	})
	if _, err := p.api.CancelRun(ctx, run.ID); !errs.Is(err, errs.Precondition) {
		t.Errorf("cancel again = %v; want failed_precondition", err)
	}
}
