package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities/evalrun"
	"github.com/primerhq/primer/wire"
)

// Names of the eval run workflow.
const (
	// RunWorkflowName is the registered name of RunWorkflow.
	RunWorkflowName = "EvalRunWorkflow"
)

// Search attributes of run workflows (Keyword), so the Temporal UI can
// filter runs by suite and run.
var (
	SearchAttrSuite = "PrimerSuite"
	SearchAttrRun   = "PrimerRun"
)

// Typed keys of SearchAttrSuite and SearchAttrRun.
var (
	searchKeySuite = temporal.NewSearchAttributeKeyKeyword(SearchAttrSuite)
	searchKeyRun   = temporal.NewSearchAttributeKeyKeyword(SearchAttrRun)
)

// RunSearchAttributes are the search attributes of a run's workflow: its
// tenant (its suite's), suite and id.
func RunSearchAttributes(tenantID, suiteID, runID string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(SearchAttrTenant.ValueSet(TenantOf(tenantID)),
		searchKeySuite.ValueSet(suiteID), searchKeyRun.ValueSet(runID))
}

// RunStartOptions returns the options a run's workflow starts with: its
// id is the run's id, never reused, with the tenant, suite and run as
// search attributes.
func RunStartOptions(tenantID, suiteID, runID string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                    runID,
		TaskQueue:             TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: RunSearchAttributes(tenantID, suiteID, runID),
	}
}

// Run tuning. Like the workspace constants they change what running
// workflows do: a change needs a workflow.GetVersion guard.
const (
	// RunCasesPerRun bounds the cases one workflow run dispatches before it
	// continues as new (about 6 events each, with a few per workspace
	// acquired), so a run of 10,000 cases keeps every history well under
	// 10,000 events.
	RunCasesPerRun = 1000
	// AcquireFailuresToFail is how many acquires in a row may fail (each
	// after its own retries) before the run fails: a template whose
	// workspaces never start would otherwise burn every case's retries.
	AcquireFailuresToFail = 5
)

// RunInput starts a run's workflow. A run made through the API has its
// row already (RunID set). A run a suite's schedule starts has only
// SuiteID: its first activity makes the run row from the suite, with the
// workflow's id as the run's id.
type RunInput struct {
	RunID   string
	SuiteID string
	// TriggeredBy names the schedule for a scheduled run.
	TriggeredBy string
	// CasesPerRun bounds the cases dispatched per workflow run before it
	// continues as new; zero means RunCasesPerRun.
	CasesPerRun int
	// State is carried over continue-as-new; nil on the first run.
	State *RunState
}

// RunState is what a run's workflow carries over continue-as-new: ids,
// counts and the workspaces its slots hold, never a case's spec.
type RunState struct {
	RunID        string
	Total        int
	Concurrency  int
	Retries      int
	CaseTimeout  time.Duration
	StartTimeout time.Duration
	// Next is the ordinal of the next case to dispatch: every case before
	// it has been run (or is final).
	Next int
	// Slots are the workspaces held by slots, by slot number.
	Slots []RunSlot
	// AcquireFailures counts the acquires that failed in a row.
	AcquireFailures int
}

// RunSlot is one slot of a run and the workspace it holds.
type RunSlot struct {
	Slot        int
	WorkspaceID string
	// Used is true once a case ran on the workspace: the next one resets it.
	Used bool
}

// RunOutput is a run's result.
type RunOutput struct {
	Status string
	Pass   int
	Fail   int
	Error  int
}

// runCaseMargin is added to a case's timeout for what RunCase does around
// the command (reset, files, collect).
const runCaseMargin = 10 * time.Minute

// Activity options of the run workflow. Every activity is idempotent, so
// Temporal may retry any of them after a worker dies.
var (
	prepareRunOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         backoff(30*time.Second, 10),
	}
	// runCaseOptions: StartToClose is set per run from its longest case;
	// the heartbeat notices a dead worker within seconds and delivers a
	// cancellation, and WaitForCancellation lets the activity kill its
	// command before the run cleans up.
	runCaseOptions = workflow.ActivityOptions{
		HeartbeatTimeout:    heartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy:         backoff(30*time.Second, 5),
	}
	// acquireOptions: StartToClose is the template's start timeout plus a
	// margin; a workspace that does not start is replaced by a retry.
	acquireOptions = workflow.ActivityOptions{
		HeartbeatTimeout:    heartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy:         backoff(30*time.Second, 3),
	}
	releaseOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         backoff(30*time.Second, 5),
	}
	failCaseOptions = workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         backoff(30*time.Second, 10),
	}
	// finishRunOptions retry for as long as it takes: a run that does not
	// finish would keep its workspaces.
	finishRunOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         backoff(time.Minute, 0),
	}
)

// RunWorkflow runs the cases of one eval run over at most the suite's
// concurrency of workspaces:
//
//   - PrepareRun (making the run's row first for a scheduled run) marks
//     the run running;
//   - min(concurrency, cases left) slots each hold one workspace
//     (AcquireWorkspace) and take the next case from a shared cursor
//     (RunCase; every case after a slot's first resets the workspace);
//   - a case whose infrastructure failed is run again on another
//     workspace (the broken one is released), up to the suite's retries;
//     a failing case is never run again;
//   - after CasesPerRun cases, or when the server suggests it, the slots
//     stop taking cases, the cases in flight finish, and the run
//     continues as new with the cursor and the held workspaces;
//   - FinishRun releases every workspace of the run, sets the final
//     status and counts, and notifies the suite's webhook.
//
// On cancellation the cases in flight are canceled (their commands
// killed), then, on a disconnected context, the run finishes canceled:
// its cases not final are canceled and its workspaces released.
func RunWorkflow(ctx workflow.Context, in RunInput) (out RunOutput, err error) {
	r := &runner{in: in, log: workflow.GetLogger(ctx), perRun: in.CasesPerRun}
	if r.perRun <= 0 {
		r.perRun = RunCasesPerRun
	}
	if in.State != nil {
		r.st = *in.State
	} else {
		final, err := r.prepare(ctx)
		if err != nil || final != "" {
			if err != nil && ctx.Err() == nil {
				return r.finish(ctx, wire.RunFailed, "prepare: "+errorMessage(err))
			}
			if err == nil {
				return RunOutput{Status: final}, nil
			}
		}
	}

	// Cleanup survives cancellation: finish on a context the cancellation
	// does not reach.
	defer func() {
		if !errors.Is(ctx.Err(), workflow.ErrCanceled) {
			return
		}
		dctx, cancel := workflow.NewDisconnectedContext(ctx)
		defer cancel()
		o, ferr := r.finish(dctx, wire.RunCanceled, "canceled")
		if ferr != nil {
			r.log.Error("finish a canceled run", "run_id", r.st.RunID, "error", ferr)
		}
		out = o
	}()
	if ctx.Err() != nil {
		return RunOutput{}, ctx.Err()
	}

	r.dispatch(ctx)
	switch {
	case ctx.Err() != nil:
		return RunOutput{}, ctx.Err()
	case r.fatal != "":
		return r.finish(ctx, wire.RunFailed, r.fatal)
	case r.st.Next < r.st.Total:
		next := r.in
		st := r.st
		st.Slots = r.held()
		next.State = &st
		r.log.Info("run continues as new", "run_id", r.st.RunID, "next", st.Next, "total", st.Total, "held", len(st.Slots))
		return RunOutput{}, workflow.NewContinueAsNewError(ctx, RunWorkflowName, next)
	}
	return r.finish(ctx, wire.RunSucceeded, "")
}

// runner is one workflow run of RunWorkflow.
type runner struct {
	in     RunInput
	st     RunState
	log    log.Logger
	perRun int
	// slots are the slots of this workflow run, by slot number.
	slots []*RunSlot
	// dispatched counts the cases this workflow run took; paused is set
	// once it is to stop taking them.
	dispatched int
	paused     bool
	// fatal is why the run cannot go on (its pool or template is gone).
	fatal string
}

// prepare runs PrepareRun and fills the state. final is the run's status
// when it was final already.
func (r *runner) prepare(ctx workflow.Context) (final string, err error) {
	var a *evalrun.Activities
	var p evalrun.PrepareRunOutput
	wid := workflow.GetInfo(ctx).WorkflowExecution.ID
	r.st.RunID = r.in.RunID
	if r.st.RunID == "" {
		r.st.RunID = wid
	}
	actx := workflow.WithActivityOptions(ctx, prepareRunOptions)
	if err := workflow.ExecuteActivity(actx, a.PrepareRun, evalrun.PrepareRunInput{
		RunID: r.in.RunID, SuiteID: r.in.SuiteID, TriggeredBy: r.in.TriggeredBy, WorkflowID: wid,
	}).Get(ctx, &p); err != nil {
		return "", err
	}
	r.st = RunState{
		RunID:        p.RunID,
		Total:        p.Total,
		Concurrency:  max(p.Concurrency, 1),
		Retries:      max(p.Retries, 0),
		CaseTimeout:  p.CaseTimeout,
		StartTimeout: p.StartTimeout,
	}
	if r.in.RunID == "" {
		// A schedule started the workflow without knowing the run's id.
		if err := workflow.UpsertTypedSearchAttributes(ctx, searchKeySuite.ValueSet(r.in.SuiteID), searchKeyRun.ValueSet(p.RunID)); err != nil {
			r.log.Warn("upsert run search attributes", "run_id", p.RunID, "error", err)
		}
	}
	return p.Final, nil
}

// dispatch runs the slots until there is no case left to take, the run is
// to continue as new, it is canceled, or it cannot go on; the cases in
// flight finish first.
func (r *runner) dispatch(ctx workflow.Context) {
	n := min(r.st.Concurrency, r.st.Total-r.st.Next)
	held := slices.Clone(r.st.Slots)
	slices.SortFunc(held, func(x, y RunSlot) int { return x.Slot - y.Slot })
	taken := map[int]bool{}
	for i := range held {
		s := held[i]
		if len(r.slots) >= n {
			// More workspaces held than cases left to run at once.
			r.release(ctx, s.WorkspaceID, false)
			continue
		}
		r.slots = append(r.slots, &s)
		taken[s.Slot] = true
	}
	for num := 0; len(r.slots) < n; num++ {
		if !taken[num] {
			r.slots = append(r.slots, &RunSlot{Slot: num})
		}
	}
	// The wait must not end early on cancellation: the canceled
	// activities are awaited, so cleanup runs after them.
	wg := workflow.NewWaitGroup(ctx)
	for _, s := range r.slots {
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			r.slot(ctx, s)
		})
	}
	wg.Wait(ctx)
}

// held lists the workspaces the slots hold, by slot.
func (r *runner) held() []RunSlot {
	var out []RunSlot
	for _, s := range r.slots {
		if s.WorkspaceID != "" {
			out = append(out, *s)
		}
	}
	return out
}

// slot runs cases one after the other on its workspace.
func (r *runner) slot(ctx workflow.Context, s *RunSlot) {
	for {
		ord, ok := r.take(ctx)
		if !ok {
			return
		}
		r.runCase(ctx, s, ord)
	}
}

// take returns the next case to run, unless the slots are to stop.
func (r *runner) take(ctx workflow.Context) (int, bool) {
	if ctx.Err() != nil || r.fatal != "" || r.paused || r.st.Next >= r.st.Total {
		return 0, false
	}
	if r.dispatched >= r.perRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
		r.paused = true
		return 0, false
	}
	ord := r.st.Next
	r.st.Next++
	r.dispatched++
	return ord, true
}

// runCase runs one case to its final result: on the slot's workspace, and
// after an infrastructure failure on another, up to Retries more times.
func (r *runner) runCase(ctx workflow.Context, s *RunSlot, ord int) {
	var a *evalrun.Activities
	for attempt := 1; ; attempt++ {
		final := attempt > r.st.Retries
		if s.WorkspaceID == "" {
			id, err := r.acquire(ctx, s.Slot)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				reason := "acquire a workspace: " + errorMessage(err)
				r.st.AcquireFailures++
				if nonRetryable(err) || r.st.AcquireFailures >= AcquireFailuresToFail {
					if r.fatal == "" {
						r.fatal = reason
					}
					final = true
				}
				r.failCase(ctx, ord, attempt, "", reason, final)
				if final {
					return
				}
				continue
			}
			r.st.AcquireFailures = 0
			s.WorkspaceID, s.Used = id, false
		}

		opts := runCaseOptions
		opts.StartToCloseTimeout = r.st.CaseTimeout + runCaseMargin
		actx := workflow.WithActivityOptions(ctx, opts)
		var out evalrun.RunCaseOutput
		err := workflow.ExecuteActivity(actx, a.RunCase, evalrun.RunCaseInput{
			RunID:       r.st.RunID,
			Ordinal:     ord,
			WorkspaceID: s.WorkspaceID,
			Attempt:     attempt,
			Final:       final,
			Reset:       s.Used || attempt > 1,
		}).Get(ctx, &out)
		if ctx.Err() != nil {
			// The workspace stays held; the canceled run releases it.
			return
		}
		if err != nil {
			// RunCase itself failed (its store, its worker): the attempt
			// is lost, and so is trust in the workspace.
			out = evalrun.RunCaseOutput{Infra: true, Reason: "run case: " + errorMessage(err)}
			r.failCase(ctx, ord, attempt, s.WorkspaceID, out.Reason, final)
		}
		if out.Skipped {
			return
		}
		s.Used = true
		if !out.Infra {
			return
		}
		r.release(ctx, s.WorkspaceID, true)
		s.WorkspaceID, s.Used = "", false
		if final {
			return
		}
	}
}

// acquire gets a running workspace for slot.
func (r *runner) acquire(ctx workflow.Context, slot int) (string, error) {
	var a *evalrun.Activities
	opts := acquireOptions
	opts.StartToCloseTimeout = r.st.StartTimeout + time.Minute
	actx := workflow.WithActivityOptions(ctx, opts)
	var out evalrun.AcquireWorkspaceOutput
	err := workflow.ExecuteActivity(actx, a.AcquireWorkspace, evalrun.AcquireWorkspaceInput{
		RunID: r.st.RunID, Slot: slot,
	}).Get(ctx, &out)
	return out.WorkspaceID, err
}

// release gives a workspace up; failing to does not stop the run: its
// labels still name the run, so FinishRun releases it.
func (r *runner) release(ctx workflow.Context, workspaceID string, broken bool) {
	var a *evalrun.Activities
	actx := workflow.WithActivityOptions(ctx, releaseOptions)
	if err := workflow.ExecuteActivity(actx, a.ReleaseWorkspace, evalrun.ReleaseWorkspaceInput{
		RunID: r.st.RunID, WorkspaceID: workspaceID, Broken: broken,
	}).Get(ctx, nil); err != nil && ctx.Err() == nil {
		r.log.Warn("release workspace", "run_id", r.st.RunID, "workspace_id", workspaceID, "error", errorMessage(err))
	}
}

// failCase records an attempt that never reached RunCase's end.
func (r *runner) failCase(ctx workflow.Context, ord, attempt int, workspaceID, reason string, final bool) {
	var a *evalrun.Activities
	actx := workflow.WithActivityOptions(ctx, failCaseOptions)
	if err := workflow.ExecuteActivity(actx, a.FailCase, evalrun.FailCaseInput{
		RunID: r.st.RunID, Ordinal: ord, Attempt: attempt, WorkspaceID: workspaceID, Reason: reason, Final: final,
	}).Get(ctx, nil); err != nil && ctx.Err() == nil {
		r.log.Warn("record a failed attempt", "run_id", r.st.RunID, "ordinal", ord, "error", errorMessage(err))
	}
}

// finish ends the run with status.
func (r *runner) finish(ctx workflow.Context, status, reason string) (RunOutput, error) {
	var a *evalrun.Activities
	actx := workflow.WithActivityOptions(ctx, finishRunOptions)
	var out evalrun.FinishRunOutput
	if err := workflow.ExecuteActivity(actx, a.FinishRun, evalrun.FinishRunInput{
		RunID: r.st.RunID, Status: status, Reason: reason,
	}).Get(ctx, &out); err != nil {
		return RunOutput{Status: status}, fmt.Errorf("run %s: finish: %w", r.st.RunID, err)
	}
	r.log.Info("run finished", "run_id", r.st.RunID, "status", out.Status, "pass", out.Pass, "fail", out.Fail, "error", out.Error)
	return RunOutput{Status: out.Status, Pass: out.Pass, Fail: out.Fail, Error: out.Error}, nil
}

// nonRetryable reports whether an activity error is final by its kind (a
// pool or template that is gone), not because its retries ran out.
func nonRetryable(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.NonRetryable()
}
