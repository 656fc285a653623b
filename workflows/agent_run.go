package workflows

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities/agentrun"
	"github.com/primerhq/primer/wire"
)

// SessionRunWorkflowName is the registered name of the agent run workflow.
const SessionRunWorkflowName = "SessionRunWorkflow"

// SignalCancelRun cancels a run (POST /v1/sessions/{id}/cancel); a
// Temporal cancel request does the same.
const SignalCancelRun = "cancel"

// versionAgentRun is the change id of the agent run workflow. Version 1
// is the loop as first written: model call, its tool calls, repeat.
const versionAgentRun = "agent-run"

// Agent run limits that are not the agent's: a run continues as new every
// RunTurnsPerHistory turns (its transcript is in the database, so history
// stays bounded), and a model call is retried this often with backoff.
const (
	RunTurnsPerHistory  = 20
	modelCallAttempts   = 8
	modelCallTimeout    = 10 * time.Minute
	toolCallTimeout     = 25 * time.Hour // an exec may run 24 hours
	agentRecordAttempts = 10
	// resumePoll is how often a run whose workspace was lost looks for
	// the session that resumes it.
	resumePoll = 10 * time.Second
)

// SessionRunID is the workflow id of a session's agent run.
func SessionRunID(sessionID string) string { return "session-" + sessionID }

// SessionRunStartOptions are the options the API starts a run with: one
// run per session, ever.
func SessionRunStartOptions(sessionID string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       SessionRunID(sessionID),
		TaskQueue:                TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
}

// SessionRunInput is a run: the session (its agent, instructions and
// transcript are in the database). The other fields carry a run across
// continue-as-new.
type SessionRunInput struct {
	SessionID string
	Turn      int       `json:",omitempty"` // turns done
	Deadline  time.Time `json:",omitempty"` // when the run times out
	MaxTurns  int       `json:",omitempty"`
	Usage     RunUsage  `json:",omitempty"`
}

// RunUsage is the tokens a run used so far.
type RunUsage struct {
	InputTokens, OutputTokens int
}

// SessionRunOutput is how the run ended: one of the models.Agent* reasons
// or workspace_lost, with the reason of a failure.
type SessionRunOutput struct {
	Reason string
	Error  string `json:",omitempty"`
	Turns  int
	Usage  RunUsage
	// ResumedBy is the session whose run continues this one (a run that
	// ended workspace_lost).
	ResumedBy string `json:",omitempty"`
}

// SessionRunWorkflow runs a session's agent: it calls the model, runs the
// tool calls it asks for, and repeats until the model answers without
// tool calls (completed), the agent's max_turns or timeout is hit, a model
// call fails for good (failed), the run is canceled, or the session ends
// on its own (workspace_lost).
func SessionRunWorkflow(ctx workflow.Context, in SessionRunInput) (SessionRunOutput, error) {
	_ = workflow.GetVersion(ctx, versionAgentRun, workflow.DefaultVersion, 1)
	r := &agentRun{in: in, log: workflow.GetLogger(ctx)}
	return r.run(ctx)
}

type agentRun struct {
	in  SessionRunInput
	log log.Logger
}

func (r *agentRun) run(ctx workflow.Context) (SessionRunOutput, error) {
	var a *agentrun.Activities
	if r.in.Deadline.IsZero() {
		var start agentrun.StartRunOutput
		actx := workflow.WithActivityOptions(ctx, recordActivityOptions())
		if err := workflow.ExecuteActivity(actx, a.StartRun, agentrun.StartRunInput{SessionID: r.in.SessionID}).Get(ctx, &start); err != nil {
			return r.end(ctx, wire.AgentFailed, errorMessage(err))
		}
		if start.Ended != "" {
			return r.end(ctx, start.Ended, "")
		}
		r.in.MaxTurns, r.in.Deadline = start.MaxTurns, workflow.Now(ctx).Add(start.Timeout)
	}

	// The loop runs on a context canceled by the timeout, the cancel signal
	// or a Temporal cancel; why is in stop.
	loopCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	stop := ""
	workflow.Go(ctx, func(gctx workflow.Context) {
		timer := workflow.NewTimer(gctx, r.in.Deadline.Sub(workflow.Now(gctx)))
		sig := workflow.GetSignalChannel(gctx, SignalCancelRun)
		sel := workflow.NewSelector(gctx)
		sel.AddFuture(timer, func(f workflow.Future) {
			if f.Get(gctx, nil) == nil {
				stop = wire.AgentTimeout
			}
		})
		sel.AddReceive(sig, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(gctx, nil)
			stop = wire.AgentCanceled
		})
		sel.AddReceive(gctx.Done(), func(workflow.ReceiveChannel, bool) {
			if ctx.Err() != nil {
				stop = wire.AgentCanceled
			}
		})
		sel.Select(gctx)
		cancel()
	})

	// stopped is why the loop must end: the timeout, the cancel signal, or
	// a Temporal cancel (which may land before the goroutine above runs).
	stopped := func() string {
		if stop == "" && ctx.Err() != nil {
			return wire.AgentCanceled
		}
		return stop
	}
	mctx := workflow.WithActivityOptions(loopCtx, workflow.ActivityOptions{
		StartToCloseTimeout: modelCallTimeout,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    modelCallAttempts,
		},
	})
	tctx := workflow.WithActivityOptions(loopCtx, workflow.ActivityOptions{
		StartToCloseTimeout: toolCallTimeout,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    agentRecordAttempts,
		},
	})
	for turns := 0; ; turns++ {
		if r.in.Turn >= r.in.MaxTurns {
			return r.end(ctx, wire.AgentMaxTurns, "")
		}
		if turns >= RunTurnsPerHistory {
			return SessionRunOutput{}, workflow.NewContinueAsNewError(ctx, SessionRunWorkflowName, r.in)
		}
		var mo agentrun.ModelCallOutput
		err := workflow.ExecuteActivity(mctx, a.ModelCall, agentrun.ModelCallInput{SessionID: r.in.SessionID, Turn: r.in.Turn + 1}).Get(loopCtx, &mo)
		if why := stopped(); why != "" {
			return r.end(ctx, why, "")
		}
		if err != nil {
			return r.end(ctx, wire.AgentFailed, errorMessage(err))
		}
		if mo.Ended != "" {
			return r.ended(ctx, loopCtx, mo.Ended)
		}
		r.in.Turn++
		r.in.Usage.InputTokens += mo.InputTokens
		r.in.Usage.OutputTokens += mo.OutputTokens
		if len(mo.ToolCalls) == 0 {
			return r.end(ctx, wire.AgentCompleted, "")
		}
		for _, tc := range mo.ToolCalls {
			var to agentrun.ToolCallOutput
			err := workflow.ExecuteActivity(tctx, a.ToolCall, agentrun.ToolCallInput{SessionID: r.in.SessionID, Seq: tc.Seq}).Get(loopCtx, &to)
			if why := stopped(); why != "" {
				return r.end(ctx, why, "")
			}
			if err != nil {
				return r.end(ctx, wire.AgentFailed, tc.Name+": "+errorMessage(err))
			}
			if to.Ended != "" {
				return r.ended(ctx, loopCtx, to.Ended)
			}
		}
	}
}

// ended ends a run whose session ended under it. A session whose
// workspace was lost is resumed by the workspace's recovery: the run waits
// (until its deadline, or a cancel) for the session that resumes it, and
// hands itself over: that session's run, session-<id>, continues from the
// transcript with the turns, usage and deadline so far.
func (r *agentRun) ended(ctx, loopCtx workflow.Context, reason string) (SessionRunOutput, error) {
	out, err := r.end(ctx, reason, "")
	if err != nil || reason != wire.ReasonWorkspaceLost {
		return out, err
	}
	var a *agentrun.Activities
	actx := workflow.WithActivityOptions(loopCtx, recordActivityOptions())
	for loopCtx.Err() == nil {
		var res agentrun.ResumeRunOutput
		if err := workflow.ExecuteActivity(actx, a.ResumeRun, agentrun.ResumeRunInput{SessionID: r.in.SessionID}).Get(loopCtx, &res); err != nil {
			r.log.Warn("resume run", "session_id", r.in.SessionID, "error", errorMessage(err))
		} else if res.Successor != "" {
			next := r.in
			next.SessionID = res.Successor
			cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
				WorkflowID:        SessionRunID(res.Successor),
				ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
			})
			child := workflow.ExecuteChildWorkflow(cctx, SessionRunWorkflowName, next)
			if err := child.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
				r.log.Warn("start resumed run", "session_id", res.Successor, "error", errorMessage(err))
			}
			out.ResumedBy = res.Successor
			return out, nil
		}
		_ = workflow.Sleep(loopCtx, resumePoll)
	}
	return out, nil
}

// end records the run's end (on a context that outlives a cancel) and
// returns it.
func (r *agentRun) end(ctx workflow.Context, reason, msg string) (SessionRunOutput, error) {
	var a *agentrun.Activities
	out := SessionRunOutput{Reason: reason, Error: msg, Turns: r.in.Turn, Usage: r.in.Usage}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	dctx = workflow.WithActivityOptions(dctx, recordActivityOptions())
	err := workflow.ExecuteActivity(dctx, a.EndRun, agentrun.EndRunInput{SessionID: r.in.SessionID, Reason: reason, Error: msg, Turns: r.in.Turn}).Get(dctx, nil)
	if err != nil {
		r.log.Warn("record run end", "session_id", r.in.SessionID, "error", errorMessage(err))
	}
	if ctx.Err() != nil {
		// A Temporal cancel: the workflow closes canceled.
		return out, ctx.Err()
	}
	return out, nil
}

// recordActivityOptions are those of a run's bookkeeping activities.
func recordActivityOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    agentRecordAttempts,
		},
	}
}
