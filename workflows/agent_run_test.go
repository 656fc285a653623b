package workflows

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities/agentrun"
	"github.com/primerhq/primer/wire"
)

// agentFakes are the run's activities, mocked: the model answers from a
// script (one entry per turn; past its end it keeps calling a tool).
type agentFakes struct {
	mu     sync.Mutex
	env    *testsuite.TestWorkflowEnvironment
	script []func(attempt int) (agentrun.ModelCallOutput, error)
	// modelTime and toolTime are how long each call takes (simulated).
	modelTime, toolTime time.Duration
	toolErr             func(attempt int) (agentrun.ToolCallOutput, error)
	// successorAfter is how many ResumeRun calls find no successor
	// before one finds ses-2; -1: never.
	successorAfter int
	resumeCalls    int

	modelCalls []time.Time // when each model call attempt started
	turns      []int
	tools      []int
	toolTries  int
	ended      []agentrun.EndRunInput
}

func toolTurn(seq int) func(int) (agentrun.ModelCallOutput, error) {
	return func(int) (agentrun.ModelCallOutput, error) {
		return agentrun.ModelCallOutput{ToolCalls: []agentrun.ToolCallRef{{Seq: seq, Name: "workspace__exec"}}, InputTokens: 10, OutputTokens: 5}, nil
	}
}

func finalTurn(int) (agentrun.ModelCallOutput, error) {
	return agentrun.ModelCallOutput{InputTokens: 20, OutputTokens: 7}, nil
}

func (f *agentFakes) run(t *testing.T, maxTurns int, timeout time.Duration, during func(env *testsuite.TestWorkflowEnvironment)) (SessionRunOutput, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f.env = env
	env.RegisterWorkflowWithOptions(SessionRunWorkflow, workflow.RegisterOptions{Name: SessionRunWorkflowName})
	var a *agentrun.Activities
	env.OnActivity(a.StartRun, mock.Anything, mock.Anything).Return(agentrun.StartRunOutput{MaxTurns: maxTurns, Timeout: timeout}, nil)
	env.OnActivity(a.ModelCall, mock.Anything, mock.Anything).After(f.modelTime).Return(
		func(ctx context.Context, in agentrun.ModelCallInput) (agentrun.ModelCallOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.modelCalls = append(f.modelCalls, env.Now())
			n := 0
			for _, tu := range f.turns {
				if tu == in.Turn {
					n++
				}
			}
			f.turns = append(f.turns, in.Turn)
			if in.Turn-1 < len(f.script) {
				return f.script[in.Turn-1](n + 1)
			}
			return toolTurn(100 + in.Turn)(n + 1)
		})
	env.OnActivity(a.ToolCall, mock.Anything, mock.Anything).After(f.toolTime).Return(
		func(ctx context.Context, in agentrun.ToolCallInput) (agentrun.ToolCallOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.toolTries++
			if f.toolErr != nil {
				out, err := f.toolErr(f.toolTries)
				if err != nil || out.Ended != "" {
					return out, err
				}
			}
			f.tools = append(f.tools, in.Seq)
			return agentrun.ToolCallOutput{}, nil
		})
	env.OnActivity(a.ResumeRun, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in agentrun.ResumeRunInput) (agentrun.ResumeRunOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.resumeCalls++
			if f.successorAfter < 0 || f.resumeCalls <= f.successorAfter {
				return agentrun.ResumeRunOutput{}, nil
			}
			return agentrun.ResumeRunOutput{Successor: "ses-2"}, nil
		})
	env.OnActivity(a.EndRun, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in agentrun.EndRunInput) (agentrun.EndRunOutput, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.ended = append(f.ended, in)
			return agentrun.EndRunOutput{}, nil
		})
	if during != nil {
		during(env)
	}
	env.ExecuteWorkflow(SessionRunWorkflowName, SessionRunInput{SessionID: "ses-1"})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var out SessionRunOutput
	err := env.GetWorkflowError()
	if err == nil {
		if err := env.GetWorkflowResult(&out); err != nil {
			t.Fatal(err)
		}
	}
	return out, err
}

func (f *agentFakes) endedWith(t *testing.T, reason string) agentrun.EndRunInput {
	t.Helper()
	if len(f.ended) != 1 || f.ended[0].Reason != reason {
		t.Fatalf("EndRun calls = %+v, want one with reason %s", f.ended, reason)
	}
	return f.ended[0]
}

func TestSessionRunCompleted(t *testing.T) {
	f := &agentFakes{script: []func(int) (agentrun.ModelCallOutput, error){
		func(int) (agentrun.ModelCallOutput, error) {
			return agentrun.ModelCallOutput{ToolCalls: []agentrun.ToolCallRef{{Seq: 3, Name: "workspace__write"}, {Seq: 4, Name: "workspace__exec"}},
				InputTokens: 10, OutputTokens: 5}, nil
		},
		finalTurn,
	}}
	out, err := f.run(t, 50, 30*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Reason != wire.AgentCompleted || out.Turns != 2 || out.Usage != (RunUsage{30, 12}) {
		t.Fatalf("out = %+v, want completed after 2 turns using 30+12 tokens", out)
	}
	if len(f.tools) != 2 || f.tools[0] != 3 || f.tools[1] != 4 {
		t.Fatalf("tool calls = %v, want [3 4] in order", f.tools)
	}
	f.endedWith(t, wire.AgentCompleted)
}

func TestSessionRunMaxTurns(t *testing.T) {
	f := &agentFakes{}
	out, err := f.run(t, 3, 30*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Reason != wire.AgentMaxTurns || len(f.turns) != 3 || len(f.tools) != 3 {
		t.Fatalf("out = %+v after %d model calls and %d tool calls, want max_turns after 3 each", out, len(f.turns), len(f.tools))
	}
	if e := f.endedWith(t, wire.AgentMaxTurns); e.Turns != 3 {
		t.Fatalf("EndRun turns = %d, want 3", e.Turns)
	}
}

// A run longer than RunTurnsPerHistory continues as new and keeps its
// turn count, usage and deadline.
func TestSessionRunContinuesAsNew(t *testing.T) {
	f := &agentFakes{}
	_, err := f.run(t, 50, 30*time.Minute, nil)
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("err = %v, want continue-as-new after %d turns", err, RunTurnsPerHistory)
	}
	var in SessionRunInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	if in.Turn != RunTurnsPerHistory || in.MaxTurns != 50 || in.Deadline.IsZero() || in.Usage.InputTokens != 10*RunTurnsPerHistory {
		t.Fatalf("continued with %+v, want turn %d, max 50, a deadline and the usage so far", in, RunTurnsPerHistory)
	}
}

func TestSessionRunTimeout(t *testing.T) {
	f := &agentFakes{modelTime: time.Minute, toolTime: 10 * time.Minute}
	out, err := f.run(t, 50, 30*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Reason != wire.AgentTimeout || out.Turns < 2 || out.Turns > 3 {
		t.Fatalf("out = %+v, want timeout after 2 or 3 turns of 11 minutes in 30", out)
	}
	f.endedWith(t, wire.AgentTimeout)
}

// A 429 is retried after its Retry-After, not the policy's first backoff.
func TestSessionRunModelRetryAfter(t *testing.T) {
	f := &agentFakes{script: []func(int) (agentrun.ModelCallOutput, error){
		func(attempt int) (agentrun.ModelCallOutput, error) {
			if attempt == 1 {
				return agentrun.ModelCallOutput{}, temporal.NewApplicationErrorWithOptions("HTTP 429: slow down", agentrun.ErrModelRetryable,
					temporal.ApplicationErrorOptions{NextRetryDelay: 7 * time.Second})
			}
			return finalTurn(attempt)
		},
	}}
	out, err := f.run(t, 50, 30*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Reason != wire.AgentCompleted || len(f.modelCalls) != 2 {
		t.Fatalf("out = %+v after %d model calls, want completed after 2", out, len(f.modelCalls))
	}
	if gap := f.modelCalls[1].Sub(f.modelCalls[0]); gap < 7*time.Second || gap > 8*time.Second {
		t.Fatalf("retry came %s after the 429, want its Retry-After of 7s", gap)
	}
}

func TestSessionRunModelFails(t *testing.T) {
	f := &agentFakes{script: []func(int) (agentrun.ModelCallOutput, error){
		func(int) (agentrun.ModelCallOutput, error) {
			return agentrun.ModelCallOutput{}, temporal.NewNonRetryableApplicationError("llm provider p: model call: HTTP 400: model \"x\" does not exist", agentrun.ErrModelFailed, nil)
		},
	}}
	out, err := f.run(t, 50, 30*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := f.endedWith(t, wire.AgentFailed)
	if out.Reason != wire.AgentFailed || len(f.modelCalls) != 1 || e.Error != `llm provider p: model call: HTTP 400: model "x" does not exist` {
		t.Fatalf("out = %+v, end %+v after %d calls; want failed with the provider's message after 1", out, e, len(f.modelCalls))
	}
}

func TestSessionRunCancelSignal(t *testing.T) {
	f := &agentFakes{modelTime: time.Minute, toolTime: time.Minute}
	out, err := f.run(t, 50, 30*time.Minute, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalCancelRun, nil) }, 3*time.Minute+30*time.Second)
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Reason != wire.AgentCanceled || out.Turns != 2 || len(f.tools) != 1 {
		t.Fatalf("out = %+v, want canceled in the second turn's tool call", out)
	}
	f.endedWith(t, wire.AgentCanceled)
}

// The session ended under the run (its workspace was lost): the run ends
// with the session's reason, waits for the session that resumes it, and
// hands the run over to it: session-ses-2 continues at the next turn and
// completes.
func TestSessionRunWorkspaceLost(t *testing.T) {
	// The first attempt fails (the workspace is going); the next sees the
	// session ended.
	f := &agentFakes{successorAfter: 2, script: []func(int) (agentrun.ModelCallOutput, error){toolTurn(2), finalTurn}, toolErr: func(try int) (agentrun.ToolCallOutput, error) {
		if try == 1 {
			return agentrun.ToolCallOutput{}, temporal.NewApplicationError("workspace ws-1: is failed, not running", "Unavailable")
		}
		return agentrun.ToolCallOutput{Ended: wire.ReasonWorkspaceLost}, nil
	}}
	out, err := f.run(t, 50, 30*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Reason != wire.ReasonWorkspaceLost || out.ResumedBy != "ses-2" || f.toolTries != 2 || f.resumeCalls != 3 {
		t.Fatalf("out = %+v after %d tool tries and %d resume looks; want workspace_lost resumed by ses-2 after 2 and 3", out, f.toolTries, f.resumeCalls)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ended) != 2 || f.ended[0] != (agentrun.EndRunInput{SessionID: "ses-1", Reason: wire.ReasonWorkspaceLost, Turns: 1}) ||
		f.ended[1] != (agentrun.EndRunInput{SessionID: "ses-2", Reason: wire.AgentCompleted, Turns: 2}) {
		t.Fatalf("runs ended %+v; want ses-1 workspace_lost after 1 turn, then ses-2 completed after 2", f.ended)
	}
	if len(f.turns) != 2 || f.turns[1] != 2 {
		t.Fatalf("model turns %v, want the resumed run to continue at turn 2", f.turns)
	}
}

// A Temporal cancel (not the signal) ends the run canceled too, and the
// workflow closes canceled.
func TestSessionRunTemporalCancel(t *testing.T) {
	f := &agentFakes{modelTime: time.Minute, toolTime: time.Minute}
	_, err := f.run(t, 50, 30*time.Minute, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(env.CancelWorkflow, 90*time.Second)
	})
	var canceled *temporal.CanceledError
	if !errors.As(err, &canceled) {
		t.Fatalf("err = %v, want the workflow canceled", err)
	}
	f.endedWith(t, wire.AgentCanceled)
}
