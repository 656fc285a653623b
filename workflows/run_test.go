package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/activities/evalrun"
	"github.com/primerhq/primer/wire"
)

// runFakes are the run workflow's activities, mocked: they record what the
// workflow asked for and answer from a script.
type runFakes struct {
	mu sync.Mutex

	total, concurrency, retries int

	// caseTime is how long each RunCase takes (simulated time).
	caseTime time.Duration
	// outcome answers a RunCase; nil passes every case.
	outcome func(in evalrun.RunCaseInput) evalrun.RunCaseOutput
	// acquireErr, when set, answers the n-th acquire (1-based).
	acquireErr func(n int) error

	prepared []evalrun.PrepareRunInput
	acquires int
	cases    []evalrun.RunCaseInput
	verdicts map[int]string
	released []evalrun.ReleaseWorkspaceInput
	failed   []evalrun.FailCaseInput
	finished []evalrun.FinishRunInput
	canceled int // RunCase activities that saw their cancellation

	inflight, maxInflight int
}

func newRunFakes(total, concurrency, retries int) *runFakes {
	return &runFakes{total: total, concurrency: concurrency, retries: retries,
		caseTime: time.Second, verdicts: map[int]string{}}
}

// runs counts the RunCase executions of each ordinal.
func (f *runFakes) runs() map[int]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := map[int]int{}
	for _, in := range f.cases {
		n[in.Ordinal]++
	}
	return n
}

func (f *runFakes) register(env *testsuite.TestWorkflowEnvironment) {
	var a *evalrun.Activities
	env.OnActivity(a.PrepareRun, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in evalrun.PrepareRunInput) (evalrun.PrepareRunOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.prepared = append(f.prepared, in)
			id := in.RunID
			if id == "" {
				id = in.WorkflowID
			}
			return evalrun.PrepareRunOutput{RunID: id, Total: f.total, Concurrency: f.concurrency, Retries: f.retries,
				TemplateID: "tmpl", CaseTimeout: time.Minute, StartTimeout: time.Minute}, nil
		})
	env.OnActivity(a.AcquireWorkspace, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in evalrun.AcquireWorkspaceInput) (evalrun.AcquireWorkspaceOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.acquires++
			if f.acquireErr != nil {
				if err := f.acquireErr(f.acquires); err != nil {
					return evalrun.AcquireWorkspaceOutput{}, err
				}
			}
			return evalrun.AcquireWorkspaceOutput{WorkspaceID: fmt.Sprintf("ws-%d", f.acquires)}, nil
		})
	// Each case takes caseTime of the workflow's clock, so cases overlap.
	env.OnActivity(a.RunCase, mock.Anything, mock.Anything).After(f.caseTime).Return(
		func(_ context.Context, in evalrun.RunCaseInput) (evalrun.RunCaseOutput, error) {
			out := evalrun.RunCaseOutput{Verdict: "pass"}
			if f.outcome != nil {
				out = f.outcome(in)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			f.cases = append(f.cases, in)
			if !out.Infra || in.Final {
				if v, done := f.verdicts[in.Ordinal]; done {
					return evalrun.RunCaseOutput{Verdict: v, Skipped: true}, nil
				}
				f.verdicts[in.Ordinal] = out.Verdict
			}
			return out, nil
		})
	// In flight counts RunCase activities started and not yet completed,
	// as the workflow sees them.
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "RunCase" {
			f.mu.Lock()
			f.inflight++
			f.maxInflight = max(f.maxInflight, f.inflight)
			f.mu.Unlock()
		}
	})
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		if info.ActivityType.Name == "RunCase" {
			f.mu.Lock()
			f.inflight--
			f.mu.Unlock()
		}
	})
	env.SetOnActivityCanceledListener(func(info *activity.Info) {
		if info.ActivityType.Name == "RunCase" {
			f.mu.Lock()
			f.inflight--
			f.canceled++
			f.mu.Unlock()
		}
	})
	env.OnActivity(a.ReleaseWorkspace, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in evalrun.ReleaseWorkspaceInput) (evalrun.ReleaseWorkspaceOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.released = append(f.released, in)
			return evalrun.ReleaseWorkspaceOutput{Released: true}, nil
		})
	env.OnActivity(a.FailCase, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in evalrun.FailCaseInput) (evalrun.FailCaseOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.failed = append(f.failed, in)
			if in.Final {
				f.verdicts[in.Ordinal] = "error"
			}
			return evalrun.FailCaseOutput{Verdict: "error"}, nil
		})
	env.OnActivity(a.FinishRun, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in evalrun.FinishRunInput) (evalrun.FinishRunOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.finished = append(f.finished, in)
			out := evalrun.FinishRunOutput{Status: in.Status, Total: f.total}
			for _, v := range f.verdicts {
				switch v {
				case "pass":
					out.Pass++
				case "fail":
					out.Fail++
				case "error":
					out.Error++
				}
			}
			return out, nil
		})
}

// newRunEnv returns a test environment running the run workflow on f.
func newRunEnv(t *testing.T, f *runFakes) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(newTestLogger(t))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	Register(env, &activities.Activities{}, nil, nil)
	f.register(env)
	return env
}

// runResult runs the workflow to its end and returns its output.
func runResult(t *testing.T, env *testsuite.TestWorkflowEnvironment, in RunInput) RunOutput {
	t.Helper()
	env.ExecuteWorkflow(RunWorkflowName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var out RunOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every case runs exactly once, never more than concurrency at a time,
// on concurrency workspaces that are reset between cases and released by
// FinishRun.
func TestRunAllCasesOnceWithBoundedConcurrency(t *testing.T) {
	f := newRunFakes(20, 3, 2)
	env := newRunEnv(t, f)
	out := runResult(t, env, RunInput{RunID: "run-1", SuiteID: "s"})

	if out.Status != wire.RunSucceeded || out.Pass != 20 {
		t.Errorf("output = %+v, want succeeded with 20 passes", out)
	}
	runs := f.runs()
	for ord := range 20 {
		if runs[ord] != 1 {
			t.Errorf("case %d ran %d times, want 1", ord, runs[ord])
		}
	}
	if len(runs) != 20 {
		t.Errorf("ran %d distinct cases, want 20", len(runs))
	}
	if f.maxInflight != 3 {
		t.Errorf("at most %d cases ran at once, want 3", f.maxInflight)
	}
	if f.acquires != 3 {
		t.Errorf("acquired %d workspaces, want 3", f.acquires)
	}
	// The first case on a workspace starts on it as made; every later one
	// resets it.
	seen := map[string]bool{}
	for _, in := range f.cases {
		if in.Reset != seen[in.WorkspaceID] {
			t.Errorf("case %d on %s: reset %v, want %v", in.Ordinal, in.WorkspaceID, in.Reset, seen[in.WorkspaceID])
		}
		seen[in.WorkspaceID] = true
		if in.Attempt != 1 || in.Final || in.RunID != "run-1" {
			t.Errorf("case input = %+v", in)
		}
	}
	if len(f.released) != 0 {
		t.Errorf("released %+v before the end; FinishRun releases them", f.released)
	}
	if len(f.finished) != 1 || f.finished[0].Status != wire.RunSucceeded || f.finished[0].RunID != "run-1" {
		t.Errorf("finished = %+v", f.finished)
	}
}

// A case whose infrastructure failed runs again on another workspace, up
// to Retries more times (Final on the last), and each broken workspace is
// released; a failing case is never retried.
func TestRunRetriesInfraNotFailures(t *testing.T) {
	f := newRunFakes(6, 2, 2)
	f.outcome = func(in evalrun.RunCaseInput) evalrun.RunCaseOutput {
		switch {
		case in.Ordinal == 1: // lost on every workspace
			return evalrun.RunCaseOutput{Verdict: "error", Infra: true, Reason: "workspace gone"}
		case in.Ordinal == 3 && in.Attempt == 1: // lost once
			return evalrun.RunCaseOutput{Verdict: "error", Infra: true, Reason: "connection lost"}
		case in.Ordinal == 4:
			return evalrun.RunCaseOutput{Verdict: "fail", Reason: "exit code 1, want 0"}
		}
		return evalrun.RunCaseOutput{Verdict: "pass"}
	}
	env := newRunEnv(t, f)
	out := runResult(t, env, RunInput{RunID: "run-2", SuiteID: "s"})
	if out.Pass != 4 || out.Fail != 1 || out.Error != 1 {
		t.Errorf("output = %+v, want 4 pass, 1 fail, 1 error", out)
	}

	var tries = map[int][]evalrun.RunCaseInput{}
	for _, in := range f.cases {
		tries[in.Ordinal] = append(tries[in.Ordinal], in)
	}
	if got := tries[1]; len(got) != 3 {
		t.Fatalf("case 1 ran %d times, want 3 (1 + 2 retries)", len(got))
	}
	var wss []string
	for i, in := range tries[1] {
		if in.Attempt != i+1 || in.Final != (i == 2) {
			t.Errorf("case 1 try %d: attempt %d final %v", i, in.Attempt, in.Final)
		}
		if i > 0 && !in.Reset {
			t.Errorf("case 1 retry %d does not reset", i)
		}
		if slices.Contains(wss, in.WorkspaceID) {
			t.Errorf("case 1 ran twice on %s", in.WorkspaceID)
		}
		wss = append(wss, in.WorkspaceID)
	}
	if got := tries[3]; len(got) != 2 || got[0].WorkspaceID == got[1].WorkspaceID || got[1].Final {
		t.Errorf("case 3 tries = %+v, want 2 on different workspaces, not final", got)
	}
	if got := tries[4]; len(got) != 1 {
		t.Errorf("failing case 4 ran %d times, want 1", len(got))
	}
	// Four broken workspaces (three for case 1, one for case 3) released
	// as broken, and nothing else before the end.
	var broken []string
	for _, r := range f.released {
		if !r.Broken {
			t.Errorf("released %s not broken", r.WorkspaceID)
		}
		broken = append(broken, r.WorkspaceID)
	}
	want := append(slices.Clone(wss), tries[3][0].WorkspaceID)
	slices.Sort(broken)
	slices.Sort(want)
	if !slices.Equal(broken, want) {
		t.Errorf("released %v, want %v", broken, want)
	}
	if len(f.failed) != 0 {
		t.Errorf("FailCase called %+v; RunCase records its own attempts", f.failed)
	}
}

// A slot that cannot get a workspace records an error attempt for its
// case; when the pool or template is gone the run fails at once, and the
// cases not dispatched stay for FinishRun to cancel.
func TestRunFailsWhenWorkspacesCannotBeHad(t *testing.T) {
	f := newRunFakes(5, 1, 2)
	f.acquireErr = func(n int) error {
		// Acquires 2 to 4 are one activity with its retries.
		if n >= 2 && n <= 4 {
			return temporal.NewApplicationError("run run-3: acquire: workspace ws-x did not start", "unavailable")
		}
		if n >= 5 {
			return temporal.NewNonRetryableApplicationError("run run-3: acquire: template_id: template t not found", "invalid", nil)
		}
		return nil
	}
	f.outcome = func(in evalrun.RunCaseInput) evalrun.RunCaseOutput {
		return evalrun.RunCaseOutput{Verdict: "error", Infra: true, Reason: "lost"}
	}
	env := newRunEnv(t, f)
	out := runResult(t, env, RunInput{RunID: "run-3", SuiteID: "s"})
	if out.Status != wire.RunFailed {
		t.Errorf("status = %q, want failed", out.Status)
	}
	if len(f.finished) != 1 || f.finished[0].Status != wire.RunFailed || f.finished[0].Reason == "" {
		t.Errorf("finished = %+v", f.finished)
	}
	// Case 0: attempt 1 on ws-1 (lost), attempt 2 cannot acquire (retryable:
	// an error attempt, not final), attempt 3 cannot either (gone: final).
	if len(f.failed) != 2 || f.failed[0].Final || f.failed[0].Attempt != 2 || !f.failed[1].Final || f.failed[1].Attempt != 3 {
		t.Errorf("failed attempts = %+v", f.failed)
	}
	if runs := f.runs(); len(runs) != 1 {
		t.Errorf("ran cases %v, want only case 0", runs)
	}
}

func decodeRunContinue(t *testing.T, err error) RunInput {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	if can.WorkflowType.Name != RunWorkflowName {
		t.Errorf("continued as %q", can.WorkflowType.Name)
	}
	var next RunInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	return next
}

// After CasesPerRun cases the run continues as new with its cursor and
// the workspaces its slots hold; the next run goes on with them (no new
// acquire, a reset first) and no case runs twice or is skipped.
func TestRunContinuesAsNewWithCursorAndWorkspaces(t *testing.T) {
	f := newRunFakes(11, 2, 2)
	in := RunInput{RunID: "run-4", SuiteID: "s", CasesPerRun: 4}
	var runs int
	for {
		runs++
		if runs > 10 {
			t.Fatal("more than 10 runs")
		}
		env := newRunEnv(t, f)
		before := len(f.cases)
		env.ExecuteWorkflow(RunWorkflowName, in)
		err := env.GetWorkflowError()
		if err == nil {
			break
		}
		next := decodeRunContinue(t, err)
		if next.State == nil {
			t.Fatal("continued without state")
		}
		if got := len(f.cases) - before; got != 4 {
			t.Errorf("run %d dispatched %d cases, want 4", runs, got)
		}
		if next.State.Next != 4*runs {
			t.Errorf("run %d: cursor %d, want %d", runs, next.State.Next, 4*runs)
		}
		if len(next.State.Slots) != 2 {
			t.Errorf("run %d: carried %+v, want 2 held workspaces", runs, next.State.Slots)
		}
		for _, s := range next.State.Slots {
			if s.WorkspaceID == "" || !s.Used {
				t.Errorf("carried slot %+v", s)
			}
		}
		if next.RunID != "run-4" || next.CasesPerRun != 4 || next.State.RunID != "run-4" {
			t.Errorf("next input = %+v", next)
		}
		in = next
	}
	if runs != 3 {
		t.Errorf("%d workflow runs, want 3 (4 + 4 + 3 cases)", runs)
	}
	if len(f.prepared) != 1 {
		t.Errorf("PrepareRun ran %d times, want once", len(f.prepared))
	}
	if f.acquires != 2 {
		t.Errorf("acquired %d workspaces, want 2 held across the runs", f.acquires)
	}
	for ord, n := range f.runs() {
		if n != 1 {
			t.Errorf("case %d ran %d times", ord, n)
		}
	}
	if len(f.runs()) != 11 {
		t.Errorf("ran %d cases, want 11", len(f.runs()))
	}
	// A held workspace is reset before the next run's first case on it.
	seen := map[string]bool{}
	for _, c := range f.cases {
		if c.Reset != seen[c.WorkspaceID] {
			t.Errorf("case %d on %s: reset %v", c.Ordinal, c.WorkspaceID, c.Reset)
		}
		seen[c.WorkspaceID] = true
	}
	if len(f.finished) != 1 || f.finished[0].Status != wire.RunSucceeded {
		t.Errorf("finished = %+v", f.finished)
	}
}

// A run continued with fewer cases left than workspaces held releases the
// surplus at once.
func TestRunReleasesSurplusHeldWorkspaces(t *testing.T) {
	f := newRunFakes(5, 3, 2)
	env := newRunEnv(t, f)
	in := RunInput{RunID: "run-5", SuiteID: "s", State: &RunState{
		RunID: "run-5", Total: 5, Concurrency: 3, Retries: 2, CaseTimeout: time.Minute, StartTimeout: time.Minute,
		Next: 4, Slots: []RunSlot{{Slot: 2, WorkspaceID: "ws-c", Used: true}, {Slot: 0, WorkspaceID: "ws-a", Used: true}, {Slot: 1, WorkspaceID: "ws-b", Used: true}},
	}}
	runResult(t, env, in)
	if len(f.cases) != 1 || f.cases[0].Ordinal != 4 || f.cases[0].WorkspaceID != "ws-a" || !f.cases[0].Reset {
		t.Errorf("cases = %+v, want case 4 on ws-a with a reset", f.cases)
	}
	if len(f.released) != 2 || f.released[0].WorkspaceID != "ws-b" || f.released[1].WorkspaceID != "ws-c" || f.released[0].Broken {
		t.Errorf("released = %+v, want ws-b and ws-c", f.released)
	}
	if f.acquires != 0 || len(f.prepared) != 0 {
		t.Errorf("acquires %d, prepares %d; want none", f.acquires, len(f.prepared))
	}
}

// Canceling a run cancels the cases in flight (and waits for them), stops
// dispatching, and finishes the run canceled, which releases its
// workspaces and cancels the cases not final.
func TestRunCancel(t *testing.T) {
	f := newRunFakes(50, 4, 2)
	f.caseTime = time.Minute // cancel in the middle of the third round
	env := newRunEnv(t, f)
	env.RegisterDelayedCallback(env.CancelWorkflow, 2*time.Minute+30*time.Second)
	env.ExecuteWorkflow(RunWorkflowName, RunInput{RunID: "run-6", SuiteID: "s"})
	var canceled *temporal.CanceledError
	if err := env.GetWorkflowError(); !errors.As(err, &canceled) {
		t.Fatalf("workflow error = %v, want canceled", err)
	}
	if len(f.finished) != 1 || f.finished[0].Status != wire.RunCanceled || f.finished[0].RunID != "run-6" {
		t.Fatalf("finished = %+v, want one canceled finish", f.finished)
	}
	if n := len(f.runs()); n != 8 {
		t.Errorf("%d cases completed, want 8 (2 rounds of 4)", n)
	}
	if f.canceled != 4 || f.inflight != 0 {
		t.Errorf("%d cases canceled, %d still in flight; want the 4 in flight canceled", f.canceled, f.inflight)
	}
}

// A run a schedule started has no run id: PrepareRun makes the run from
// the suite with the workflow's id, and every later activity uses it.
func TestRunScheduleStartedUsesWorkflowID(t *testing.T) {
	f := newRunFakes(3, 2, 2)
	env := newRunEnv(t, f)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "run-nightly-2024-01-01T00:00:00Z"})
	var upserted []string
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		if v, ok := sa.GetKeyword(searchKeyRun); ok {
			upserted = append(upserted, v)
		}
	}).Return(nil)
	out := runResult(t, env, RunInput{SuiteID: "nightly", TriggeredBy: "schedule suite-nightly"})
	const wid = "run-nightly-2024-01-01T00:00:00Z"
	if len(f.prepared) != 1 || f.prepared[0].RunID != "" || f.prepared[0].WorkflowID != wid ||
		f.prepared[0].SuiteID != "nightly" || f.prepared[0].TriggeredBy != "schedule suite-nightly" {
		t.Errorf("prepared = %+v", f.prepared)
	}
	for _, c := range f.cases {
		if c.RunID != wid {
			t.Errorf("case run id %q, want %q", c.RunID, wid)
		}
	}
	if len(f.finished) != 1 || f.finished[0].RunID != wid || out.Pass != 3 {
		t.Errorf("finished = %+v, output %+v", f.finished, out)
	}
	if !slices.Equal(upserted, []string{wid}) {
		t.Errorf("upserted PrimerRun %v, want [%s]", upserted, wid)
	}
}

// A run's workflow id is the run's id, never reused, with the suite and
// run as search attributes.
func TestRunStartOptions(t *testing.T) {
	o := RunStartOptions("acme", "nightly", "run-0123456789abcdef")
	if o.ID != "run-0123456789abcdef" || o.TaskQueue != TaskQueue {
		t.Errorf("id/queue = %q/%q", o.ID, o.TaskQueue)
	}
	if suite, _ := o.TypedSearchAttributes.GetKeyword(searchKeySuite); suite != "nightly" {
		t.Errorf("%s = %q", SearchAttrSuite, suite)
	}
	if run, _ := o.TypedSearchAttributes.GetKeyword(searchKeyRun); run != "run-0123456789abcdef" {
		t.Errorf("%s = %q", SearchAttrRun, run)
	}
	if _, ok := SearchAttributes()[SearchAttrSuite]; !ok {
		t.Errorf("%s is not registered", SearchAttrSuite)
	}
}

// A long run keeps every workflow run's history under 10,000 events: it
// continues as new after RunCasesPerRun cases. The count is the bound of
// history_test.go's historyCounter (every activity its own workflow task).
func TestRunHistoryStaysBounded(t *testing.T) {
	const total, concurrency = 2500, 32
	f := newRunFakes(total, concurrency, 2)
	f.caseTime = 100 * time.Millisecond
	in := RunInput{RunID: "run-big", SuiteID: "s"}
	runs, maxEvents := 0, 0
	for {
		runs++
		env := newRunEnv(t, f)
		acts := 0
		env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
			acts++
			if info.ActivityType.Name == "RunCase" {
				f.mu.Lock()
				f.inflight--
				f.mu.Unlock()
			}
		})
		env.ExecuteWorkflow(RunWorkflowName, in)
		c := historyCounter{acts: acts}
		maxEvents = max(maxEvents, c.events())
		if n := c.events(); n >= 10_000 {
			t.Fatalf("run %d: about %d events, want under 10,000", runs, n)
		}
		err := env.GetWorkflowError()
		if err == nil {
			break
		}
		in = decodeRunContinue(t, err)
	}
	t.Logf("%d cases at concurrency %d: %d workflow runs, largest about %d events", total, concurrency, runs, maxEvents)
	if want := (total + RunCasesPerRun - 1) / RunCasesPerRun; runs != want {
		t.Errorf("%d workflow runs, want %d", runs, want)
	}
	got := f.runs()
	if len(got) != total {
		t.Errorf("ran %d cases, want %d", len(got), total)
	}
	for ord, n := range got {
		if n != 1 {
			t.Errorf("case %d ran %d times", ord, n)
		}
	}
	if f.acquires != concurrency {
		t.Errorf("acquired %d workspaces, want %d held across the runs", f.acquires, concurrency)
	}
}
