package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/wire"
)

// chromium returns the path of Debian's headless Chromium, or skips (fails
// under CI) when it is not installed.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "console browser test: no chromium on PATH; install it with `apt-get install -y chromium`")
	return ""
}

// artifactDir is where the console tests save their screenshots:
// $PRIMER_ARTIFACTS/console, or e2e/artifacts/console (git-ignored).
func artifactDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("PRIMER_ARTIFACTS")
	if base == "" {
		base = "artifacts"
	}
	dir := filepath.Join(base, "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser is one headless Chromium with its own profile (cookies).
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	shot string // screenshot directory
}

func newBrowser(t *testing.T, base string, timeout time.Duration) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // tests run as root in CI containers
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	// The browser lives as long as the context of its first call, so that
	// one has no timeout; the steps run on a child context that has.
	if err := chromedp.Do(bctx); err != nil {
		cancelB()
		cancelA()
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancelT := context.WithTimeout(bctx, timeout)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	return &browser{t: t, ctx: ctx, base: base, shot: artifactDir(t)}
}

// run runs actions, failing the test with what step failed.
func (b *browser) run(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.screenshot("failed-" + strings.ReplaceAll(step, " ", "-"))
		b.t.Fatalf("%s: %v", step, err)
	}
}

// screenshot saves the page as <name>.png in the artifact directory
// (quality 100 makes Chromium encode PNG).
func (b *browser) screenshot(name string) string {
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(b.shot, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
	return p
}

// text returns the text of the first element matching sel.
func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.screenshot("failed-read")
		b.t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// jsEval evaluates a JavaScript expression and returns its value.
func jsEval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until the JavaScript expression is true.
func (b *browser) waitJS(what, expr string, d time.Duration) {
	b.t.Helper()
	b.run("wait for "+what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(100*time.Millisecond)))
}

// choose selects value in a <select> and fires its change event, as
// picking it with the mouse does.
func choose(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event("change", {bubbles: true})); })()`, sel, value))
}

// fill clears a field and types v into it.
func fill(sel, v string) chromedp.Action[chromedp.Void] {
	clear := chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).value = ""`, sel))
	return chromedp.Steps(chromedp.WaitVisible(chromedp.CSS(sel)), clear, chromedp.SendKeys(chromedp.CSS(sel), v))
}

func click(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }

func visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}

func (b *browser) signIn(key string) {
	b.t.Helper()
	b.run("sign in",
		chromedp.Navigate(b.base+"/"),
		visible("#api_key"),
		chromedp.SendKeys(chromedp.CSS("#api_key"), key),
		click(`form[action="/signin"] button`),
		visible(`nav.side`),
	)
}

// TestConsoleProvidersWalkthrough follows the providers seed's walkthrough in
// a real browser, clicking and typing as a person would: a container
// provider, the code-sandbox template with deny_all, a workspace, a snippet
// uploaded and run, out.txt read in the Files tab, the workspace deleted.
// Then a workspace's container is killed from outside and its open page
// shows failed with the reason, without a reload.
func TestConsoleProvidersWalkthrough(t *testing.T) {
	e := containertest.Known()[0] // docker
	containertest.Require(t, e)
	chromium(t)
	p := startPrimer(t, withContainers(t), withUI())
	eng := containertest.Backend(t, e)
	b := newBrowser(t, p.srv.URL(), 8*time.Minute)

	b.signIn(p.key)
	b.screenshot("workspaces-empty")

	// 1-8: Workspaces → Providers → New provider → container → docker →
	// socket → host port → Create provider.
	b.run("open the providers tab",
		click(`nav.side a[href="/workspaces"]`),
		visible(`#workspaces`),
		click(`nav.tabs a[href="/providers"]`),
		visible(`#providers`),
		click(`a[href="/providers/new"]`),
		visible(`#provider-form`),
	)
	b.run("fill the container provider",
		fill("#id", "docker-local"),
		choose("#type", "container"),
		choose("#runtime", "docker"),
		click(`input[name=connection][value=socket]`),
		fill("#socket_path", e.Socket),
		click(`input[name=reachability][value=host_port]`),
		fill("#bind_host", "127.0.0.1"),
	)
	// The form shows only the chosen type's fields.
	if !jsEval[bool](b, `document.querySelector('[data-ptype="kubernetes"]').hidden`) {
		t.Error("kubernetes fields shown for a container provider")
	}
	b.screenshot("provider-new")
	b.run("create the provider",
		click(`#provider-form button[type=submit]`),
		visible(`#providers tr[data-id="docker-local"]`),
	)
	b.screenshot("providers")
	if got, err := p.api.GetProvider(ctxT(t, 10*time.Second), "docker-local"); err != nil || got.Provider != "container" || !strings.Contains(string(got.Config), e.Socket) {
		t.Fatalf("provider made by the console = %+v, %v", got, err)
	}

	// The code-sandbox template with deny_all.
	b.run("create the template",
		click(`nav.tabs a[href="/templates"]`),
		visible(`#templates`),
		click(`a[href="/templates/new"]`),
		visible(`#image`),
		fill("#id", "code-sandbox"),
		choose("#provider_id", "docker-local"),
		fill("#image", containertest.PythonImage),
		fill("#cpu", "1"),
		fill("#memory_mib", "512"),
		choose("#egress", "deny_all"),
		fill("#env", "GREETING=s3cret-value"),
		click(`form[action="/templates"] button[type=submit]`),
		visible(`#templates tr[data-id="code-sandbox"]`),
	)
	b.screenshot("templates")
	if row := b.text(`#templates tr[data-id="code-sandbox"]`); !strings.Contains(row, "deny_all") || strings.Contains(row, "s3cret-value") {
		t.Errorf("template row %q: want deny_all shown and the env value masked", row)
	}

	// The API's rules, shown: the reserved local provider has no Delete,
	// and a provider a template uses cannot be deleted, with the reason.
	b.run("try to delete the provider in use",
		click(`nav.tabs a[href="/providers"]`),
		visible(`#providers`),
		click(`form[action="/providers/docker-local/delete"] button`),
		visible(`#error`),
	)
	if msg := b.text("#error"); !strings.Contains(msg, "docker-local") || !strings.Contains(msg, "code-sandbox") {
		t.Errorf("deleting a provider in use shows %q, want the API's reason naming the template", msg)
	}
	b.run("open providers", chromedp.Navigate(b.base+"/providers"), visible(`#providers`))
	if n := jsEval[int](b, `document.querySelectorAll('form[action="/providers/local/delete"]').length`); n != 0 {
		t.Error("the reserved local provider has a Delete button")
	}

	// A workspace from the template; wait for running on the page.
	ws := b.newWorkspace("code-sandbox")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = eng.Destroy(ctx, backend.Handle{Backend: container.Type, WorkspaceID: ws})
	})
	b.waitJS("running", `document.getElementById("phase").textContent === "running"`, 3*time.Minute)
	b.screenshot("workspace")
	wfLink := jsEval[string](b, `document.querySelector("#ws-facts a[target=_blank]").href`)
	if !strings.Contains(wfLink, "/workflows/workspace-"+ws) {
		t.Errorf("workflow link %q does not open workspace-%s in the Temporal web UI", wfLink, ws)
	}

	// Files tab: upload snippet.py.
	snippet := filepath.Join(t.TempDir(), "snippet.py")
	if err := os.WriteFile(snippet, []byte("print(6 * 7)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.run("upload snippet.py",
		click(`nav.tabs a[href$="/files"]`),
		visible(`#files`),
		chromedp.SetUploadFiles(chromedp.CSS(`#file`), []string{snippet}),
		click(`form[enctype="multipart/form-data"] button[type=submit]`),
		visible(`#files tr[data-file="snippet.py"]`),
	)
	b.screenshot("files")

	// The command box: run it, the output streams into the page.
	b.run("run the snippet",
		click(`nav.tabs a[href="/workspaces/`+ws+`"]`),
		visible(`#command`),
		chromedp.SendKeys(chromedp.CSS(`#command`), "python3 snippet.py > out.txt && echo ran"),
		click(`#exec-form button[type=submit]`),
	)
	b.waitJS("the command to end", `document.getElementById("exec-output").dataset.done === "1"`, time.Minute)
	if out := b.text("#exec-output"); !strings.Contains(out, "ran") || !strings.Contains(out, "exit code 0") {
		t.Fatalf("command output = %q, want ran and exit code 0", out)
	}
	b.screenshot("exec")

	// Ports: a dev server in the workspace is listed on its page, and its
	// Open form makes a preview link that serves the page. The form is
	// sent by the page's own fetch, as the button would, so the browser
	// stays on the console's page (the link opens in a new tab).
	pctx := ctxT(t, 2*time.Minute)
	const sitePage = "<h1>hello from the sandbox</h1>\n"
	for name, body := range map[string]string{"site/index.html": sitePage, "serve.py": devServerPy} {
		if _, err := p.api.WriteFile(pctx, ws, name, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	startServer(t, p, pctx, ws, "serve.py", "Serving HTTP")
	b.run("see the port and open it",
		chromedp.Navigate(b.base+"/workspaces/"+ws),
		visible(`#ports tr[data-port="8000"] button`),
		chromedp.Evaluate[chromedp.Void](`(() => {
			const f = document.querySelector('#ports tr[data-port="8000"] form');
			window.primerOpen = null;
			fetch(f.action, {method: "POST", body: new URLSearchParams(new FormData(f))})
				.then(r => r.text().then(t => { window.primerOpen = {url: r.url, status: r.status, text: t}; }));
		})()`),
	)
	b.waitJS("the preview link's page", `!!window.primerOpen && window.primerOpen.status === 200 && window.primerOpen.url.includes("/preview/pv-") && window.primerOpen.text.includes("hello from the sandbox")`, time.Minute)
	b.screenshot("ports")
	b.run("back to the workspace", chromedp.Navigate(b.base+"/workspaces/"+ws), visible(`#command`))

	// Files tab: read out.txt.
	b.run("open out.txt",
		click(`nav.tabs a[href$="/files"]`),
		visible(`#files tr[data-file="out.txt"]`),
		click(`#files tr[data-file="out.txt"] a`),
		visible(`#file-content`),
	)
	if got := strings.TrimSpace(b.text("#file-content")); got != "42" {
		t.Fatalf("out.txt in the Files tab = %q, want 42", got)
	}
	b.screenshot("file-out-txt")

	// Delete the workspace and see it gone from the list.
	b.run("delete the workspace",
		click(`nav.tabs a[href="/workspaces/`+ws+`"]`),
		visible(`#command`),
		click(`form[action="/workspaces/`+ws+`/delete"] button`),
		visible(`#workspaces`),
	)
	b.waitJS("the deleted workspace to leave the list", `!document.querySelector('#workspaces tr[data-ws="`+ws+`"]')`, 2*time.Minute)

	// A phase change shows on an open page without reload.
	ws2 := b.newWorkspace("code-sandbox")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = eng.Destroy(ctx, backend.Handle{Backend: container.Type, WorkspaceID: ws2})
	})
	b.waitJS("the second workspace running", `document.getElementById("phase").textContent === "running"`, 3*time.Minute)
	// Mark the page: a reload would lose the mark.
	b.run("mark the page", chromedp.Evaluate[chromedp.Void](`window.primerMark = 1`))
	if err := eng.Client().ContainerKill(ctxT(t, 30*time.Second), container.Name(ws2), "KILL"); err != nil {
		t.Fatal(err)
	}
	b.waitJS("failed on the open page", `document.getElementById("phase").textContent === "failed"`, 2*time.Minute)
	if !jsEval[bool](b, `window.primerMark === 1`) {
		t.Error("the page reloaded to show the phase change")
	}
	if reason := b.text("#reason"); !strings.Contains(reason, "exited") {
		t.Errorf("reason on the page = %q, want the container's exit", reason)
	}
	b.screenshot("workspace-failed")
	b.run("open the list", chromedp.Navigate(b.base+"/workspaces"), visible(`#workspaces`))
	if row := b.text(`#workspaces tr[data-ws="` + ws2 + `"]`); !strings.Contains(row, "failed") {
		t.Errorf("list row = %q, want failed", row)
	}
	b.screenshot("workspaces")
	for _, pg := range []string{"pools", "agents", "suites", "sessions"} {
		b.run("open "+pg, chromedp.Navigate(b.base+"/"+pg), visible(`main h1`))
		b.screenshot(pg)
	}
}

// newWorkspace creates a workspace of template through the New workspace
// form and returns its id, read from the page it lands on.
func (b *browser) newWorkspace(template string) string {
	b.t.Helper()
	b.run("create a workspace",
		chromedp.Navigate(b.base+"/workspaces"),
		visible(`#workspaces`),
		click(`a[href="/workspaces/new"]`),
		visible(`#template_id`),
		choose("#template_id", template),
		click(`form[action="/workspaces"] button[type=submit]`),
		visible(`#ws-facts`),
	)
	id := jsEval[string](b, `document.getElementById("ws-facts").dataset.ws`)
	if !strings.HasPrefix(id, "ws-") {
		b.t.Fatalf("workspace page id = %q", id)
	}
	return id
}

// TestConsoleSecurity checks what the console promises about identity:
// what users typed is escaped, the session cookie is HttpOnly and
// SameSite=Strict and is not the key, a cross-site POST is refused, and a
// viewer key sees no write controls. It needs no container engine.
func TestConsoleSecurity(t *testing.T) {
	chromium(t)
	p := startPrimer(t)
	ctx := ctxT(t, 3*time.Minute)
	root := t.TempDir()
	if _, err := p.api.CreateProvider(ctx, wire.ProviderSpec{ID: "host", Provider: "local", Config: raw(`{"kind":"local","root_path":"` + root + `"}`)}); err != nil {
		t.Fatal(err)
	}
	const evil = `<script>window.pwned=1</script>`
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "plain", ProviderID: "host", Description: evil, Backend: raw(`{"kind":"local"}`)}); err != nil {
		t.Fatal(err)
	}
	ws, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "plain", Labels: map[string]string{"note": evil}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, p.srv.URL(), 3*time.Minute)
	b.signIn(p.key)

	// Escaping: the description is text on the page, its script never ran.
	b.run("open templates", chromedp.Navigate(b.base+"/templates"), visible(`#templates`))
	if jsEval[bool](b, `window.pwned === 1`) {
		t.Fatal("a template description's <script> ran in the console")
	}
	if row := b.text(`#templates tr[data-id="plain"]`); !strings.Contains(row, evil) {
		t.Errorf("template row = %q, want the description shown as text", row)
	}

	// The session cookie's flags, and that it is not the key.
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base}})
	if err != nil {
		t.Fatalf("read cookies: %v", err)
	}
	cookies := res.Cookies
	var session *network.Cookie
	for _, c := range cookies {
		if c.Name == "primer_console" {
			session = c
		}
	}
	switch {
	case session == nil:
		t.Fatalf("no console session cookie among %d cookies", len(cookies))
	case !session.HTTPOnly:
		t.Error("session cookie is not HttpOnly")
	case session.SameSite != network.CookieSameSiteStrict:
		t.Errorf("session cookie SameSite = %q, want Strict", session.SameSite)
	case strings.Contains(p.key, session.Value) || strings.Contains(session.Value, p.key):
		t.Error("session cookie holds the API key")
	}

	// CSRF: a page on another origin posts a delete form; the console
	// refuses it and the workspace stays.
	evilSite := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form id=f method=post action="%s/workspaces/%s/delete"><input name=x value=1></form><script>document.getElementById("f").submit()</script>`, b.base, ws.ID)
	}))
	defer evilSite.Close()
	b.run("visit a cross-site page",
		chromedp.Navigate(evilSite.URL),
		chromedp.Poll[chromedp.Void](`location.href.indexOf("/delete") >= 0 && document.readyState === "complete"`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	body := b.text("body")
	if !strings.Contains(body, "refused") && !strings.Contains(body, "CSRF") {
		t.Errorf("cross-site POST answered %q, want refused", body)
	}
	// The same, by a client with the session cookie but no token: 403.
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(b.base)
	jar.SetCookies(u, []*http.Cookie{{Name: "primer_console", Value: session.Value}})
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, origin := range []string{"", "http://evil.example"} {
		req, _ := http.NewRequest(http.MethodPost, b.base+"/workspaces/"+ws.ID+"/delete", strings.NewReader("x=1"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST without token (Origin %q) = %d, want 403", origin, resp.StatusCode)
		}
	}
	if got, err := p.api.GetWorkspace(ctx, ws.ID); err != nil || got.Phase != wire.PhaseRunning {
		t.Fatalf("workspace after the refused posts = %+v, %v; want running", got, err)
	}

	// A viewer key sees no write controls.
	viewer, err := p.api.CreateAPIKey(ctx, wire.CreateAPIKeyRequest{Role: wire.RoleViewer, Name: "console-viewer"})
	if err != nil {
		t.Fatal(err)
	}
	vb := newBrowser(t, p.srv.URL(), 2*time.Minute)
	vb.signIn(viewer.Key)
	for _, pg := range []string{"/providers", "/templates", "/workspaces", "/pools", "/workspaces/" + ws.ID, "/workspaces/" + ws.ID + "/files"} {
		vb.run("open "+pg+" as viewer", chromedp.Navigate(vb.base+pg), visible(`main h1`))
		n := jsEval[int](vb, `document.querySelectorAll('main form[method=post], main textarea:not([readonly]), #command').length`)
		links := jsEval[int](vb, `document.querySelectorAll('a[href$="/new"], a[href^="/workspaces/new"]').length`)
		if n != 0 || links != 0 {
			t.Errorf("viewer on %s sees %d write forms and %d New links", pg, n, links)
		}
	}
	vb.screenshot("viewer-workspace")
	if role := vb.text("#role"); role != wire.RoleViewer {
		t.Errorf("role shown = %q", role)
	}
}

// TestConsoleLeaseFromPool: New workspace on a template with a warm pool
// leases from the pool (the form's default), and the workspace page shows
// Return.
func TestConsoleLeaseFromPool(t *testing.T) {
	chromium(t)
	p := startPrimer(t)
	ctx := ctxT(t, 3*time.Minute)
	if _, err := p.api.CreateProvider(ctx, wire.ProviderSpec{ID: "host", Provider: "local", Config: raw(`{"kind":"local","root_path":"` + t.TempDir() + `"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "warm", ProviderID: "host", Backend: raw(`{"kind":"local"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.api.CreatePool(ctx, wire.PoolSpec{ID: "warm-pool", TemplateID: "warm", Size: 1}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "an idle pooled workspace", func() bool {
		pl, err := p.api.GetPool(ctx, "warm-pool")
		return err == nil && pl.Status.Idle == 1
	})
	b := newBrowser(t, p.srv.URL(), 2*time.Minute)
	b.signIn(p.key)
	id := b.newWorkspace("warm")
	ws, err := p.api.GetWorkspace(ctx, id)
	if err != nil || ws.PoolID != "warm-pool" || ws.PoolState != wire.PoolLeased {
		t.Fatalf("workspace made by New workspace = %+v, %v; want leased from warm-pool", ws, err)
	}
	b.run("return it", visible(`form[action="/workspaces/`+id+`/return"]`), click(`form[action="/workspaces/`+id+`/return"] button`), visible(`.notice`))
	eventually(t, time.Minute, "the workspace back in the pool", func() bool {
		ws, err := p.api.GetWorkspace(ctx, id)
		return err != nil || ws.PoolState != wire.PoolLeased
	})
}

// TestConsoleEvalAndSessions opens the eval pages (suite, a run started from
// the console, its results, two runs compared with the regression first)
// and a session's tool calls with their diff, then restores an earlier
// call from the page.
func TestConsoleEvalAndSessions(t *testing.T) {
	chromium(t)
	p := startPrimer(t)
	ctx := ctxT(t, 4*time.Minute)
	flag := filepath.Join(t.TempDir(), "flag")
	if err := os.WriteFile(flag, []byte("pass"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := eval.SuiteSpec{ID: "flip", TemplateID: wire.DefaultTemplateID, Cases: []eval.Case{
		{ID: "steady", Command: script("true")},
		{ID: "flipper", Command: script("grep -q pass " + flag)},
	}}
	if _, err := p.api.CreateSuite(ctx, spec); err != nil {
		t.Fatal(err)
	}
	run1, err := p.api.CreateRun(ctx, "flip", wire.RunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, p.api, run1.ID, 2*time.Minute)
	if err := os.WriteFile(flag, []byte("fail"), 0o644); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, p.srv.URL(), 3*time.Minute)
	b.signIn(p.key)
	b.run("start a run from the suite page",
		click(`nav.side a[href="/suites"]`),
		visible(`#suites`),
		click(`#suites a[href="/suites/flip"]`),
		visible(`#runs`),
		click(`form[action="/suites/flip/runs"] button`),
		visible(`#run-status`),
	)
	run2 := jsEval[string](b, `location.pathname.split("/").pop()`)
	waitRun(t, p.api, run2, 2*time.Minute)
	b.run("see the results", chromedp.Navigate(b.base+"/runs/"+run2), visible(`#results`))
	if st := b.text("#run-status"); !strings.Contains(st, wire.RunSucceeded) {
		t.Errorf("run status on the page = %q", st)
	}
	b.screenshot("run")
	b.run("compare with the first run",
		choose("#base", run1.ID),
		click(`form[action$="/compare"] button`),
		visible(`#regressions`),
	)
	if reg := b.text(`main table`); !strings.Contains(reg, "flipper") || strings.Contains(reg, "steady") {
		t.Errorf("first table of the comparison = %q, want the regression flipper alone", reg)
	}
	b.screenshot("compare")

	// A session with two writes: the page shows each call with its diff;
	// restoring the first brings its content back.
	ws, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil); err != nil {
		t.Fatal(err)
	}
	ses, err := p.api.CreateSession(ctx, wire.CreateSessionRequest{WorkspaceID: ws.ID, Agent: "console-test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"first version\n", "second version\n"} {
		if _, err := p.api.ToolWrite(ctx, ses.ID, "notes.txt", []byte(v), 0); err != nil {
			t.Fatal(err)
		}
	}
	b.run("open the session",
		click(`nav.side a[href="/sessions"]`),
		visible(`#sessions`),
		click(`#sessions a[href="/sessions/`+ses.ID+`"]`),
		visible(`.history`),
	)
	if diffs := b.text(".history"); !strings.Contains(diffs, "+first version") || !strings.Contains(diffs, "+second version") {
		t.Errorf("session page = %q, want both diffs", diffs)
	}
	b.screenshot("session")
	// The history lists the newest call first; the first write is the call
	// whose diff never mentions the second version.
	b.run("restore the first call",
		chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll(".history > li")].find(li => !li.textContent.includes("second version")).querySelector("form button").click()`),
		visible(`.notice`))
	if got, err := p.api.ReadFile(ctx, ws.ID, "notes.txt"); err != nil || string(got) != "first version\n" {
		t.Errorf("notes.txt after restore = %q, %v", got, err)
	}
}
