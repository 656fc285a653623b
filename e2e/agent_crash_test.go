package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/activities/llm/llmtest"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/wire"
)

// TestCrashDuringAgentRun kills `primer serve` with SIGKILL in the middle
// of an agent run, twice: during a model call (the run resumes and asks
// again, turn 1's tool call is not repeated), and during a tool call (the
// call is not run again; the model is told it may or may not have run).
// Each run still ends completed. Docker and Podman.
func TestCrashDuringAgentRun(t *testing.T) {
	t.Parallel() // beside the other crash tests
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		t.Parallel()
		r := newRig(t, e)
		s := startServe(t)
		ctx := ctxT(t, 5*time.Minute)
		r.template(s.api, "agent-box", crashPolicy(nil))
		ws := r.create(ctx, s.api, "agent-box")
		waitRunning(t, s.api, ws, crashConverge, s.pendingActivities)

		hang := make(chan struct{})
		t.Cleanup(func() { close(hang) })
		llm := llmtest.Start(t, llmtest.Script{
			// Run 1: a tool call, then a model call the kill cuts, then
			// the retried call's answer.
			llmtest.ToolTurn("workspace__exec", map[string]string{"command": "echo model >> count.txt"}),
			{Text: "never delivered", Block: hang},
			llmtest.TextTurn("count.txt has one line."),
			// Run 2: a tool call the kill cuts, then the answer to its
			// doubtful result.
			llmtest.ToolTurn("workspace__exec", map[string]string{"command": "echo tool >> tools.txt; sleep 60"}),
			llmtest.TextTurn("I will check tools.txt before running it again."),
		})
		if _, err := s.api.CreateLLMProvider(ctx, wire.LLMProviderSpec{ID: "test-model", Kind: wire.LLMOpenAI, BaseURL: llm.URL(), APIKey: secretKey(t)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.api.CreateAgent(ctx, wire.AgentSpec{ID: "code-runner", Model: &wire.AgentModel{ProviderID: "test-model", ModelName: "m"}, Timeout: "5m"}); err != nil {
			t.Fatal(err)
		}
		run := func(instructions string) string {
			ses, err := s.api.CreateSession(ctx, wire.CreateSessionRequest{WorkspaceID: ws, Agent: "code-runner", Instructions: instructions})
			if err != nil {
				t.Fatal(err)
			}
			return ses.ID
		}
		finish := func(id string) *wire.Transcript {
			t.Helper()
			eventually(t, crashConverge, "run "+id+" ended", func() bool {
				tr, err := s.api.SessionTranscript(ctx, id)
				return err == nil && tr.Run != nil && tr.Run.Status == wire.AgentEnded
			})
			tr, err := s.api.SessionTranscript(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Run.EndReason != wire.AgentCompleted {
				t.Fatalf("run %s ended %s (%s), want completed", id, tr.Run.EndReason, tr.Run.Error)
			}
			return tr
		}

		// 1. Killed during a model call.
		ses := run("Count once")
		eventually(t, time.Minute, "the model call of turn 2", func() bool { return len(llm.Requests()) >= 2 })
		s.kill()
		s.restart()
		finish(ses)
		if got, err := s.api.ReadFile(ctx, ws, "count.txt"); err != nil || string(got) != "model\n" {
			t.Errorf("count.txt = %q, %v; want one line: turn 1's call ran once", got, err)
		}

		// 2. Killed during a tool call.
		ses = run("Append and wait")
		eventually(t, time.Minute, "the tool call running", func() bool {
			got, err := s.api.ReadFile(ctx, ws, "tools.txt")
			return err == nil && len(got) > 0
		})
		s.kill()
		s.restart()
		tr := finish(ses)
		if got, err := s.api.ReadFile(ctx, ws, "tools.txt"); err != nil || string(got) != "tool\n" {
			t.Errorf("tools.txt = %q, %v; want one line: the cut call was not run again", got, err)
		}
		var result string
		for _, e := range tr.Items {
			if e.Role == wire.RoleTool {
				result = string(e.ToolResult)
			}
		}
		if !strings.Contains(result, "may or may not have run") {
			t.Errorf("the cut tool call's result = %s; want it to say it may or may not have run", result)
		}
		reqs := llm.Requests()
		if last := reqs[len(reqs)-1].ToolResults(); len(last) != 1 || !strings.Contains(last[0].Content, "may or may not have run") {
			t.Errorf("the model was told %+v, want the doubt", last)
		}
	})
}
