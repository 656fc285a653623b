package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/activities/llm/llmtest"
	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// codeRunnerYAML is the seed's code-runner.yaml: its model provider (the
// test model at url, with key) and the agent.
func codeRunnerYAML(url, key string, maxTurns int) string {
	return fmt.Sprintf(`kind: llm_provider
spec:
  id: test-model
  kind: openai
  base_url: %s
  api_key: %s
---
kind: agent
spec:
  id: code-runner
  description: Runs a snippet and reports what it printed
  model: {provider_id: test-model, model_name: test-model-1, max_tokens: 1024}
  system_prompt:
    - You run code in the workspace with the workspace tools.
    - Report what it printed.
  tools: []
  max_turns: %d
  timeout: 5m
`, url, key, maxTurns)
}

// secretKey is a distinctive random API key, to search for everywhere.
func secretKey(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sk-e2e-" + hex.EncodeToString(b)
}

// syncBuffer collects the platform's log lines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// sessionOf reads the session id session run printed.
func sessionOf(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`session: (ses-[0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("session run printed no session id:\n%s", out)
	}
	return m[1]
}

// TestAgentCodeRunnerContainer is the seed's recipe on the container
// backend through primectl exactly as written, with the test model: the
// agent writes the snippet, runs it, out.txt reads 42, the session ends
// completed, .state holds the assistant turns and tool calls in order, and
// the API key is nowhere the test can read.
func TestAgentCodeRunnerContainer(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		var logs syncBuffer
		p := startPrimerLog(t, &logs, withContainers(t))
		ctx := ctxT(t, 5*time.Minute)
		eng := containertest.Backend(t, e)
		id := createRecipeWorkspace(t, p, recipeManifest(e, "deny_all"))
		t.Cleanup(func() {
			_ = eng.Destroy(context.Background(), backend.Handle{Backend: container.Type, WorkspaceID: id})
		})
		checkCodeRunner(t, p, ctx, &logs, id)
	})
}

// TestAgentCodeRunnerLocal is the recipe on the local backend (no engine
// needed), and max_turns.
func TestAgentCodeRunnerLocal(t *testing.T) { agentCodeRunnerLocal(t) }

// TestAgentCodeRunnerPostgres is TestAgentCodeRunnerLocal on PostgreSQL.
func TestAgentCodeRunnerPostgres(t *testing.T) { agentCodeRunnerLocal(t, withPostgres(t)) }

func agentCodeRunnerLocal(t *testing.T, opts ...option) {
	var logs syncBuffer
	p := startPrimerLog(t, &logs, opts...)
	ctx := ctxT(t, 3*time.Minute)
	root := t.TempDir()
	id := createRecipeWorkspace(t, p, `kind: workspace_provider
spec:
  id: scratch
  provider: local
  config: {kind: local, root_path: `+root+`}
---
kind: workspace_template
spec:
  id: code-sandbox
  provider_id: scratch
  backend: {kind: local}
`)
	checkCodeRunner(t, p, ctx, &logs, id)

	// A model that never stops calling tools ends with max_turns.
	llm := llmtest.Start(t, llmtest.Script{{ToolCalls: llmtest.ToolTurn("workspace__exec", map[string]string{"command": "true"}).ToolCalls, Forever: true}})
	doc := strings.Replace(codeRunnerYAML(llm.URL(), secretKey(t), 3), "id: code-runner", "id: looper", 1)
	doc = strings.Replace(doc, "id: test-model\n", "id: loop-model\n", 1)
	doc = strings.Replace(doc, "provider_id: test-model", "provider_id: loop-model", 1)
	if out, errOut, code := p.primectl(doc, "create", "-f", "-"); code != 0 {
		t.Fatalf("create -f looper: %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code := p.primectl("", "session", "run", id, "--agent", "looper", "-i", "loop")
	if code == 0 || !strings.Contains(out, "ended: max_turns") || strings.Count(out, "tool workspace__exec") != 3 {
		t.Fatalf("session run looper: code %d\n%s\n%s; want ended: max_turns after 3 tool calls, non-zero", code, out, errOut)
	}
}

func createRecipeWorkspace(t *testing.T, p *primer, manifest string) string {
	t.Helper()
	if out, errOut, code := p.primectl(manifest, "create", "-f", "-"); code != 0 {
		t.Fatalf("create -f: code %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code := p.primectl("", "create", "workspace", "--set", "template_id=code-sandbox", "--wait")
	m := regexp.MustCompile(`workspace/(ws-[0-9a-f]+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("create workspace --wait: code %d\n%s\n%s", code, out, errOut)
	}
	return m[1]
}

func checkCodeRunner(t *testing.T, p *primer, ctx context.Context, logs *syncBuffer, id string) {
	t.Helper()
	key := secretKey(t)
	llm := llmtest.Start(t, llmtest.CodeRunnerScript())
	file := filepath.Join(t.TempDir(), "code-runner.yaml")
	if err := os.WriteFile(file, []byte(codeRunnerYAML(llm.URL(), key, 50)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := p.primectl("", "create", "-f", file)
	if code != 0 {
		t.Fatalf("primectl create -f code-runner.yaml: code %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = p.primectl("", "session", "run", id, "--agent", "code-runner", "-i", "Run this code: print(6 * 7)")
	if code != 0 || !strings.HasSuffix(out, "ended: completed\n") {
		t.Fatalf("primectl session run: code %d\nstdout %s\nstderr %s\nwant ended: completed", code, out, errOut)
	}
	for _, want := range []string{"user: Run this code: print(6 * 7)", "tool workspace__write", "tool workspace__exec", "The snippet printed 42."} {
		if !strings.Contains(out, want) {
			t.Errorf("session run output lacks %q:\n%s", want, out)
		}
	}
	ses := sessionOf(t, out)
	if got, err := p.api.ReadFile(ctx, id, "out.txt"); err != nil || strings.TrimSpace(string(got)) != "42" {
		t.Errorf("out.txt = %q, %v; want 42", got, err)
	}
	// The model got the key, and the tool results back.
	reqs := llm.Requests()
	if len(reqs) != 3 || reqs[0].Key() != key || len(reqs[2].ToolResults()) != 2 {
		t.Errorf("the model got %d requests (key ok %v, tool results in the last %d); want 3, the key, 2 results",
			len(reqs), len(reqs) > 0 && reqs[0].Key() == key, len(reqs[len(reqs)-1].ToolResults()))
	}

	// .state: assistant turns and tool calls, in order (history lists
	// newest first).
	h, err := p.api.SessionHistory(ctx, ses, false)
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for i := len(h.Items) - 1; i >= 0; i-- {
		tools = append(tools, h.Items[i].Tool)
	}
	if got, want := strings.Join(tools, ","), "assistant,workspace__write,assistant,workspace__exec,assistant"; got != want {
		t.Errorf(".state history of %s = %s, want %s", ses, got, want)
	}

	// The transcript: three turns, usage per turn and in total, commits.
	tr, err := p.api.SessionTranscript(ctx, ses)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Run == nil || tr.Run.EndReason != wire.AgentCompleted || tr.Run.Turns != 3 || tr.Usage.InputTokens != 3*llmtest.DefaultUsage.InputTokens {
		t.Errorf("transcript run %+v usage %+v; want completed in 3 turns, 3 turns' usage", tr.Run, tr.Usage)
	}
	for _, e := range tr.Items {
		if e.Role != wire.RoleUser && e.Commit == "" {
			t.Errorf("transcript entry %d (%s %s) has no commit", e.Seq, e.Role, e.ToolName)
		}
	}
	if s, err := p.api.GetSession(ctx, ses); err != nil || s.Status != wire.SessionEnded || s.EndReason != wire.AgentCompleted {
		t.Errorf("session = %+v, %v; want ended completed", s, err)
	}

	// The key is nowhere: API answers, logs, events, .state and the whole
	// Temporal history of the run.
	var seen []string
	js, _ := json.Marshal(tr)
	seen = append(seen, "transcript:"+string(js))
	hs, _ := json.Marshal(h)
	seen = append(seen, "history:"+string(hs))
	evs, err := p.api.Events(ctx, id, 0)
	if err == nil {
		b, _ := json.Marshal(evs)
		seen = append(seen, "events:"+string(b))
	}
	out, _, _ = p.primectl("", "get", "llm_provider", "test-model", "-o", "json")
	seen = append(seen, "get llm_provider:"+out)
	seen = append(seen, "logs:"+logs.String())
	seen = append(seen, "temporal history:"+runHistory(t, p, ctx, ses))
	for _, s := range seen {
		if strings.Contains(s, key) {
			name, _, _ := strings.Cut(s, ":")
			t.Errorf("the API key appears in the %s", name)
		}
	}
}

// runHistory is the whole Temporal history of the session's run, as JSON.
func runHistory(t *testing.T, p *primer, ctx context.Context, sessionID string) string {
	t.Helper()
	it := p.srv.TemporalClient().GetWorkflowHistory(ctx, workflows.SessionRunID(sessionID), "", false, 0)
	var b strings.Builder
	n := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("workflow history of %s: %v", workflows.SessionRunID(sessionID), err)
		}
		js, _ := json.Marshal(ev)
		b.Write(js)
		n++
	}
	if n == 0 {
		t.Fatalf("workflow %s has no history", workflows.SessionRunID(sessionID))
	}
	return b.String()
}

// TestAgentWorkspaceLost kills the workspace's container while the model
// thinks about turn 2: the session ends workspace_lost, the workspace is
// replaced, and the session that resumes it continues the run from the
// transcript (turn 1's tool result included) to completed.
func TestAgentWorkspaceLost(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e)
		r.template("rec", map[string]any{"recovery": map[string]any{"max_attempts": 3, "after": "0s"}})
		ws := r.running(t, "rec")
		ctx := ctxT(t, 3*time.Minute)
		block := make(chan struct{})
		llm := llmtest.Start(t, llmtest.Script{
			llmtest.ToolTurn("workspace__exec", map[string]string{"command": "echo one > a.txt"}),
			{ToolCalls: llmtest.ToolTurn("workspace__exec", map[string]string{"command": "echo lost > b.txt"}).ToolCalls, Block: block},
			llmtest.TextTurn("a.txt holds one."),
		})
		if out, errOut, code := r.p.primectl(codeRunnerYAML(llm.URL(), secretKey(t), 10), "create", "-f", "-"); code != 0 {
			t.Fatalf("create -f: %d\n%s\n%s", code, out, errOut)
		}
		ses, err := r.p.api.CreateSession(ctx, wire.CreateSessionRequest{WorkspaceID: ws.ID, Agent: "code-runner", Instructions: "Write one to a.txt"})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "the model asked for turn 2", func() bool { return len(llm.Requests()) >= 2 })
		info := r.oneSandbox(t, ws.ID)
		if err := r.eng.Client().ContainerKill(ctx, info.ID, "KILL"); err != nil {
			t.Fatalf("kill container: %v", err)
		}
		var next string
		eventually(t, 2*time.Minute, "a session resuming "+ses.ID, func() bool {
			ss, err := r.p.api.ListSessions(ctx, client.SessionListOptions{WorkspaceID: ws.ID})
			for _, s := range ss {
				if s.ResumedFrom == ses.ID {
					next = s.ID
				}
			}
			return err == nil && next != ""
		})
		close(block) // the answer to turn 2 arrives after the loss: dropped

		run, err := r.p.api.FollowTranscript(ctx, ses.ID, func(wire.TranscriptEntry) error { return nil })
		if err != nil || run.EndReason != wire.ReasonWorkspaceLost {
			t.Fatalf("lost session's run = %+v, %v; want workspace_lost", run, err)
		}
		// The lost run hands itself over to the resuming session after it
		// recorded its own end: wait for the successor's run to exist.
		eventually(t, time.Minute, "an agent run on "+next, func() bool {
			tr, err := r.p.api.SessionTranscript(ctx, next)
			return err == nil && tr.Run != nil
		})
		run, err = r.p.api.FollowTranscript(ctx, next, func(wire.TranscriptEntry) error { return nil })
		if err != nil || run.EndReason != wire.AgentCompleted {
			t.Fatalf("resumed session's run = %+v, %v; want completed", run, err)
		}
		tr, err := r.p.api.SessionTranscript(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, e := range tr.Items {
			roles = append(roles, e.Role+"/"+e.ToolName)
		}
		if got, want := strings.Join(roles, ","), "user/,assistant/,tool/workspace__exec,assistant/"; got != want {
			t.Errorf("resumed transcript = %s, want %s", got, want)
		}
		// The last request carried turn 1's tool result; b.txt was never
		// written (the dropped answer's call did not run).
		reqs := llm.Requests()
		if res := reqs[len(reqs)-1].ToolResults(); len(res) != 1 || !strings.Contains(res[0].Content, `"exit_code":0`) {
			t.Errorf("the resumed run's model request has tool results %+v, want turn 1's", res)
		}
		if got, err := r.p.api.ReadFile(ctx, ws.ID, "a.txt"); err != nil || string(got) != "one\n" {
			t.Errorf("a.txt = %q, %v; want one", got, err)
		}
		if _, err := r.p.api.ReadFile(ctx, ws.ID, "b.txt"); err == nil {
			t.Error("b.txt exists: the dropped answer's call ran")
		}
		r.deleteGone(t, ws.ID)
	})
}

// TestAgentCodeRunnerKubernetes is the seed's recipe on the Kubernetes
// backend: the same documents and primectl commands, a pod for a sandbox.
func TestAgentCodeRunnerKubernetes(t *testing.T) {
	var logs syncBuffer
	p := startPrimerLog(t, &logs, withContainers(t))
	ns := kubernetestest.Namespace(t)
	ctx := ctxT(t, 5*time.Minute)
	kb := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, p.srv.Installation())
	id := createRecipeWorkspace(t, p, kubeRecipeManifest(t, ns))
	t.Cleanup(func() {
		_ = kb.Destroy(context.Background(), backend.Handle{Backend: kubernetes.Type, WorkspaceID: id})
	})
	checkCodeRunner(t, p, ctx, &logs, id)
}

// TestAgentModelErrorsLocal: a 429 with Retry-After is retried after it
// and the run completes; a malformed answer fails the run with a clear
// reason; a canceled run ends canceled; primectl session transcript prints
// a run. Local backend.
func TestAgentModelErrorsLocal(t *testing.T) {
	p := startPrimer(t)
	ctx := ctxT(t, 3*time.Minute)
	id := createRecipeWorkspace(t, p, `kind: workspace_provider
spec:
  id: scratch
  provider: local
  config: {kind: local, root_path: `+t.TempDir()+`}
---
kind: workspace_template
spec:
  id: code-sandbox
  provider_id: scratch
  backend: {kind: local}
`)
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	llm := llmtest.Start(t, llmtest.Script{
		llmtest.ErrorTurn(429, "2", "slow down"),
		llmtest.TextTurn("done after the wait"),
		llmtest.MalformedTurn(),
		{Text: "never", Block: block},
	})
	if out, errOut, code := p.primectl(codeRunnerYAML(llm.URL(), secretKey(t), 5), "create", "-f", "-"); code != 0 {
		t.Fatalf("create -f: %d\n%s\n%s", code, out, errOut)
	}

	out, errOut, code := p.primectl("", "session", "run", id, "--agent", "code-runner", "-i", "wait for it")
	if code != 0 || !strings.HasSuffix(out, "ended: completed\n") {
		t.Fatalf("session run after a 429: code %d\n%s\n%s", code, out, errOut)
	}
	reqs := llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want the 429 and its retry", len(reqs))
	}
	ses := sessionOf(t, out)
	tr, err := p.api.SessionTranscript(ctx, ses)
	if err != nil {
		t.Fatal(err)
	}
	// The retry came after Retry-After: the answer is stored at least 2 s
	// after the run began.
	if gap := tr.Items[1].CreatedAt.Sub(tr.Items[0].CreatedAt); gap < 2*time.Second {
		t.Errorf("the answer came %s after the instructions, want at least the 2s of Retry-After", gap)
	}
	out, _, code = p.primectl("", "session", "transcript", ses)
	if code != 0 || !strings.Contains(out, "user: wait for it") || !strings.Contains(out, "done after the wait") || !strings.HasSuffix(out, "ended: completed\n") {
		t.Errorf("session transcript: code %d\n%s", code, out)
	}

	out, errOut, code = p.primectl("", "session", "run", id, "--agent", "code-runner", "-i", "get a bad answer")
	if code == 0 || !strings.Contains(out, "ended: failed: ") || !strings.Contains(out, "malformed") {
		t.Fatalf("session run with a malformed answer: code %d\n%s\n%s; want ended: failed naming the malformed response", code, out, errOut)
	}

	s, err := p.api.CreateSession(ctx, wire.CreateSessionRequest{WorkspaceID: id, Agent: "code-runner", Instructions: "wait forever"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the blocked model call", func() bool { return len(llm.Requests()) == 4 })
	if err := p.api.CancelSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	run, err := p.api.FollowTranscript(ctx, s.ID, func(wire.TranscriptEntry) error { return nil })
	if err != nil || run.EndReason != wire.AgentCanceled {
		t.Fatalf("canceled run = %+v, %v; want canceled", run, err)
	}
	if got, err := p.api.GetSession(ctx, s.ID); err != nil || got.EndReason != wire.AgentCanceled {
		t.Errorf("canceled session = %+v, %v", got, err)
	}
}
