package evalrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// evalLifecycle makes workspaces the way starter.Starter does, minus
// the workflow: a row, provisioned at once and running. Deletes destroy
// the sandbox and the row; returns put a leased workspace back to idle.
type evalLifecycle struct {
	r        *rig
	mu       sync.Mutex
	created  []string
	deleted  []string
	returned []string
	notified int
	// signalOnly makes a delete what the real one is, a signal: the
	// workspace stays as it is until its workflow gets to it.
	signalOnly bool
}

func (l *evalLifecycle) CreateWorkspace(ctx context.Context, req activities.CreateWorkspaceRequest) (*wire.Workspace, error) {
	w := &wire.Workspace{ID: models.NewID("ws"), TemplateID: req.TemplateID, ProviderID: "mem", Backend: memory.Type,
		Phase: wire.PhasePending, Labels: req.Labels, PoolID: req.PoolID}
	if req.PoolID != "" {
		w.PoolState = wire.PoolIdle
	}
	if err := l.r.store.CreateWorkspace(ctx, w); err != nil {
		return nil, err
	}
	if _, err := l.r.workspaces.Provision(ctx, activities.ProvisionInput{WorkspaceID: w.ID}); err != nil {
		return nil, err
	}
	if err := l.r.store.SetWorkspacePhase(ctx, w.ID, wire.PhaseRunning, "up"); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.created = append(l.created, w.ID)
	l.mu.Unlock()
	return l.r.store.GetWorkspace(ctx, w.ID)
}

func (l *evalLifecycle) DeleteWorkspace(ctx context.Context, w *wire.Workspace, reason string) error {
	l.mu.Lock()
	l.deleted = append(l.deleted, w.ID)
	signalOnly := l.signalOnly
	l.mu.Unlock()
	if signalOnly {
		return nil
	}
	_, err := l.r.workspaces.Destroy(ctx, activities.DestroyInput{WorkspaceID: w.ID})
	return err
}

func (l *evalLifecycle) NotifyPool(context.Context, string) error {
	l.mu.Lock()
	l.notified++
	l.mu.Unlock()
	return nil
}

func (l *evalLifecycle) ReturnWorkspace(ctx context.Context, w *wire.Workspace) error {
	l.mu.Lock()
	l.returned = append(l.returned, w.ID)
	l.mu.Unlock()
	return l.r.store.SetPoolState(ctx, w.ID, wire.PoolReturning, wire.PoolIdle)
}

func (l *evalLifecycle) AdoptWorkspace(context.Context, *wire.Workspace) (bool, error) {
	return false, nil
}

func (l *evalLifecycle) SignalSnapshot(context.Context, *wire.Workspace, *wire.Snapshot) error {
	return nil
}

// evalRig is a rig with the eval lifecycle and a template "et".
type evalRig struct {
	*rig
	lc *evalLifecycle
}

const evalTemplate = `{"kind":"memory","env":{"TEMPLATE_KEY":"template-secret-1"},"files":{"base.txt":"from the template\n"}}`

func newEvalRig(t *testing.T) *evalRig {
	t.Helper()
	r := newRig(t)
	lc := &evalLifecycle{r: r}
	r.a.Lifecycle = lc
	ctx := context.Background()
	if err := r.store.CreateTemplate(ctx, &wire.Template{ID: "et", ProviderID: "mem", Backend: json.RawMessage(evalTemplate)}); err != nil {
		t.Fatal(err)
	}
	return &evalRig{rig: r, lc: lc}
}

// run stores a suite of cases (on template et unless ss names a pool)
// and a run of all of them.
func (r *evalRig) run(t *testing.T, runID string, ss eval.SuiteSpec, cases ...eval.Case) *wire.Run {
	t.Helper()
	ctx := context.Background()
	if ss.ID == "" {
		ss.ID = "suite-" + runID
	}
	if ss.PoolID == "" && ss.TemplateID == "" {
		ss.TemplateID = "et"
	}
	spec, err := json.Marshal(ss)
	if err != nil {
		t.Fatal(err)
	}
	var rows []wire.SuiteCase
	for i, c := range cases {
		raw, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, wire.SuiteCase{SuiteID: ss.ID, Ordinal: i, CaseID: c.ID, Labels: c.Labels, Spec: raw})
	}
	if err := r.store.CreateSuite(ctx, &wire.Suite{ID: ss.ID, TemplateID: ss.TemplateID, PoolID: ss.PoolID, Spec: spec}, rows); err != nil {
		t.Fatal(err)
	}
	run, err := CreateRun(ctx, r.store, CreateRunSpec{RunID: runID, SuiteID: ss.ID, Trigger: wire.TriggerUser, TriggeredBy: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// workspace acquires a running workspace for slot 0 of the run.
func (r *evalRig) acquire(t *testing.T, runID string, slot int) string {
	t.Helper()
	out, err := r.a.AcquireWorkspace(context.Background(), AcquireWorkspaceInput{RunID: runID, Slot: slot})
	if err != nil {
		t.Fatal(err)
	}
	return out.WorkspaceID
}

func (r *evalRig) result(t *testing.T, runID string, ord int) *wire.CaseResult {
	t.Helper()
	cr, err := r.store.GetCaseResult(context.Background(), runID, ord)
	if err != nil {
		t.Fatal(err)
	}
	return cr
}

func attemptsOf(t *testing.T, cr *wire.CaseResult) []eval.Attempt {
	t.Helper()
	var out []eval.Attempt
	if len(cr.Attempts) > 0 {
		if err := json.Unmarshal(cr.Attempts, &out); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func script(s string) eval.Command { return eval.Command{Script: s} }

func intp(n int) *int { return &n }

// RunCase judges what the command did: exit code, stdout, a timeout, a
// failing setup, expected files, a score file, a program not found. Each
// case after the first resets the workspace.
func TestRunCaseOutcomes(t *testing.T) {
	r := newEvalRig(t)
	ctx := context.Background()
	cases := []struct {
		c           eval.Case
		wantVerdict string
		wantReason  string
		check       func(t *testing.T, cr *wire.CaseResult)
	}{
		{
			c: eval.Case{ID: "pass", Command: script(`cat base.txt; echo "ok $GREETING"`), Env: map[string]string{"GREETING": "hi"},
				Expect: eval.Expect{StdoutContains: []string{"ok hi", "from the template"}}},
			wantVerdict: eval.VerdictPass,
			check: func(t *testing.T, cr *wire.CaseResult) {
				if cr.ExitCode == nil || *cr.ExitCode != 0 || !strings.Contains(cr.Stdout, "ok hi") {
					t.Errorf("result = exit %v stdout %q", cr.ExitCode, cr.Stdout)
				}
			},
		},
		{
			c:           eval.Case{ID: "exit", Command: script(`echo some output; echo oops >&2; exit 3`)},
			wantVerdict: eval.VerdictFail, wantReason: "exit code 3, want 0",
			check: func(t *testing.T, cr *wire.CaseResult) {
				if cr.ExitCode == nil || *cr.ExitCode != 3 || cr.Stdout != "some output\n" || cr.Stderr != "oops\n" {
					t.Errorf("result = exit %v stdout %q stderr %q", cr.ExitCode, cr.Stdout, cr.Stderr)
				}
			},
		},
		{
			c:           eval.Case{ID: "expected-exit", Command: eval.Command{Args: []string{"false"}}, Expect: eval.Expect{ExitCode: intp(1)}},
			wantVerdict: eval.VerdictPass,
		},
		{
			c:           eval.Case{ID: "stdout", Command: script(`echo nope`), Expect: eval.Expect{StdoutContains: []string{"yes"}}},
			wantVerdict: eval.VerdictFail, wantReason: `stdout does not contain "yes"`,
		},
		{
			c:           eval.Case{ID: "timeout", Command: script(`echo started; sleep 30`), Timeout: eval.Duration(500 * time.Millisecond)},
			wantVerdict: eval.VerdictFail, wantReason: "timed out after 500ms",
			check: func(t *testing.T, cr *wire.CaseResult) {
				if cr.DurationMS > 10_000 || cr.CommandMS < 400 || !strings.Contains(cr.Stdout, "started") {
					t.Errorf("timed out case: duration %d ms, command %d ms, stdout %q", cr.DurationMS, cr.CommandMS, cr.Stdout)
				}
			},
		},
		{
			c: eval.Case{ID: "setup", Setup: []string{"true", "echo broken >&2; exit 2"}, Command: script(`touch ran`),
				Collect: []string{"ran"}},
			wantVerdict: eval.VerdictFail, wantReason: "setup[1]: exit status 2: broken",
			check: func(t *testing.T, cr *wire.CaseResult) {
				if cr.ExitCode != nil {
					t.Errorf("exit code %d stored for a command that never ran", *cr.ExitCode)
				}
				var arts []eval.Artifact
				_ = json.Unmarshal(cr.Artifacts, &arts)
				if len(arts) != 1 || arts[0].Error != "missing" {
					t.Errorf("artifacts = %+v, want ran missing", arts)
				}
			},
		},
		{
			c: eval.Case{ID: "files", Files: map[string]eval.File{"in/data.txt": eval.Text("41")},
				Setup:   []string{"test -f in/data.txt"},
				Command: script(`echo $(( $(cat in/data.txt) + 1 )) > out.txt`),
				Expect:  eval.Expect{Files: map[string]eval.File{"out.txt": eval.Text("42\n")}}},
			wantVerdict: eval.VerdictPass,
		},
		{
			c: eval.Case{ID: "files-differ", Command: script(`echo 41 > out.txt`),
				Expect: eval.Expect{Files: map[string]eval.File{"out.txt": eval.Text("42\n")}}},
			wantVerdict: eval.VerdictFail, wantReason: "file out.txt: content differs",
		},
		{
			c: eval.Case{ID: "score", ScoreFile: "score.json",
				Command: script(`echo '{"score": 0.75, "metrics": {"tokens": 120, "latency_s": 1.5}}' > score.json`)},
			wantVerdict: eval.VerdictPass,
			check: func(t *testing.T, cr *wire.CaseResult) {
				if cr.Score == nil || *cr.Score != 0.75 || cr.Metrics["tokens"] != 120 || cr.Metrics["latency_s"] != 1.5 {
					t.Errorf("score %v metrics %v", cr.Score, cr.Metrics)
				}
			},
		},
		{
			// A bad score file is no score, not a failure.
			c:           eval.Case{ID: "bad-score", ScoreFile: "score.json", Command: script(`echo not json > score.json`)},
			wantVerdict: eval.VerdictPass,
			check: func(t *testing.T, cr *wire.CaseResult) {
				if cr.Score != nil || cr.Metrics != nil {
					t.Errorf("score %v metrics %v from a bad file", cr.Score, cr.Metrics)
				}
			},
		},
		{
			c:           eval.Case{ID: "no-program", Command: eval.Command{Args: []string{"no-such-program-primer"}}},
			wantVerdict: eval.VerdictFail, wantReason: "exit code 127, want 0",
		},
	}
	var all []eval.Case
	for _, tc := range cases {
		all = append(all, tc.c)
	}
	r.run(t, "run-outcomes", eval.SuiteSpec{}, all...)
	ws := r.acquire(t, "run-outcomes", 0)
	for i, tc := range cases {
		t.Run(tc.c.ID, func(t *testing.T) {
			out, err := r.a.RunCase(ctx, RunCaseInput{RunID: "run-outcomes", Ordinal: i, WorkspaceID: ws, Attempt: 1, Reset: i > 0})
			if err != nil {
				t.Fatal(err)
			}
			if out.Verdict != tc.wantVerdict || out.Infra || out.Skipped || !strings.Contains(out.Reason, tc.wantReason) {
				t.Errorf("output = %+v, want %s with reason %q", out, tc.wantVerdict, tc.wantReason)
			}
			cr := r.result(t, "run-outcomes", i)
			if cr.Status != wire.CaseDone || cr.Verdict != tc.wantVerdict || cr.Reason != out.Reason || cr.EndedAt == nil || cr.StartedAt == nil {
				t.Errorf("stored = %s %s %q", cr.Status, cr.Verdict, cr.Reason)
			}
			atts := attemptsOf(t, cr)
			if len(atts) != 1 || atts[0].Attempt != 1 || atts[0].WorkspaceID != ws || atts[0].Verdict != tc.wantVerdict ||
				atts[0].EndedAt.Before(atts[0].StartedAt) {
				t.Errorf("attempts = %+v", atts)
			}
			if cr.CommandMS > cr.DurationMS {
				t.Errorf("command %d ms longer than the case %d ms", cr.CommandMS, cr.DurationMS)
			}
			if tc.check != nil {
				tc.check(t, cr)
			}
		})
	}
}

// Collected files are kept up to MaxArtifactBytes each and
// MaxArtifactsBytes together, cut ones marked; missing paths and
// directories say why.
func TestRunCaseCollect(t *testing.T) {
	r := newEvalRig(t)
	ctx := context.Background()
	big := eval.MaxArtifactBytes + 1000
	c := eval.Case{ID: "collect", Command: script(fmt.Sprintf(`
echo small > small.txt
mkdir -p dir
for i in 1 2 3 4 5; do head -c %d /dev/zero | tr '\0' x > big$i.bin; done`, big)),
		Collect: []string{"small.txt", "missing.txt", "dir", "big1.bin", "big2.bin", "big3.bin", "big4.bin", "big5.bin"}}
	r.run(t, "run-collect", eval.SuiteSpec{}, c)
	ws := r.acquire(t, "run-collect", 0)
	if _, err := r.a.RunCase(ctx, RunCaseInput{RunID: "run-collect", Ordinal: 0, WorkspaceID: ws, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	var arts []eval.Artifact
	if err := json.Unmarshal(r.result(t, "run-collect", 0).Artifacts, &arts); err != nil {
		t.Fatal(err)
	}
	if len(arts) != 8 {
		t.Fatalf("artifacts = %d, want 8", len(arts))
	}
	if a := arts[0]; string(a.Data) != "small\n" || a.Size != 6 || a.Truncated || a.Error != "" {
		t.Errorf("small = %+v", a)
	}
	if arts[1].Error != "missing" || arts[2].Error != "a directory" {
		t.Errorf("missing = %+v, dir = %+v", arts[1], arts[2])
	}
	total := 0
	for i, a := range arts[3:] {
		total += len(a.Data)
		if a.Size != int64(big) || !a.Truncated {
			t.Errorf("big%d: size %d truncated %v", i+1, a.Size, a.Truncated)
		}
		if len(a.Data) > eval.MaxArtifactBytes {
			t.Errorf("big%d keeps %d bytes, over %d", i+1, len(a.Data), eval.MaxArtifactBytes)
		}
	}
	if total+6 > eval.MaxArtifactsBytes || total < eval.MaxArtifactsBytes-6-eval.MaxArtifactBytes {
		t.Errorf("kept %d bytes in all, want about %d", total+6, eval.MaxArtifactsBytes)
	}
	if len(arts[3].Data) != eval.MaxArtifactBytes || len(arts[7].Data) != 0 {
		t.Errorf("first big keeps %d bytes, last %d; want the budget spent in order", len(arts[3].Data), len(arts[7].Data))
	}
}

// A case on a reused workspace sees nothing the case before it left: not
// its file, not its background process, not its env.
func TestRunCaseResetIsolatesCases(t *testing.T) {
	r := newEvalRig(t)
	ctx := context.Background()
	outside := t.TempDir()
	pidFile := filepath.Join(outside, "pid")
	first := eval.Case{ID: "dirty", Env: map[string]string{"LEFT_BY_FIRST": "first-case-secret"},
		Command: script(fmt.Sprintf(`echo left > leftover.txt; sleep 600 & echo $! > %s; export LEFT_BY_FIRST`, pidFile))}
	second := eval.Case{ID: "clean", Command: script(`test ! -e leftover.txt && test -z "$LEFT_BY_FIRST" && test -f base.txt`)}
	r.run(t, "run-iso", eval.SuiteSpec{}, first, second)
	ws := r.acquire(t, "run-iso", 0)
	if out, err := r.a.RunCase(ctx, RunCaseInput{RunID: "run-iso", Ordinal: 0, WorkspaceID: ws, Attempt: 1}); err != nil || out.Verdict != eval.VerdictPass {
		t.Fatalf("first case = %+v, %v", out, err)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if pid <= 0 {
		t.Fatalf("pid file holds %q", raw)
	}
	// The case's background process ends with the case, before any later
	// case could see it (a host runtime's reset kills only what runs).
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the first case's background process %d outlived its case", pid)
	}
	out, err := r.a.RunCase(ctx, RunCaseInput{RunID: "run-iso", Ordinal: 1, WorkspaceID: ws, Attempt: 1, Reset: true})
	if err != nil || out.Verdict != eval.VerdictPass {
		t.Fatalf("second case = %+v, %v; want pass on a clean workspace", out, err)
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// A case already final is never executed again: a retried activity or a
// resumed run gets the stored verdict.
func TestRunCaseSkipsFinalCase(t *testing.T) {
	r := newEvalRig(t)
	ctx := context.Background()
	counter := filepath.Join(t.TempDir(), "count")
	r.run(t, "run-once", eval.SuiteSpec{}, eval.Case{ID: "once", Command: script("echo ran >> " + counter)})
	ws := r.acquire(t, "run-once", 0)
	for i := range 3 {
		out, err := r.a.RunCase(ctx, RunCaseInput{RunID: "run-once", Ordinal: 0, WorkspaceID: ws, Attempt: 1, Reset: i > 0})
		if err != nil || out.Verdict != eval.VerdictPass || out.Skipped != (i > 0) {
			t.Fatalf("call %d = %+v, %v", i, out, err)
		}
	}
	raw, _ := os.ReadFile(counter)
	if n := strings.Count(string(raw), "ran"); n != 1 {
		t.Errorf("the case ran %d times, want 1", n)
	}
	// A canceled case is not run either.
	r.run(t, "run-cancelled", eval.SuiteSpec{ID: "suite-cancelled"}, eval.Case{ID: "never", Command: script("echo ran >> " + counter)})
	if _, err := r.store.CancelCases(ctx, "run-cancelled"); err != nil {
		t.Fatal(err)
	}
	if out, err := r.a.RunCase(ctx, RunCaseInput{RunID: "run-cancelled", Ordinal: 0, WorkspaceID: ws, Attempt: 1, Reset: true}); err != nil || !out.Skipped {
		t.Fatalf("canceled case = %+v, %v", out, err)
	}
	raw, _ = os.ReadFile(counter)
	if n := strings.Count(string(raw), "ran"); n != 1 {
		t.Errorf("the counter says %d runs, want 1", n)
	}
}

// A workspace whose runtime is gone is the infrastructure's failure: the
// attempt is recorded and the case stays open for a retry; on the final
// attempt the case ends with verdict error listing every attempt. The
// case's env values never reach the reason.
func TestRunCaseInfraWhenRuntimeGone(t *testing.T) {
	r := newEvalRig(t)
	ctx := context.Background()
	r.run(t, "run-infra", eval.SuiteSpec{}, eval.Case{ID: "c", Env: map[string]string{"API_KEY": "sk-very-secret-key"}, Command: script("true")})
	ws1 := r.acquire(t, "run-infra", 0)
	r.mem.Kill(ws1)
	r.a.Connector.Drop(ws1)

	out, err := r.a.RunCase(ctx, RunCaseInput{RunID: "run-infra", Ordinal: 0, WorkspaceID: ws1, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Infra || out.Verdict != eval.VerdictError || out.Reason == "" {
		t.Fatalf("output = %+v, want an infrastructure error", out)
	}
	cr := r.result(t, "run-infra", 0)
	if cr.Status == wire.CaseDone || len(attemptsOf(t, cr)) != 1 {
		t.Errorf("after a non-final infra attempt: status %s, attempts %s", cr.Status, cr.Attempts)
	}

	// A workspace no longer running is infra too.
	if err := r.store.SetWorkspacePhase(ctx, ws1, wire.PhaseFailed, "3 probes missed"); err != nil {
		t.Fatal(err)
	}
	out, err = r.a.RunCase(ctx, RunCaseInput{RunID: "run-infra", Ordinal: 0, WorkspaceID: ws1, Attempt: 2, Final: true, Reset: true})
	if err != nil || !out.Infra || !strings.Contains(out.Reason, "failed: 3 probes missed") {
		t.Fatalf("final attempt = %+v, %v", out, err)
	}
	cr = r.result(t, "run-infra", 0)
	atts := attemptsOf(t, cr)
	if cr.Status != wire.CaseDone || cr.Verdict != eval.VerdictError || len(atts) != 2 || atts[1].Attempt != 2 {
		t.Errorf("final: status %s verdict %s attempts %+v", cr.Status, cr.Verdict, atts)
	}
	if strings.Contains(string(cr.Attempts)+cr.Reason, "sk-very-secret-key") {
		t.Error("a case env value reached the stored reasons")
	}
}

// A template suite creates one workspace per slot, labelled with the run;
// a retried acquire reuses it; release deletes it. A pool suite leases
// warm members, returns them without the run's labels, deletes broken
// ones; FinishRun releases what is left, counts and POSTs the webhook.
func TestAcquireReleaseFinish(t *testing.T) {
	r := newEvalRig(t)
	ctx := context.Background()
	r.run(t, "run-tmpl", eval.SuiteSpec{}, eval.Case{ID: "a", Command: script("true")}, eval.Case{ID: "b", Command: script("true")})
	ws := r.acquire(t, "run-tmpl", 0)
	if again := r.acquire(t, "run-tmpl", 0); again != ws {
		t.Errorf("retried acquire got %s, want the same %s", again, ws)
	}
	other := r.acquire(t, "run-tmpl", 1)
	if other == ws || len(r.lc.created) != 2 {
		t.Fatalf("slot 1 got %s; created %v", other, r.lc.created)
	}
	w, _ := r.store.GetWorkspace(ctx, ws)
	if w.Labels[LabelRun] != "run-tmpl" || w.Labels[LabelSlot] != "0" {
		t.Errorf("labels = %v", w.Labels)
	}
	if _, err := r.a.ReleaseWorkspace(ctx, ReleaseWorkspaceInput{RunID: "run-tmpl", WorkspaceID: ws}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.GetWorkspace(ctx, ws); !errs.Is(err, errs.NotFound) {
		t.Errorf("released template workspace: %v, want deleted", err)
	}
	if out, err := r.a.ReleaseWorkspace(ctx, ReleaseWorkspaceInput{RunID: "run-tmpl", WorkspaceID: ws}); err != nil || out.Released {
		t.Errorf("second release = %+v, %v; want nothing to do", out, err)
	}

	// Pool suite.
	var hook []map[string]any
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		mu.Lock()
		hook = append(hook, m)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	if err := r.store.CreatePool(ctx, &wire.Pool{ID: "warm", TemplateID: "et", Size: 2}); err != nil {
		t.Fatal(err)
	}
	var members []string
	for range 2 {
		m, err := r.lc.CreateWorkspace(ctx, activities.CreateWorkspaceRequest{TemplateID: "et", PoolID: "warm", Labels: map[string]string{"team": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, m.ID)
	}
	r.run(t, "run-pool", eval.SuiteSpec{PoolID: "warm", WebhookURL: srv.URL + "/hook?token=hook-secret"},
		eval.Case{ID: "a", Command: script("true")}, eval.Case{ID: "b", Command: script("false")}, eval.Case{ID: "c", Command: script("true")})
	p0, p1 := r.acquire(t, "run-pool", 0), r.acquire(t, "run-pool", 1)
	if !slices.Contains(members, p0) || !slices.Contains(members, p1) {
		t.Errorf("leased %s and %s, want the pool's members %v", p0, p1, members)
	}
	w0, _ := r.store.GetWorkspace(ctx, p0)
	// A lease gives the workspace its lessee's labels, as a lease through
	// the API does: the run's, in the same statement.
	if w0.PoolState != wire.PoolLeased || len(w0.Labels) != 2 || w0.Labels[LabelRun] != "run-pool" || w0.Labels[LabelSlot] != "0" {
		t.Errorf("leased = %s labels %v", w0.PoolState, w0.Labels)
	}
	// The pool is empty now: a third slot gets a cold workspace.
	p2 := r.acquire(t, "run-pool", 2)
	w2, _ := r.store.GetWorkspace(ctx, p2)
	if w2.PoolID != "" || w2.Labels[LabelRun] != "run-pool" {
		t.Errorf("cold workspace = pool %q labels %v", w2.PoolID, w2.Labels)
	}
	for i, ws := range []string{p0, p1, p2} {
		if _, err := r.a.RunCase(ctx, RunCaseInput{RunID: "run-pool", Ordinal: i, WorkspaceID: ws, Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	// A broken lease is deleted (its pool replaces it).
	if _, err := r.a.ReleaseWorkspace(ctx, ReleaseWorkspaceInput{RunID: "run-pool", WorkspaceID: p1, Broken: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.GetWorkspace(ctx, p1); !errs.Is(err, errs.NotFound) {
		t.Errorf("broken lease: %v, want deleted", err)
	}

	fin, err := r.a.FinishRun(ctx, FinishRunInput{RunID: "run-pool", Status: wire.RunSucceeded})
	if err != nil {
		t.Fatal(err)
	}
	if fin.Status != wire.RunSucceeded || fin.Total != 3 || fin.Pass != 2 || fin.Fail != 1 || fin.Released != 2 {
		t.Errorf("finish = %+v", fin)
	}
	w0, _ = r.store.GetWorkspace(ctx, p0)
	if w0.PoolState != wire.PoolIdle || len(w0.Labels) != 0 {
		t.Errorf("returned lease = %s labels %v", w0.PoolState, w0.Labels)
	}
	if _, err := r.store.GetWorkspace(ctx, p2); !errs.Is(err, errs.NotFound) {
		t.Errorf("cold workspace after finish: %v, want deleted", err)
	}
	run, _ := r.store.GetRun(ctx, "run-pool")
	if run.Status != wire.RunSucceeded || run.EndedAt == nil {
		t.Errorf("run = %s ended %v", run.Status, run.EndedAt)
	}
	mu.Lock()
	if len(hook) != 1 || hook[0]["run_id"] != "run-pool" || hook[0]["status"] != wire.RunSucceeded || hook[0]["pass"] != float64(2) {
		t.Errorf("webhook got %v", hook)
	}
	mu.Unlock()
	// Finishing again changes nothing and notifies nobody.
	if fin, err := r.a.FinishRun(ctx, FinishRunInput{RunID: "run-pool", Status: wire.RunCanceled}); err != nil || fin.Status != wire.RunSucceeded || fin.Released != 0 {
		t.Errorf("second finish = %+v, %v", fin, err)
	}
	if len(hook) != 1 {
		t.Errorf("webhook called %d times", len(hook))
	}
}

// A canceled run's FinishRun cancels its open cases and deletes its
// workspaces, found by their labels even if the workflow never recorded
// them.
func TestFinishRunCanceled(t *testing.T) {
	r := newEvalRig(t)
	ctx := context.Background()
	r.run(t, "run-c", eval.SuiteSpec{}, eval.Case{ID: "a", Command: script("true")}, eval.Case{ID: "b", Command: script("true")})
	if _, err := r.a.PrepareRun(ctx, PrepareRunInput{RunID: "run-c", SuiteID: "suite-run-c", WorkflowID: "run-c"}); err != nil {
		t.Fatal(err)
	}
	ws := r.acquire(t, "run-c", 0)
	if _, err := r.a.RunCase(ctx, RunCaseInput{RunID: "run-c", Ordinal: 0, WorkspaceID: ws, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	r.acquire(t, "run-c", 1)
	fin, err := r.a.FinishRun(ctx, FinishRunInput{RunID: "run-c", Status: wire.RunCanceled, Reason: "canceled"})
	if err != nil {
		t.Fatal(err)
	}
	if fin.Status != wire.RunCanceled || fin.Pass != 1 || fin.Canceled != 1 || fin.Released != 2 {
		t.Errorf("finish = %+v", fin)
	}
	left, _ := r.store.ListWorkspaces(ctx, models.WorkspaceFilter{})
	if len(left) != 0 {
		t.Errorf("%d workspaces left behind", len(left))
	}
	if r.mem.Count() != 0 {
		t.Errorf("%d sandboxes left behind", r.mem.Count())
	}
}

// A scheduled run's first activity makes the run from the suite with the
// workflow's id; the run is running after it, and a retry changes nothing.
func TestPrepareRunMakesScheduledRun(t *testing.T) {
	r := newEvalRig(t)
	ctx := context.Background()
	tmpl := r.run(t, "run-first", eval.SuiteSpec{ID: "nightly", Concurrency: 3, Retries: intp(1),
		Defaults: eval.CaseDefaults{Timeout: eval.Duration(time.Minute)}},
		eval.Case{ID: "a", Command: script("true")}, eval.Case{ID: "b", Command: script("true"), Timeout: eval.Duration(2 * time.Hour)})
	_ = tmpl
	in := PrepareRunInput{SuiteID: "nightly", TriggeredBy: "schedule suite-nightly", WorkflowID: "run-nightly-2024"}
	for range 2 {
		out, err := r.a.PrepareRun(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if out.RunID != "run-nightly-2024" || out.Total != 2 || out.Concurrency != 3 || out.Retries != 1 ||
			out.CaseTimeout != 2*time.Hour || out.TemplateID != "et" || out.Final != "" {
			t.Errorf("prepare = %+v", out)
		}
	}
	run, err := r.store.GetRun(ctx, "run-nightly-2024")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != wire.RunRunning || run.Trigger != wire.TriggerSchedule || run.TriggeredBy != "schedule suite-nightly" || run.WorkflowID != run.ID {
		t.Errorf("run = %+v", run)
	}
	// A run canceled before its workflow began has nothing to run.
	if err := r.store.SetRunStatus(ctx, "run-first", wire.RunCanceled, "canceled"); err != nil {
		t.Fatal(err)
	}
	out, err := r.a.PrepareRun(ctx, PrepareRunInput{RunID: "run-first", SuiteID: "nightly", WorkflowID: "run-first"})
	if err != nil || out.Final != wire.RunCanceled {
		t.Errorf("prepare of a canceled run = %+v, %v", out, err)
	}
}

// A slot whose broken workspace is still on its way out (the delete is a
// signal its workflow has not acted on) gets another workspace, not the
// broken one back.
func TestAcquireAfterBrokenRelease(t *testing.T) {
	r := newEvalRig(t)
	r.lc.signalOnly = true
	ctx := context.Background()
	r.run(t, "run-broken", eval.SuiteSpec{}, eval.Case{ID: "a", Command: script("true")})
	first := r.acquire(t, "run-broken", 0)
	if _, err := r.a.ReleaseWorkspace(ctx, ReleaseWorkspaceInput{RunID: "run-broken", WorkspaceID: first, Broken: true}); err != nil {
		t.Fatal(err)
	}
	if w, err := r.store.GetWorkspace(ctx, first); err != nil || w.Phase != wire.PhaseRunning {
		t.Fatalf("the broken workspace = %+v, %v; want it still there, its delete only signalled", w, err)
	}
	if second := r.acquire(t, "run-broken", 0); second == first {
		t.Errorf("slot 0 got the broken workspace %s back", first)
	}
	// The run's finish still finds the broken one by the run's label.
	fin, err := r.a.FinishRun(ctx, FinishRunInput{RunID: "run-broken", Status: wire.RunCanceled})
	if err != nil {
		t.Fatal(err)
	}
	if fin.Released != 2 {
		t.Errorf("finish released %d workspaces; want both, the broken one included", fin.Released)
	}
}
