package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/primerhq/primer/activities/llm/llmtest"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/wire"
)

// TestConsoleAgentRun is the code-interpreter seed's agent, in a real
// browser: the model provider and the code-runner agent are made through
// the console's forms, the run is started from the running workspace's
// page, and the session page shows the transcript as it happens (the test
// model holds its answers until the page has shown the step before),
// with no reload, up to `completed`. out.txt reads 42 in the Files tab, and
// the model's API key is in no page. A second run is canceled from its
// page. A viewer key sees no write controls on these pages.
func TestConsoleAgentRun(t *testing.T) {
	e := containertest.Known()[0] // docker
	containertest.Require(t, e)
	chromium(t)
	p := startPrimer(t, withContainers(t), withUI())
	eng := containertest.Backend(t, e)
	ws := createRecipeWorkspace(t, p, recipeManifest(e, "deny_all"))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = eng.Destroy(ctx, backend.Handle{Backend: container.Type, WorkspaceID: ws})
	})
	ctx := ctxT(t, 6*time.Minute)

	// The seed's conversation, with the exec and the final answer held
	// until the test lets them go.
	execGate, textGate := make(chan struct{}), make(chan struct{})
	release := func(ch chan struct{}) {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
	t.Cleanup(func() { release(execGate); release(textGate) })
	script := llmtest.CodeRunnerScript()
	script[1].Block, script[2].Block = execGate, textGate
	llm := llmtest.Start(t, script)
	key := secretKey(t)

	b := newBrowser(t, p.srv.URL(), 5*time.Minute)
	b.signIn(p.key)
	var pages []string // the HTML of every page the test saw
	keep := func() { pages = append(pages, jsEval[string](b, `document.documentElement.outerHTML`)) }

	// Compute → Agents → New model provider.
	b.run("open Agents",
		click(`nav.side a[href="/agents"]`),
		visible(`#llm-providers`),
		click(`a[href="/llm-providers/new"]`),
		visible(`#llm-provider-form`),
		fill("#id", "test-model"),
		choose("#kind", wire.LLMOpenAI),
		fill("#base_url", llm.URL()),
		fill("#api_key", key),
	)
	b.screenshot("llm-provider-new")
	b.run("create the model provider",
		click(`#llm-provider-form button[type=submit]`),
		visible(`#llm-providers tr[data-id="test-model"]`),
	)
	keep()
	if k := b.text(`#llm-providers tr[data-id="test-model"] .key`); k != "(redacted)" {
		t.Errorf("the model provider's key is shown as %q, want (redacted)", k)
	}

	// New agent: the seed's code-runner.
	b.run("create the agent",
		click(`a[href="/agents/new"]`),
		visible(`#agent-form`),
		fill("#id", "code-runner"),
		fill("#description", "Runs a snippet and reports what it printed"),
		choose("#provider_id", "test-model"),
		fill("#model_name", "test-model-1"),
		fill("#max_tokens", "1024"),
		fill("#system_prompt", "You run code in the workspace with the workspace tools.\nReport what it printed."),
		fill("#max_turns", "10"),
		fill("#timeout", "5m"),
		click(`#agent-form button[type=submit]`),
		visible(`#agents tr[data-id="code-runner"]`),
	)
	if row := b.text(`#agents tr[data-id="code-runner"]`); !strings.Contains(row, "test-model-1") || !strings.Contains(row, "10") {
		t.Errorf("agent row = %q, want the model and max turns", row)
	}
	keep()
	b.screenshot("agents")
	if a, err := p.api.GetAgent(ctx, "code-runner"); err != nil || a.Model.ProviderID != "test-model" || a.MaxTurns != 10 || len(a.SystemPrompt) != 2 {
		t.Fatalf("agent made by the console = %+v, %v", a, err)
	}
	b.run("open the agent", click(`#agents a[href="/agents/code-runner"]`), visible(`#agent-facts`))
	keep()

	// Run agent from the running workspace's page.
	b.run("run the agent from the workspace",
		chromedp.Navigate(b.base+"/workspaces/"+ws),
		visible(`#run-form`),
		choose("#agent", "code-runner"),
		fill("#instructions", "Run this code: print(6 * 7)"),
		click(`#run-form button[type=submit]`),
		visible(`#transcript`),
		chromedp.Evaluate[chromedp.Void](`window.primerMark = 1`),
	)
	ses := jsEval[string](b, `location.pathname.split("/").pop()`)
	if !strings.HasPrefix(ses, "ses-") {
		t.Fatalf("run agent landed on %q", ses)
	}
	b.waitJS("workspace__write on the page", `!!document.querySelector('#transcript li[data-tool="workspace__write"][data-state="finished"]')`, time.Minute)
	if st := b.text("#run-status"); st != wire.AgentRunning {
		t.Errorf("run status while the model holds the exec = %q, want running", st)
	}
	if n := jsEval[int](b, `document.querySelectorAll('#cancel-form button').length`); n != 1 {
		t.Errorf("a running run's page has %d Cancel buttons, want 1", n)
	}
	if jsEval[bool](b, `!!document.querySelector('#transcript li[data-tool="workspace__exec"]')`) {
		t.Error("workspace__exec shown before the model asked for it")
	}
	release(execGate)
	b.waitJS("workspace__exec on the page", `!!document.querySelector('#transcript li[data-tool="workspace__exec"][data-state="finished"]')`, time.Minute)
	release(textGate)
	b.waitJS("completed on the page", `document.getElementById("end-reason").textContent === "completed"`, time.Minute)
	if !jsEval[bool](b, `window.primerMark === 1`) {
		t.Error("the page reloaded to show the run")
	}
	tr, err := p.api.SessionTranscript(ctx, ses)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Run == nil || tr.Run.EndReason != wire.AgentCompleted {
		t.Fatalf("run as the API has it = %+v", tr.Run)
	}
	text := b.text("#transcript")
	for _, want := range []string{"Run this code: print(6 * 7)", "workspace__write", "workspace__exec", "The snippet printed 42."} {
		if !strings.Contains(text, want) {
			t.Errorf("transcript on the page lacks %q:\n%s", want, text)
		}
	}
	// One item per transcript entry, in order; the token totals are the API's.
	seqs := jsEval[string](b, `[...document.querySelectorAll("#transcript > li")].map(li => li.dataset.role + ":" + (li.dataset.tool || "")).join(",")`)
	var want []string
	for _, it := range tr.Items {
		want = append(want, it.Role+":"+it.ToolName)
	}
	if seqs != strings.Join(want, ",") {
		t.Errorf("transcript items on the page = %s, want the API's %s", seqs, strings.Join(want, ","))
	}
	if got, want := b.text("#usage"), fmt.Sprintf("%d in · %d out", tr.Usage.InputTokens, tr.Usage.OutputTokens); got != want || tr.Usage.InputTokens == 0 {
		t.Errorf("token usage on the page = %q, want %q", got, want)
	}
	turns := jsEval[int](b, `[...document.querySelectorAll('#transcript li[data-role="assistant"] .tokens')].filter(s => /\d+ tokens in · \d+ out/.test(s.textContent)).length`)
	if turns != 3 {
		t.Errorf("%d assistant turns show their tokens, want 3", turns)
	}
	if n := jsEval[int](b, `document.querySelectorAll('#cancel-form').length`); n != 0 {
		t.Error("an ended run's page still has Cancel")
	}
	b.screenshot("agent-transcript")
	keep()

	// The write's commit link opens its diff.
	b.run("open the write's commit",
		click(`#transcript li[data-tool="workspace__write"] a[href*="/commits/"]`),
		visible(`#changed`),
	)
	if d := b.text("main"); !strings.Contains(d, "snippet.py") || !strings.Contains(d, "print(6 * 7)") {
		t.Errorf("the write's commit page = %q, want snippet.py and its content", d)
	}
	keep()

	// The page as reloaded shows the same ended run.
	b.run("reload the session", chromedp.Navigate(b.base+"/sessions/"+ses), visible(`#transcript`))
	if r := b.text("#end-reason"); r != "completed" {
		t.Errorf("end reason after reload = %q", r)
	}
	keep()

	// out.txt in the Files tab.
	b.run("open out.txt",
		chromedp.Navigate(b.base+"/workspaces/"+ws+"/files"),
		visible(`#files tr[data-file="out.txt"]`),
		click(`#files tr[data-file="out.txt"] a`),
		visible(`#file-content`),
	)
	if got := strings.TrimSpace(b.text("#file-content")); got != "42" {
		t.Errorf("out.txt in the Files tab = %q, want 42", got)
	}
	keep()

	// A run canceled from its page: the model never answers.
	hold := make(chan struct{})
	t.Cleanup(func() { release(hold) })
	llm.SetScript(llmtest.Script{{Block: hold, Text: "never"}})
	b.run("run the agent again",
		chromedp.Navigate(b.base+"/workspaces/"+ws),
		visible(`#run-form`),
		fill("#instructions", "Wait for ever"),
		click(`#run-form button[type=submit]`),
		visible(`#cancel-form`),
	)
	ses2 := jsEval[string](b, `location.pathname.split("/").pop()`)
	b.run("cancel it", click(`#cancel-form button`), visible(`p.notice`))
	b.waitJS("canceled on the page", `document.getElementById("end-reason").textContent === "canceled"`, 2*time.Minute)
	if r, err := p.api.SessionTranscript(ctx, ses2); err != nil || r.Run == nil || r.Run.EndReason != wire.AgentCanceled {
		t.Errorf("canceled run as the API has it = %+v, %v", r, err)
	}
	b.screenshot("agent-canceled")
	keep()

	// A viewer sees agents and transcripts, and no write control.
	viewer, err := p.api.CreateAPIKey(ctx, wire.CreateAPIKeyRequest{Role: wire.RoleViewer, Name: "console-agent-viewer"})
	if err != nil {
		t.Fatal(err)
	}
	vb := newBrowser(t, p.srv.URL(), 2*time.Minute)
	vb.signIn(viewer.Key)
	for _, pg := range []string{"/agents", "/agents/code-runner", "/sessions/" + ses, "/workspaces/" + ws} {
		vb.run("open "+pg+" as viewer", chromedp.Navigate(vb.base+pg), visible(`main h1`))
		n := jsEval[int](vb, `document.querySelectorAll('main form[method=post], #run-form, #cancel-form').length`)
		links := jsEval[int](vb, `document.querySelectorAll('a[href$="/new"]').length`)
		if n != 0 || links != 0 {
			t.Errorf("viewer on %s sees %d write forms and %d New links", pg, n, links)
		}
		pages = append(pages, jsEval[string](vb, `document.documentElement.outerHTML`))
	}

	// The key is in no page the console served.
	for i, h := range pages {
		if strings.Contains(h, key) {
			t.Errorf("page %d holds the model provider's API key", i)
		}
	}
	if reqs := llm.Requests(); len(reqs) == 0 || reqs[0].Key() != key {
		t.Errorf("the model did not get the key typed in the form")
	}
}
