package e2e

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
)

// attemptsOf decodes a result's attempts.
func attemptsOf(t *testing.T, r wire.CaseResult) []eval.Attempt {
	t.Helper()
	var out []eval.Attempt
	if err := json.Unmarshal(r.Attempts, &out); err != nil {
		t.Fatalf("case %s: attempts %s: %v", r.CaseID, r.Attempts, err)
	}
	return out
}

// resultsByCase returns the run's results by case id.
func resultsByCase(t *testing.T, api *client.Client, runID string) map[string]wire.CaseResult {
	t.Helper()
	results, err := api.RunResults(ctxT(t, time.Minute), runID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]wire.CaseResult{}
	for _, r := range results {
		out[r.CaseID] = r
	}
	return out
}

// TestEvalOnContainers runs suites on Docker and Podman: cases that share
// a reused workspace see nothing an earlier case left (a file, a process,
// an env variable); a workspace killed from outside in the middle of a
// case makes that case run again on another workspace, with both attempts
// in its result, and the other cases are unaffected; and (Docker) the
// example suite of Python exercises gives the verdicts its labels say.
func TestEvalOnContainers(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e)
		api := r.p.api
		r.template("evalbox", nil)

		t.Run("Isolation", func(t *testing.T) {
			ctx := ctxT(t, 3*time.Minute)
			clean := `test ! -e left.txt && test ! -e sub && test -z "$SECRET_A" &&
				! ps -o args | grep -v grep | grep -q 'sleep 60[01]' &&
				! grep -qs left-by-a /proc/[0-9]*/environ && echo clean`
			spec := eval.SuiteSpec{ID: "iso-" + e.Name, TemplateID: "evalbox", Concurrency: 1, Cases: []eval.Case{
				{ID: "leave", Env: map[string]string{"SECRET_A": "left-by-a"}, Command: script(
					`echo left > left.txt; mkdir sub && echo x > sub/y; (sleep 600 >/dev/null 2>&1 &); nohup sh -c 'sleep 601' >/dev/null 2>&1 & echo started`),
					Expect: eval.Expect{StdoutContains: []string{"started"}}},
				{ID: "check", Command: script(clean), Expect: eval.Expect{StdoutContains: []string{"clean"}}},
				{ID: "check-again", Command: script(clean), Expect: eval.Expect{StdoutContains: []string{"clean"}}},
			}}
			if _, err := api.CreateSuite(ctx, spec); err != nil {
				t.Fatal(err)
			}
			run, err := api.CreateRun(ctx, spec.ID, wire.RunRequest{})
			if err != nil {
				t.Fatal(err)
			}
			done := waitRun(t, api, run.ID, 2*time.Minute)
			res := resultsByCase(t, api, run.ID)
			if done.Progress.Pass != 3 {
				t.Errorf("isolation run = %+v; want 3 passes: %s / %s", done.Progress, res["check"].Reason, res["check"].Stdout)
			}
			// One workspace served every case: the reset, not a new
			// sandbox, is what isolated them.
			var used []string
			for _, id := range []string{"leave", "check", "check-again"} {
				at := attemptsOf(t, res[id])
				if len(at) != 1 {
					t.Fatalf("case %s attempts = %+v", id, at)
				}
				used = append(used, at[0].WorkspaceID)
			}
			if len(slices.Compact(slices.Clone(used))) != 1 {
				t.Errorf("cases ran on %v; want one reused workspace", used)
			}
			noWorkspaceLeft(t, api, run.ID)
		})

		t.Run("WorkspaceKilledMidCase", func(t *testing.T) {
			ctx := ctxT(t, 4*time.Minute)
			spec := eval.SuiteSpec{ID: "kill-" + e.Name, TemplateID: "evalbox", Concurrency: 2, Cases: []eval.Case{
				{ID: "slow", Command: script("touch .slow-started; sleep 6; echo done"), Expect: eval.Expect{StdoutContains: []string{"done"}}},
				{ID: "f1", Command: script("echo ok")},
				{ID: "f2", Command: script("echo ok")},
				{ID: "f3", Command: script("echo ok")},
				{ID: "f4", Command: script("exit 1")},
			}}
			if _, err := api.CreateSuite(ctx, spec); err != nil {
				t.Fatal(err)
			}
			run, err := api.CreateRun(ctx, spec.ID, wire.RunRequest{})
			if err != nil {
				t.Fatal(err)
			}
			// Find the workspace running the slow case and kill its container.
			var victim string
			eventually(t, 2*time.Minute, "the slow case running", func() bool {
				ws, err := api.ListWorkspaces(ctx, client.WorkspaceListOptions{TemplateID: "evalbox"})
				if err != nil {
					return false
				}
				for _, w := range ws {
					if w.Phase != wire.PhaseRunning {
						continue
					}
					res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: w.ID, Command: []string{"test", "-e", ".slow-started"}})
					if err == nil && res.ExitCode == 0 {
						victim = w.ID
						return true
					}
				}
				return false
			})
			if err := r.eng.Client().ContainerKill(ctx, container.Name(victim), "KILL"); err != nil {
				t.Fatalf("kill the container of %s: %v", victim, err)
			}
			done := waitRun(t, api, run.ID, 3*time.Minute)
			if done.Status != wire.RunSucceeded || done.Progress.Pass != 4 || done.Progress.Fail != 1 || done.Progress.Error != 0 {
				t.Errorf("run = %s %+v; want 4 pass and f4's fail", done.Status, done.Progress)
			}
			res := resultsByCase(t, api, run.ID)
			slow := attemptsOf(t, res["slow"])
			if len(slow) != 2 || slow[0].Verdict != eval.VerdictError || slow[0].WorkspaceID != victim ||
				slow[1].Verdict != eval.VerdictPass || slow[1].WorkspaceID == victim || res["slow"].Verdict != eval.VerdictPass {
				t.Errorf("slow's attempts = %+v (verdict %s); want an error on %s, then a pass on another workspace", slow, res["slow"].Verdict, victim)
			}
			for _, id := range []string{"f1", "f2", "f3", "f4"} {
				if at := attemptsOf(t, res[id]); len(at) != 1 {
					t.Errorf("case %s attempts = %+v; want one", id, at)
				}
			}
			noWorkspaceLeft(t, api, run.ID)
			eventually(t, time.Minute, "the killed workspace's container removed", func() bool {
				return len(r.containers(t, victim)) == 0
			})
		})

		if e.Name != container.EngineDocker {
			return
		}
		t.Run("ExampleSuite", func(t *testing.T) {
			// A platform of its own: the example brings its own provider,
			// docker-local, which the rig's platform has already.
			p := startPrimer(t, withContainers(t))
			api := p.api
			_, file, _, _ := runtime.Caller(0)
			dir := filepath.Join(filepath.Dir(file), "..", "examples", "eval", "python-exercises")
			if out, errOut, code := p.primectl("", "create", "-f", filepath.Join(dir, "suite.yaml"), "--cases", filepath.Join(dir, "cases.jsonl")); code != 0 {
				t.Fatalf("primectl create -f suite.yaml --cases cases.jsonl = %d: %s %s", code, out, errOut)
			}
			if _, errOut, code := p.primectl("", "suite", "run", "python-exercises", "--wait"); code != 1 {
				t.Errorf("primectl suite run --wait exited %d, want 1 (five cases fail on purpose): %s", code, errOut)
			}
			runs, err := api.ListRuns(ctxT(t, time.Minute), client.RunListOptions{SuiteID: "python-exercises"})
			if err != nil || len(runs) != 1 {
				t.Fatalf("runs of python-exercises = %+v, %v; want the one primectl started", runs, err)
			}
			results, err := api.RunResults(ctxT(t, time.Minute), runs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			pass := 0
			for _, res := range results {
				want := eval.VerdictPass
				if res.Labels["expected"] == "fail" {
					want = eval.VerdictFail
				}
				if res.Verdict != want {
					t.Errorf("exercise %s = %s (%s), want %s", res.CaseID, res.Verdict, res.Reason, want)
				}
				if res.Verdict == eval.VerdictPass {
					pass++
				}
			}
			if len(results) != 50 || pass != 45 {
				t.Errorf("%d exercises, %d passed; want 50 and 45", len(results), pass)
			}
			noWorkspaceLeft(t, api, runs[0].ID)
		})
	})
}
