package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// TestLocalWorkspaceLifecycle is the newcomer's walk through the REST API:
// create on the default template, exec, files, events, the workflow's search
// attributes in Temporal, delete, and nothing left behind.
// It runs on the embedded SQLite and on PostgreSQL.
func TestLocalWorkspaceLifecycle(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testLifecycle(t, startPrimer(t)) })
	t.Run("postgres", func(t *testing.T) { testLifecycle(t, startPrimer(t, withPostgres(t))) })
}

func testLifecycle(t *testing.T, p *primer) {
	ctx := ctxT(t, 3*time.Minute)

	provs, err := p.api.ListProviders(ctx)
	if err != nil || len(provs) != 1 || provs[0].ID != wire.LocalProviderID {
		t.Fatalf("providers at first start = %+v, %v; want the local provider only", provs, err)
	}
	if _, err := p.api.GetTemplate(ctx, wire.DefaultTemplateID); err != nil {
		t.Fatalf("default template: %v", err)
	}

	ws, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID, Labels: map[string]string{"suite": "e2e"}})
	if err != nil {
		t.Fatalf("create workspace: %v", err)
	}
	if !strings.HasPrefix(ws.ID, "ws-") || ws.Phase != wire.PhasePending {
		t.Fatalf("created workspace = %+v; want id ws-..., phase pending", ws)
	}
	ws, err = p.api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil)
	if err != nil {
		t.Fatalf("wait running: %v", err)
	}
	dir := ws.Path
	if dir != filepath.Join(p.cfg.DataDir, "workspaces", ws.ID) {
		t.Errorf("workspace_path = %q, want it under the local provider's root", dir)
	}

	res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: ws.ID, Command: []string{"sh", "-c", "echo hello $WHO; pwd; echo oops >&2; exit 3"}, Env: map[string]string{"WHO": "primer"}})
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	if res.ExitCode != 3 || res.Stdout != "hello primer\n"+dir+"\n" || res.Stderr != "oops\n" {
		t.Errorf("exec = exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}

	if _, err := p.api.WriteFile(ctx, ws.ID, "src/main.py", strings.NewReader("print(6 * 7)\n")); err != nil {
		t.Fatalf("write file: %v", err)
	}
	got, err := p.api.ReadFile(ctx, ws.ID, "src/main.py")
	if err != nil || string(got) != "print(6 * 7)\n" {
		t.Errorf("read file = %q, %v", got, err)
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, "src", "main.py"))
	if err != nil || string(onDisk) != "print(6 * 7)\n" {
		t.Errorf("file on disk = %q, %v", onDisk, err)
	}
	listing, err := p.api.ListFiles(ctx, ws.ID, "")
	if err != nil || len(listing.Items) != 1 || listing.Items[0].Name != "src" || !listing.Items[0].IsDir {
		t.Errorf("list root = %+v, %v; want the src directory", listing, err)
	}
	if _, err := p.api.ReadFile(ctx, ws.ID, "../../etc/passwd"); errs.KindOf(err) != errs.Invalid {
		t.Errorf("read ../../etc/passwd: err = %v, want invalid", err)
	}

	// The workflow is visible in Temporal with current search attributes.
	tc := p.srv.TemporalClient()
	query := fmt.Sprintf("WorkflowId = '%s' AND PrimerPhase = 'running' AND PrimerTemplate = 'default' AND PrimerProvider = 'local' AND PrimerBackend = 'local'", workflows.WorkflowID(ws.ID))
	eventually(t, 30*time.Second, "workflow visible by search attributes", func() bool {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		return err == nil && len(resp.Executions) == 1
	})

	if _, err := p.api.DeleteWorkspace(ctx, ws.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := p.api.WaitGone(ctx, ws.ID, nil); err != nil {
		t.Fatalf("wait gone: %v", err)
	}
	if _, err := p.api.GetWorkspace(ctx, ws.ID); errs.KindOf(err) != errs.NotFound {
		t.Errorf("GET after delete: err = %v, want not_found", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("workspace dir after delete: stat err = %v, want not exist", err)
	}
	// The row goes in the workflow's last activity; the workflow completes
	// with the task that follows, a moment later on a loaded machine.
	eventually(t, 30*time.Second, "the workflow completed after the delete", func() bool {
		desc, err := tc.DescribeWorkflowExecution(ctx, workflows.WorkflowID(ws.ID), "")
		return err == nil && desc.WorkflowExecutionInfo.Status == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})

	// Events: provisioned, pending->running, running->terminating, destroyed, in order.
	evs, err := p.api.Events(ctx, ws.ID, 0)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
		if strings.Contains(string(e.Data), "token") {
			t.Errorf("event %s mentions a token: %s", e.Type, e.Data)
		}
	}
	want := []string{wire.EventProvisioned, wire.EventPhaseChanged, wire.EventPhaseChanged, wire.EventDestroyed}
	if strings.Join(types, ",") != strings.Join(want, ",") {
		t.Errorf("event types = %v, want %v", types, want)
	}
	if len(evs) == len(want) {
		var prov struct{ WorkspaceType, WorkspacePath string }
		decode(t, evs[0].Data, &prov)
		if prov.WorkspaceType != "local" || prov.WorkspacePath != dir {
			t.Errorf("provisioned data = %s", evs[0].Data)
		}
		var ph struct{ From, To string }
		decode(t, evs[1].Data, &ph)
		if ph.From != "pending" || ph.To != "running" {
			t.Errorf("first phase change = %s, want pending -> running", evs[1].Data)
		}
	}
}

// TestFailureAndRecoveryEndsSessions removes a local workspace's directory
// behind its back: three missed probes make it failed and end its sessions
// with workspace_lost; restoring the directory brings it back to running
// after three hits.
func TestFailureAndRecoveryEndsSessions(t *testing.T) {
	p := startPrimer(t, withProbeInterval(150*time.Millisecond))
	ctx := ctxT(t, 3*time.Minute)
	ws := createRunning(t, p, wire.DefaultTemplateID)
	ses, err := p.api.CreateSession(ctx, wire.CreateSessionRequest{WorkspaceID: ws.ID, Agent: "eval-1"})
	if err != nil || ses.Status != wire.SessionOpen {
		t.Fatalf("create session = %+v, %v", ses, err)
	}

	hidden := ws.Path + ".hidden"
	if err := os.Rename(ws.Path, hidden); err != nil {
		t.Fatal(err)
	}
	failed, err := p.api.WaitWorkspace(ctx, ws.ID, wire.PhaseFailed, nil)
	if err != nil {
		t.Fatalf("wait failed: %v", err)
	}
	if failed.Reason == "" {
		t.Error("failed workspace has no reason")
	}
	ses, err = p.api.GetSession(ctx, ses.ID)
	if err != nil || ses.Status != wire.SessionEnded || ses.EndReason != wire.ReasonWorkspaceLost {
		t.Errorf("session after failure = %+v, %v; want ended workspace_lost", ses, err)
	}
	if _, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: ws.ID, Command: []string{"true"}}); errs.KindOf(err) != errs.Precondition {
		t.Errorf("exec on failed workspace: err = %v, want failed_precondition", err)
	}

	if err := os.Rename(hidden, ws.Path); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "running again after three hits", func() bool {
		got, err := p.api.GetWorkspace(ctx, ws.ID)
		return err == nil && got.Phase == wire.PhaseRunning
	})
	evs, _ := p.api.Events(ctx, ws.ID, 0)
	var phases []string
	for _, e := range evs {
		if e.Type == wire.EventPhaseChanged {
			var ph struct{ From, To string }
			decode(t, e.Data, &ph)
			phases = append(phases, ph.From+">"+ph.To)
		}
	}
	if got := strings.Join(phases, " "); got != "pending>running running>failed failed>running" {
		t.Errorf("phase changes = %q", got)
	}
}

// TestRestartCarriesOn stops primer serve and starts it on the same data dir:
// the workspace keeps its phase, its files and its exec; delete still works.
func TestRestartCarriesOn(t *testing.T) {
	p := startPrimer(t)
	ctx := ctxT(t, 3*time.Minute)
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "with-env", ProviderID: "local", Backend: raw(`{"kind":"local","env":{"API_KEY":"s3cret-value"},"config_toml":` + recipeConfigJSON + `}`)}); err != nil {
		t.Fatal(err)
	}
	ws := createRunning(t, p, "with-env")
	checkHarnessTOML(t, p, ctx, ws.ID)
	if _, err := p.api.WriteFile(ctx, ws.ID, "keep.txt", strings.NewReader("kept")); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	p.restart()
	t.Logf("restart took %s", time.Since(start))

	got, err := p.api.GetWorkspace(ctx, ws.ID)
	if err != nil || got.Phase != wire.PhaseRunning {
		t.Fatalf("after restart: %+v, %v; want running", got, err)
	}
	data, err := p.api.ReadFile(ctx, ws.ID, "keep.txt")
	if err != nil || string(data) != "kept" {
		t.Errorf("file after restart = %q, %v", data, err)
	}
	// The runtime is served again with the template's env, which is never
	// stored with the handle or in workflow history.
	res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: ws.ID, Command: []string{"sh", "-c", "cat keep.txt; echo \" $API_KEY\""}})
	if err != nil || res.Stdout != "kept s3cret-value\n" {
		t.Errorf("exec after restart = %+v, %v", res, err)
	}
	tpl, err := p.api.GetTemplate(ctx, "with-env")
	if err != nil || strings.Contains(string(tpl.Backend), "s3cret-value") {
		t.Errorf("template response shows the env secret: %s, %v", tpl.Backend, err)
	}
	// The probe loop is still alive: a delete completes.
	start = time.Now()
	if _, err := p.api.DeleteWorkspace(ctx, ws.ID); err != nil {
		t.Fatal(err)
	}
	if err := p.api.WaitGone(ctx, ws.ID, nil); err != nil {
		t.Fatalf("delete after restart: %v", err)
	}
	t.Logf("delete after restart took %s", time.Since(start))
}

// TestWorktreeWorkspace makes a workspace as a git worktree on its own branch
// and removes worktree and branch on delete.
func TestWorktreeWorkspace(t *testing.T) {
	p := startPrimer(t)
	ctx := ctxT(t, 3*time.Minute)
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# repo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", ".")
	git(t, repo, "-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-q", "-m", "init")

	root := t.TempDir()
	if _, err := p.api.CreateProvider(ctx, wire.ProviderSpec{ID: "repos", Provider: "worktree", Config: raw(`{"kind":"worktree","root_path":"` + root + `"}`)}); err != nil {
		t.Fatalf("create provider: %v", err)
	}
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "repo", ProviderID: "repos", Backend: raw(`{"kind":"worktree","repository":"` + repo + `","base_ref":"main","config_toml":` + recipeConfigJSON + `}`)}); err != nil {
		t.Fatalf("create template: %v", err)
	}
	ws := createRunning(t, p, "repo")
	checkHarnessTOML(t, p, ctx, ws.ID)
	res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: ws.ID, Command: []string{"sh", "-c", "git branch --show-current && cat README.md"}})
	if err != nil || res.Stdout != "primer/"+ws.ID+"\n# repo\n" {
		t.Fatalf("exec in worktree = %+v, %v", res, err)
	}
	if _, err := p.api.DeleteWorkspace(ctx, ws.ID); err != nil {
		t.Fatal(err)
	}
	if err := p.api.WaitGone(ctx, ws.ID, nil); err != nil {
		t.Fatal(err)
	}
	if out := git(t, repo, "branch", "--list", "primer/*"); strings.TrimSpace(out) != "" {
		t.Errorf("branches left after delete: %q", out)
	}
	if _, err := os.Stat(ws.Path); !os.IsNotExist(err) {
		t.Errorf("worktree dir left after delete: %v", err)
	}
}

// TestProvisionFailure: an init command that fails gives provision_failed,
// then the workspace ends failed; delete still removes it and its directory.
func TestProvisionFailure(t *testing.T) {
	p := startPrimer(t)
	ctx := ctxT(t, 3*time.Minute)
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "broken", ProviderID: "local", Backend: raw(`{"kind":"local","env":{"API_KEY":"sk-live-abc123"},"init":["echo doomed $API_KEY >&2; exit 7"]}`)}); err != nil {
		t.Fatal(err)
	}
	ws := createInPhase(t, p, "broken", wire.PhaseFailed)
	if !strings.Contains(ws.Reason, "doomed") {
		t.Errorf("reason = %q, want the init command's stderr", ws.Reason)
	}
	evs, _ := p.api.Events(ctx, ws.ID, 0)
	var sawFailed bool
	for _, e := range evs {
		if e.Type == wire.EventProvisionFailed {
			sawFailed = strings.Contains(string(e.Data), "doomed") && strings.Contains(string(e.Data), `"workspace_type":"local"`)
		}
		if e.Type == wire.EventProvisioned {
			t.Errorf("provisioned event for a failed provision: %s", e.Data)
		}
	}
	if !sawFailed {
		t.Errorf("no provision_failed event with the error in %+v", evs)
	}
	// The template's secret env value, printed by the init command, reaches
	// neither the reason, the events nor the workflow history.
	const secret = "sk-live-abc123"
	if strings.Contains(ws.Reason, secret) {
		t.Errorf("reason shows the secret: %q", ws.Reason)
	}
	for _, e := range evs {
		if strings.Contains(string(e.Data), secret) {
			t.Errorf("event %s shows the secret: %s", e.Type, e.Data)
		}
	}
	iter := p.srv.TemporalClient().GetWorkflowHistory(ctx, workflows.WorkflowID(ws.ID), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	events := 0
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatalf("history: %v", err)
		}
		events++
		if strings.Contains(ev.String(), secret) {
			t.Errorf("workflow history event %d (%s) shows the secret", ev.GetEventId(), ev.GetEventType())
		}
	}
	if events == 0 {
		t.Error("read no workflow history")
	}
	if _, err := p.api.DeleteWorkspace(ctx, ws.ID); err != nil {
		t.Fatal(err)
	}
	if err := p.api.WaitGone(ctx, ws.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.cfg.DataDir, "workspaces", ws.ID)); !os.IsNotExist(err) {
		t.Errorf("directory of a failed workspace left behind: %v", err)
	}
}

func createRunning(t *testing.T, p *primer, template string) *wire.Workspace {
	t.Helper()
	return createInPhase(t, p, template, wire.PhaseRunning)
}

// createInPhase creates a workspace from template and waits until it
// reaches phase (running, or failed for a template that cannot work).
func createInPhase(t *testing.T, p *primer, template, phase string) *wire.Workspace {
	t.Helper()
	ctx := ctxT(t, 2*time.Minute)
	ws, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: template})
	if err != nil {
		t.Fatalf("create workspace: %v", err)
	}
	ws, err = p.api.WaitWorkspace(ctx, ws.ID, phase, nil)
	if err != nil {
		t.Fatalf("wait %s: %v", phase, err)
	}
	return ws
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command(testenv.Git(t), append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func decode(t *testing.T, data json.RawMessage, v any) {
	t.Helper()
	// Event data is snake_case; decode through a map so the test structs stay small.
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("event data %s: %v", data, err)
	}
	fixed := map[string]any{}
	for k, val := range m {
		fixed[strings.ReplaceAll(k, "_", "")] = val
	}
	b, _ := json.Marshal(fixed)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("event data %s: %v", data, err)
	}
}
