package agentrun

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/activities/llm/llmtest"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

const agentKey = "sk-activity-test-5b1f0c7e9a"

// agentRig is a rig with a running workspace, the test model, a provider
// and agent, and an open session with a run and its instructions.
type agentRig struct {
	*rig
	llm *llmtest.Server
	ws  *wire.Workspace
	ses *wire.Session
}

func newAgentRig(t *testing.T, script llmtest.Script) *agentRig {
	t.Helper()
	r := newRig(t)
	ctx := context.Background()
	ws := r.Workspace(t, "ws-agent", `{"kind":"memory"}`)
	if _, err := r.workspaces.Provision(ctx, activities.ProvisionInput{WorkspaceID: ws.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.workspaces.SetPhase(ctx, activities.SetPhaseInput{WorkspaceID: ws.ID, To: wire.PhaseRunning}); err != nil {
		t.Fatal(err)
	}
	llm := llmtest.Start(t, script)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.store.CreateLLMProvider(ctx, &wire.LLMProvider{ID: "test-model", TenantID: wire.DefaultTenantID, Kind: wire.LLMOpenAI, BaseURL: llm.URL(), APIKey: agentKey}))
	must(r.store.CreateAgent(ctx, &wire.Agent{ID: "code-runner", TenantID: wire.DefaultTenantID,
		Model: wire.AgentModel{ProviderID: "test-model", ModelName: "m"}, MaxTurns: 5, Timeout: "1m"}))
	ses := &wire.Session{WorkspaceID: ws.ID, Agent: "code-runner"}
	must(r.store.CreateSession(ctx, ses))
	must(r.store.CreateSessionRun(ctx, &wire.SessionRun{SessionID: ses.ID, AgentID: "code-runner"}, "Run this code: print(6 * 7)"))
	return &agentRig{rig: r, llm: llm, ws: ws, ses: ses}
}

func (r *agentRig) stateLog(t *testing.T) []protocol.StateCommit {
	t.Helper()
	ctx := context.Background()
	ws, err := r.store.GetWorkspace(ctx, r.ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := r.a.Connector.Client(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.StateLog(ctx, protocol.StateLogParams{TrailerKey: "Primer-Session", TrailerValue: r.ses.ID})
	if err != nil {
		t.Fatal(err)
	}
	return res.Commits
}

// A model call is made once per turn, however often the activity runs;
// a finished tool call is not run again.
func TestModelAndToolCallsOnce(t *testing.T) {
	r := newAgentRig(t, llmtest.CodeRunnerScript())
	ctx := context.Background()
	out, err := r.a.ModelCall(ctx, ModelCallInput{SessionID: r.ses.ID, Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "workspace__write" || out.InputTokens != llmtest.DefaultUsage.InputTokens {
		t.Fatalf("turn 1 = %+v, want one workspace__write and the turn's usage", out)
	}
	again, err := r.a.ModelCall(ctx, ModelCallInput{SessionID: r.ses.ID, Turn: 1})
	if err != nil || len(again.ToolCalls) != 1 || again.ToolCalls[0] != out.ToolCalls[0] {
		t.Fatalf("turn 1 again = %+v, %v; want the same answer", again, err)
	}
	if n := len(r.llm.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times for turn 1, want once", n)
	}
	if reqs := r.llm.Requests(); reqs[0].Key() != agentKey {
		t.Errorf("the model request carried key %q, want the provider's", reqs[0].Key())
	}
	seq := out.ToolCalls[0].Seq
	for range 2 {
		if to, err := r.a.ToolCall(ctx, ToolCallInput{SessionID: r.ses.ID, Seq: seq}); err != nil || to.IsError || to.Doubt {
			t.Fatalf("tool call = %+v, %v", to, err)
		}
	}
	commits := r.stateLog(t)
	if len(commits) != 2 || commits[0].Trailers["Primer-Tool"] != "workspace__write" || commits[1].Trailers["Primer-Tool"] != "assistant" {
		t.Fatalf(".state commits = %+v, want the assistant turn then one write (newest first)", commits)
	}
	e, err := r.store.TranscriptEntryAt(ctx, r.ses.ID, seq)
	if err != nil || e.State != wire.ToolFinished || e.Commit != commits[0].Commit {
		t.Fatalf("tool entry = %+v, %v; want finished with the write's commit", e, err)
	}
	es, _ := r.store.Transcript(ctx, r.ses.ID, 0)
	for _, e := range es {
		if strings.Contains(string(e.Content)+string(e.ToolArgs)+string(e.ToolResult)+string(e.ToolCalls), agentKey) {
			t.Errorf("transcript entry %d holds the key", e.Seq)
		}
	}
}

// A tool call found started (a crash between the record and the result)
// is not run again: the model is told it may or may not have run, and,
// for a write, whether the file has the content.
func TestToolCallStartedIsNotRunAgain(t *testing.T) {
	for _, tc := range []struct {
		name, tool string
		args       any
		ran        bool // the call ran before the crash
		want       string
	}{
		{"exec", "workspace__exec", map[string]string{"command": "echo x >> count.txt"}, false, "may or may not have run"},
		{"write ran", "workspace__write", map[string]string{"path": "snippet.py", "content": "print(6 * 7)\n"}, true, "now has exactly the content"},
		{"write did not run", "workspace__write", map[string]string{"path": "snippet.py", "content": "print(6 * 7)\n"}, false, "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newAgentRig(t, llmtest.Script{llmtest.ToolTurn(tc.tool, tc.args)})
			ctx := context.Background()
			out, err := r.a.ModelCall(ctx, ModelCallInput{SessionID: r.ses.ID, Turn: 1})
			if err != nil {
				t.Fatal(err)
			}
			e, err := r.store.TranscriptEntryAt(ctx, r.ses.ID, out.ToolCalls[0].Seq)
			if err != nil {
				t.Fatal(err)
			}
			e.State = wire.ToolStarted // what ToolCall records before it runs
			if err := r.store.UpdateTranscriptEntry(ctx, e); err != nil {
				t.Fatal(err)
			}
			ws, _ := r.store.GetWorkspace(ctx, r.ws.ID)
			cl, err := r.a.Connector.Client(ctx, ws)
			if err != nil {
				t.Fatal(err)
			}
			if tc.ran {
				if err := cl.WriteFile(ctx, "snippet.py", []byte("print(6 * 7)\n"), 0); err != nil {
					t.Fatal(err)
				}
			}
			to, err := r.a.ToolCall(ctx, ToolCallInput{SessionID: r.ses.ID, Seq: e.Seq})
			if err != nil || !to.Doubt || !to.IsError {
				t.Fatalf("tool call = %+v, %v; want a doubt told to the model", to, err)
			}
			got, _ := r.store.TranscriptEntryAt(ctx, r.ses.ID, e.Seq)
			if got.State != wire.ToolFinished || !strings.Contains(string(got.ToolResult), tc.want) {
				t.Fatalf("tool result = %s (%s), want finished with %q", got.ToolResult, got.State, tc.want)
			}
			if _, err := cl.ReadFile(ctx, "count.txt"); err == nil {
				t.Error("the exec ran again")
			}
			if n := len(r.stateLog(t)); n != 1 {
				t.Errorf("%d .state commits, want only the assistant turn's", n)
			}
		})
	}
}

// A 429 is retried after its Retry-After; a 400 and a malformed answer
// fail for good with the status or reason; none carries the key or the
// server's body.
func TestModelCallErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		turn      llmtest.Turn
		retryable bool
		delay     time.Duration
		want      string
	}{
		{"429", llmtest.ErrorTurn(429, "7", "rate limited "+agentKey), true, 7 * time.Second, "429"},
		{"500", llmtest.ErrorTurn(500, "", "overloaded"), true, 0, "500"},
		{"400", llmtest.ErrorTurn(400, "", `model "m" does not exist`), false, 0, "HTTP 400: Bad Request"},
		{"malformed", llmtest.MalformedTurn(), false, 0, "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newAgentRig(t, llmtest.Script{tc.turn})
			_, err := r.a.ModelCall(context.Background(), ModelCallInput{SessionID: r.ses.ID, Turn: 1})
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) {
				t.Fatalf("err = %v, want an application error", err)
			}
			if appErr.NonRetryable() == tc.retryable || appErr.NextRetryDelay() != tc.delay || !strings.Contains(appErr.Error(), tc.want) {
				t.Fatalf("err = %v (non-retryable %v, next retry %s); want retryable %v after %s, saying %q",
					err, appErr.NonRetryable(), appErr.NextRetryDelay(), tc.retryable, tc.delay, tc.want)
			}
			if strings.Contains(appErr.Error(), agentKey) {
				t.Errorf("error carries the key: %v", err)
			}
			if tc.turn.Message != "" && strings.Contains(appErr.Error(), tc.turn.Message) {
				t.Errorf("error carries the server's body: %v", err)
			}
			if es, _ := r.store.Transcript(context.Background(), r.ses.ID, 0); len(es) != 1 {
				t.Errorf("transcript has %d entries after a failed call, want the instructions only", len(es))
			}
		})
	}
}

// A session that ended under the run (its workspace lost) ends the run
// with its reason.
func TestAgentCallsSeeTheSessionEnd(t *testing.T) {
	r := newAgentRig(t, llmtest.CodeRunnerScript())
	ctx := context.Background()
	if _, err := r.store.EndWorkspaceSessions(ctx, r.ws.ID, wire.ReasonWorkspaceLost); err != nil {
		t.Fatal(err)
	}
	out, err := r.a.ModelCall(ctx, ModelCallInput{SessionID: r.ses.ID, Turn: 1})
	if err != nil || out.Ended != wire.ReasonWorkspaceLost || len(r.llm.Requests()) != 0 {
		t.Fatalf("model call = %+v, %v after %d requests; want ended workspace_lost without asking", out, err, len(r.llm.Requests()))
	}
}

// A session that ends while the model answers (its workspace lost) drops
// the answer: the run that resumes the session asks again.
func TestModelCallDropsAnAnswerAfterTheSessionEnded(t *testing.T) {
	block := make(chan struct{})
	r := newAgentRig(t, llmtest.Script{{ToolCalls: llmtest.ToolTurn("workspace__exec", map[string]string{"command": "true"}).ToolCalls, Block: block}})
	ctx := context.Background()
	done := make(chan struct{})
	var out ModelCallOutput
	var err error
	go func() {
		defer close(done)
		out, err = r.a.ModelCall(ctx, ModelCallInput{SessionID: r.ses.ID, Turn: 1})
	}()
	for len(r.llm.Requests()) == 0 {
		select {
		case <-done:
			t.Fatalf("model call returned before the model answered: %+v, %v", out, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if _, err := r.store.EndWorkspaceSessions(ctx, r.ws.ID, wire.ReasonWorkspaceLost); err != nil {
		t.Fatal(err)
	}
	close(block)
	<-done
	if err != nil || out.Ended != wire.ReasonWorkspaceLost || len(out.ToolCalls) != 0 {
		t.Fatalf("model call = %+v, %v; want ended workspace_lost and no tool calls", out, err)
	}
	if es, _ := r.store.Transcript(ctx, r.ses.ID, 0); len(es) != 1 {
		t.Fatalf("transcript has %d entries, want the instructions only", len(es))
	}
}
