//go:build record

package recorder

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities/agentrun"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// agentQueue keeps the agent run recordings apart from the workspace
// ones when both use one server (PRIMER_TEMPORAL_ADDRESS).
const agentQueue = "primer-record-agent-run"

// agentFakes are the agent run's activities, by their real names: each
// session's model answers follow its script.
type agentFakes struct {
	mu       sync.Mutex
	maxTurns map[string]int
	// toolTurns is how many turns call a tool before the final answer
	// (-1: never final).
	toolTurns map[string]int
	// rateLimited sessions answer their first model call with a 429.
	rateLimited map[string]bool
	// slowTools sessions' tool calls take two seconds.
	slowTools map[string]bool
	// lost sessions' tool calls find the session ended workspace_lost;
	// ResumeRun finds their successor on its second look.
	lost     map[string]string
	attempts map[string]int
	looks    map[string]int
}

func (f *agentFakes) ResumeRun(_ context.Context, in agentrun.ResumeRunInput) (agentrun.ResumeRunOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.looks[in.SessionID]++
	if f.looks[in.SessionID] < 2 {
		return agentrun.ResumeRunOutput{}, nil
	}
	return agentrun.ResumeRunOutput{Successor: f.lost[in.SessionID]}, nil
}

func (f *agentFakes) StartRun(_ context.Context, in agentrun.StartRunInput) (agentrun.StartRunOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return agentrun.StartRunOutput{MaxTurns: f.maxTurns[in.SessionID], Timeout: 10 * time.Minute}, nil
}

func (f *agentFakes) ModelCall(_ context.Context, in agentrun.ModelCallInput) (agentrun.ModelCallOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[in.SessionID]++
	if f.rateLimited[in.SessionID] && f.attempts[in.SessionID] == 1 {
		return agentrun.ModelCallOutput{}, temporal.NewApplicationErrorWithOptions("llm provider p: model call: HTTP 429: slow down",
			agentrun.ErrModelRetryable, temporal.ApplicationErrorOptions{NextRetryDelay: time.Second})
	}
	out := agentrun.ModelCallOutput{InputTokens: 100, OutputTokens: 20}
	if n := f.toolTurns[in.SessionID]; n < 0 || in.Turn <= n {
		out.ToolCalls = []agentrun.ToolCallRef{{Seq: 2 * in.Turn, Name: "workspace__write"}, {Seq: 2*in.Turn + 1, Name: "workspace__exec"}}
	}
	return out, nil
}

func (f *agentFakes) ToolCall(ctx context.Context, in agentrun.ToolCallInput) (agentrun.ToolCallOutput, error) {
	f.mu.Lock()
	slow := f.slowTools[in.SessionID]
	_, lost := f.lost[in.SessionID]
	f.mu.Unlock()
	if lost {
		return agentrun.ToolCallOutput{Ended: wire.ReasonWorkspaceLost}, nil
	}
	if slow {
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	return agentrun.ToolCallOutput{}, nil
}

func (f *agentFakes) EndRun(context.Context, agentrun.EndRunInput) (agentrun.EndRunOutput, error) {
	return agentrun.EndRunOutput{}, nil
}

// TestRecordAgentRunHistories records SessionRunWorkflow histories:
// completed after a 429 and two tool turns, max_turns, and canceled by
// its signal during a tool call.
func TestRecordAgentRunHistories(t *testing.T) {
	if os.Getenv("PRIMER_RECORD_HISTORY") != "1" {
		t.Skip("records workflows/testdata/agent_run_*.json against an embedded Temporal server; run with make record-histories")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := dial(t, ctx)
	f := &agentFakes{
		maxTurns:    map[string]int{"ses-completed": 50, "ses-maxturns": 2, "ses-canceled": 50, "ses-lost": 50},
		toolTurns:   map[string]int{"ses-completed": 2, "ses-maxturns": -1, "ses-canceled": -1, "ses-lost": 1, "ses-lost-2": 1},
		lost:        map[string]string{"ses-lost": "ses-lost-2"},
		looks:       map[string]int{},
		rateLimited: map[string]bool{"ses-completed": true},
		slowTools:   map[string]bool{"ses-canceled": true},
		attempts:    map[string]int{},
	}
	w := worker.New(c, agentQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(workflows.SessionRunWorkflow, workflow.RegisterOptions{Name: workflows.SessionRunWorkflowName})
	w.RegisterActivity(f)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	for _, rec := range []struct {
		file, session, reason string
		drive                 func(t *testing.T, r *run)
	}{
		{file: "agent_run_v1.json", session: "ses-completed", reason: wire.AgentCompleted},
		{file: "agent_run_max_turns_v1.json", session: "ses-maxturns", reason: wire.AgentMaxTurns},
		{file: "agent_run_canceled_v1.json", session: "ses-canceled", reason: wire.AgentCanceled, drive: func(t *testing.T, r *run) {
			time.Sleep(time.Second) // into the first tool call
			if err := r.c.SignalWorkflow(r.ctx, r.wid, "", workflows.SignalCancelRun, nil); err != nil {
				t.Fatal(err)
			}
		}},
		// The workspace is lost in the first tool call: the run ends
		// workspace_lost and hands over to the session that resumes it.
		{file: "agent_run_resumed_v1.json", session: "ses-lost", reason: wire.ReasonWorkspaceLost},
	} {
		t.Run(rec.file, func(t *testing.T) {
			path := filepath.Join("..", "testdata", rec.file)
			if _, err := os.Stat(path); err == nil {
				t.Skipf("%s exists; delete it only if no build that recorded it was released", path)
			}
			opts := workflows.SessionRunStartOptions(rec.session)
			opts.TaskQueue = agentQueue
			wr, err := c.ExecuteWorkflow(ctx, opts, workflows.SessionRunWorkflowName, workflows.SessionRunInput{SessionID: rec.session})
			if err != nil {
				t.Fatal(err)
			}
			r := &run{ctx: ctx, c: c, wid: wr.GetID(), runID: wr.GetRunID()}
			if rec.drive != nil {
				rec.drive(t, r)
			}
			var out workflows.SessionRunOutput
			if err := wr.Get(ctx, &out); err != nil || out.Reason != rec.reason {
				t.Fatalf("run = %+v, %v; want %s", out, err, rec.reason)
			}
			hist := history(t, r)
			if last := hist.Events[len(hist.Events)-1].GetEventType(); last != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
				t.Fatalf("history ends with %s, want completed", last)
			}
			raw, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(hist)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s: %d events, %d bytes", path, len(hist.Events), len(raw))
		})
	}
}
