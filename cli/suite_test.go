package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
)

// suiteYAML is an eval_suite document as a suite author writes it.
const suiteYAML = `kind: eval_suite
spec:
  id: py
  description: python exercises
  template_id: python
  concurrency: 4
  defaults:
    timeout: 30s
    env: {PYTHONDONTWRITEBYTECODE: "1"}
  schedule: {cron: "0 3 * * *", time_zone: Europe/Berlin, overlap: skip}
  cases:
    - id: fizzbuzz
      files: {fizzbuzz.py: "print(1)\n"}
      command: [python3, fizzbuzz.py]
      expect: {stdout_contains: ["1"]}
      labels: {level: easy}
    - id: primes
      command: python3 -c 'print(2)'
      expect: {exit_code: 0, stdout_matches: "^2$"}
      score_file: score.json
      collect: [out.txt]
`

// casesJSONL is a cases file for create --cases.
const casesJSONL = `{"id":"c1","command":"true"}
{"id":"c2","command":["false"],"expect":{"exit_code":1}}
`

// evalRun is a run of the fake eval API: its final progress, and which
// status it ends in.
func evalRun(id string, p wire.Progress) wire.RunView {
	return wire.RunView{
		Run: wire.Run{ID: id, SuiteID: "nightly", Status: wire.RunSucceeded, Trigger: wire.TriggerUser,
			TriggeredBy: "api", Total: p.Total, CreatedAt: t0},
		Progress: p,
	}
}

// newEvalAPI is a fake API with the suite and run routes. run-ok passes
// every case; run-bad has a failing one; run-done has ended.
func newEvalAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{}
	runs := map[string]wire.RunView{
		"run-ok":  evalRun("run-ok", wire.Progress{Total: 3, Pass: 3, PassRate: 1, DurationP50MS: 120, DurationP95MS: 1500}),
		"run-bad": evalRun("run-bad", wire.Progress{Total: 3, Pass: 2, Fail: 1, PassRate: 0.667}),
	}
	suite := wire.SuiteView{
		Suite: wire.Suite{ID: "nightly", TemplateID: "python", CaseCount: 3, CreatedAt: t0,
			Spec: json.RawMessage(`{"id":"nightly","template_id":"python","schedule":{"cron":"0 3 * * *","time_zone":"UTC"}}`)},
		ScheduleStatus: &wire.ScheduleStatus{ID: "suite-nightly", Paused: true},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/suites", func(w http.ResponseWriter, r *http.Request) {
		var spec *eval.SuiteSpec
		var err error
		if r.Header.Get("Content-Type") == "application/x-ndjson" {
			spec, err = eval.ReadJSONL(r.Body, 0)
		} else {
			spec = &eval.SuiteSpec{}
			err = strictDecode(r.Body, spec)
		}
		if err != nil {
			apiErr(w, 400, "invalid", err.Error(), "")
			return
		}
		if spec.Concurrency > eval.MaxConcurrency {
			apiErr(w, 400, "invalid", "spec.concurrency: 100 is out of range (1..64)", "spec.concurrency")
			return
		}
		jsonOut(w, 201, wire.SuiteView{Suite: wire.Suite{ID: spec.ID, TemplateID: spec.TemplateID, CaseCount: len(spec.Cases)}})
	})
	mux.HandleFunc("GET /v1/suites", func(w http.ResponseWriter, r *http.Request) {
		jsonOut(w, 200, map[string]any{"items": []wire.Suite{suite.Suite}})
	})
	mux.HandleFunc("GET /v1/suites/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "nightly" {
			apiErr(w, 404, "not_found", "suite "+r.PathValue("id")+": not found", "")
			return
		}
		jsonOut(w, 200, suite)
	})
	mux.HandleFunc("DELETE /v1/suites/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	mux.HandleFunc("GET /v1/suites/{id}/cases", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, casesJSONL)
	})
	mux.HandleFunc("POST /v1/suites/{id}/schedule/{op}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "nightly" {
			apiErr(w, 409, "failed_precondition", "suite "+r.PathValue("id")+" has no schedule", "")
			return
		}
		jsonOut(w, 200, suite)
	})
	mux.HandleFunc("POST /v1/suites/{id}/runs", func(w http.ResponseWriter, r *http.Request) {
		run := runs["run-ok"]
		if r.PathValue("id") == "flaky" {
			run = runs["run-bad"]
		}
		run.Status, run.Progress = wire.RunPending, wire.Progress{Total: 3, Pending: 3}
		jsonOut(w, 201, run)
	})
	mux.HandleFunc("GET /v1/runs", func(w http.ResponseWriter, r *http.Request) {
		jsonOut(w, 200, map[string]any{"items": []wire.Run{runs["run-bad"].Run, runs["run-ok"].Run}})
	})
	mux.HandleFunc("GET /v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		run, ok := runs[r.PathValue("id")]
		if !ok {
			apiErr(w, 404, "not_found", "run "+r.PathValue("id")+": not found", "")
			return
		}
		jsonOut(w, 200, run)
	})
	mux.HandleFunc("GET /v1/runs/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		run := runs[r.PathValue("id")]
		w.Header().Set("Content-Type", "text/event-stream")
		for _, p := range []wire.Progress{{Total: 3, Pending: 3}, {Total: 3, Pass: 1, Running: 2}} {
			b, _ := json.Marshal(p)
			fmt.Fprintf(w, "event: progress\ndata: %s\n\n: keep-alive\n\n", b)
		}
		b, _ := json.Marshal(run.Progress)
		fmt.Fprintf(w, "event: progress\ndata: %s\n\n", b)
		b, _ = json.Marshal(run)
		fmt.Fprintf(w, "event: finished\ndata: %s\n\n", b)
	})
	mux.HandleFunc("GET /v1/runs/{id}/results", func(w http.ResponseWriter, r *http.Request) {
		results := []wire.CaseResult{
			{RunID: "run-bad", Ordinal: 0, CaseID: "fizzbuzz", Status: wire.CaseDone, Verdict: "pass", DurationMS: 1234, Score: ptrTo(0.8)},
			{RunID: "run-bad", Ordinal: 1, CaseID: "primes", Status: wire.CaseDone, Verdict: "fail", Reason: "exit code 1, want 0", DurationMS: 20},
			{RunID: "run-bad", Ordinal: 2, CaseID: "slow", Status: wire.CaseRunning},
		}
		switch r.URL.Query().Get("format") {
		case "jsonl":
			w.Header().Set("Content-Type", "application/x-ndjson")
			for _, res := range results {
				b, _ := json.Marshal(res)
				fmt.Fprintf(w, "%s\n", b)
			}
		case "junit":
			w.Header().Set("Content-Type", "application/xml")
			_, _ = io.WriteString(w, `<testsuites><testsuite name="nightly" tests="3"></testsuite></testsuites>`)
		default:
			jsonOut(w, 200, map[string]any{"items": results})
		}
	})
	mux.HandleFunc("GET /v1/runs/{id}/compare", func(w http.ResponseWriter, r *http.Request) {
		cmp := eval.Comparison{Base: r.URL.Query().Get("base"), Head: r.PathValue("id"),
			Regressions: []eval.CaseChange{}, Fixes: []eval.CaseChange{}, New: []string{}, Missing: []string{},
			ScoreChanges: []eval.ScoreChange{}, Unchanged: 2}
		if cmp.Head == "run-bad" {
			cmp.Regressions = []eval.CaseChange{{Case: "primes", From: "pass", To: "fail", Reason: "exit code 1, want 0"}}
			cmp.New = []string{"slow"}
			cmp.ScoreChanges = []eval.ScoreChange{{Case: "fizzbuzz", From: ptrTo(1.0), To: ptrTo(0.8), Delta: -0.2}}
		}
		jsonOut(w, 200, cmp)
	})
	mux.HandleFunc("POST /v1/runs/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "run-done" {
			apiErr(w, 409, "failed_precondition", "run run-done: already succeeded; only a pending or running run can be canceled", "")
			return
		}
		run := runs["run-ok"]
		run.Status, run.Progress = wire.RunRunning, wire.Progress{Total: 3, Pass: 1, Running: 2}
		jsonOut(w, 202, run)
	})
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.mu.Lock()
		f.reqs = append(f.reqs, fakeReq{r.Method, r.URL.Path, r.URL.RawQuery, body})
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func ptrTo[T any](v T) *T { return &v }

// tableRows splits table output into rows of fields.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

func TestParseSuiteManifest(t *testing.T) {
	ms, err := ParseManifests(strings.NewReader(suiteYAML))
	if err != nil {
		t.Fatal(err)
	}
	s := ms[0].Suite
	if len(ms) != 1 || ms[0].Kind != kindSuite || ms[0].Name() != "eval_suite/py" || s == nil {
		t.Fatalf("manifests = %+v", ms)
	}
	if s.TemplateID != "python" || s.Concurrency != 4 || s.Defaults.Timeout.D() != 30*time.Second ||
		s.Schedule == nil || s.Schedule.Cron != "0 3 * * *" || s.Schedule.TimeZone != "Europe/Berlin" || len(s.Cases) != 2 {
		t.Fatalf("suite = %+v", s)
	}
	fb, pr := s.Cases[0], s.Cases[1]
	if !reflect.DeepEqual(fb.Command.Args, []string{"python3", "fizzbuzz.py"}) || string(fb.Files["fizzbuzz.py"].Data) != "print(1)\n" ||
		fb.Labels["level"] != "easy" || fb.Expect.StdoutContains[0] != "1" {
		t.Fatalf("case fizzbuzz = %+v", fb)
	}
	if pr.Command.Script != "python3 -c 'print(2)'" || *pr.Expect.ExitCode != 0 || pr.Expect.StdoutMatches != "^2$" ||
		pr.ScoreFile != "score.json" || pr.Collect[0] != "out.txt" {
		t.Fatalf("case primes = %+v", pr)
	}

	for _, tt := range []struct{ name, in, want string }{
		{"unknown spec key", "kind: eval_suite\nspec: {id: s, template: python}\n", `unknown field "template"`},
		{"unknown case key", "kind: eval_suite\nspec: {id: s, template_id: t, cases: [{id: a, cmd: x}]}\n", `unknown field "cmd"`},
		{"bad command", "kind: eval_suite\nspec: {id: s, template_id: t, cases: [{id: a, command: 7}]}\n", "command"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseManifests(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "eval_suite") {
				t.Fatalf("error %v, want one naming eval_suite and %q", err, tt.want)
			}
		})
	}
}

func TestCreateSuite(t *testing.T) {
	f := newEvalAPI(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "suite.yaml")
	cases := filepath.Join(dir, "cases.jsonl")
	if err := os.WriteFile(file, []byte(suiteYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cases, []byte(casesJSONL), 0o600); err != nil {
		t.Fatal(err)
	}

	r := f.run(t, "", "create", "-f", file)
	if r.code != 0 || r.stdout != "eval_suite/py created\n" {
		t.Fatalf("create -f: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	var sent eval.SuiteSpec
	if err := json.Unmarshal(f.requests("POST", "/v1/suites")[0].Body, &sent); err != nil || len(sent.Cases) != 2 || sent.Cases[0].ID != "fizzbuzz" {
		t.Fatalf("sent %+v, %v", sent, err)
	}

	// --cases: the spec line, then the file's lines, as JSONL.
	r = f.run(t, "", "create", "-f", file, "--cases", cases, "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"case_count":4`) {
		t.Fatalf("create --cases: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	body := string(f.requests("POST", "/v1/suites")[1].Body)
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], `{"id":"py"`) || lines[1]+"\n"+lines[2]+"\n" != casesJSONL {
		t.Fatalf("JSONL body %q", body)
	}
	// From stdin too.
	r = f.run(t, casesJSONL, "create", "-f", file, "--cases", "-")
	if r.code != 0 || r.stdout != "eval_suite/py created\n" {
		t.Fatalf("create --cases -: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	// --cases needs exactly one suite document.
	two := filepath.Join(dir, "two.yaml")
	if err := os.WriteFile(two, []byte(suiteYAML+"---\n"+strings.Replace(suiteYAML, "id: py", "id: py2", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r = f.run(t, "", "create", "-f", two, "--cases", cases)
	if r.code != 2 || !strings.Contains(r.stderr, "exactly one eval_suite document") {
		t.Errorf("two suites with --cases: code %d stderr %q", r.code, r.stderr)
	}
	r = f.run(t, "", "create", "-f", "-", "--cases", "-")
	if r.code != 2 || !strings.Contains(r.stderr, "cannot both read stdin") {
		t.Errorf("both from stdin: code %d stderr %q", r.code, r.stderr)
	}
	r = f.run(t, "", "create", "-f", file, "--cases", filepath.Join(dir, "missing.jsonl"))
	if r.code != 1 || !strings.Contains(r.stderr, "missing.jsonl") || !strings.Contains(r.stderr, "nothing was created") {
		t.Errorf("missing cases file: code %d stderr %q", r.code, r.stderr)
	}
	// Server errors name the document.
	r = f.run(t, strings.Replace(suiteYAML, "concurrency: 4", "concurrency: 100", 1), "create", "-f", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "document 1 (eval_suite/py): spec.concurrency: 100 is out of range") {
		t.Errorf("bad suite: code %d stderr %q", r.code, r.stderr)
	}
}

func TestSuiteCommands(t *testing.T) {
	f := newEvalAPI(t)
	r := f.run(t, "", "get", "suite", "nightly")
	rows := tableRows(r.stdout)
	if r.code != 0 || !reflect.DeepEqual(rows[0], []string{"ID", "RUNS", "ON", "CASES", "SCHEDULE", "AGE", "DESCRIPTION"}) ||
		!reflect.DeepEqual(rows[1][:8], []string{"nightly", "workspace_template/python", "3", "0", "3", "*", "*", "*"}) ||
		!strings.Contains(r.stdout, "(paused)") {
		t.Fatalf("get suite: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "get", "suite", "ghost")
	if r.code != 1 || r.stderr != "error: suite ghost: not found (not_found)\n" {
		t.Errorf("get unknown suite: code %d stderr %q", r.code, r.stderr)
	}
	r = f.run(t, "", "list", "suites", "-o", "json")
	var l struct{ Items []wire.Suite }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &l) != nil || len(l.Items) != 1 || l.Items[0].ID != "nightly" {
		t.Errorf("list suites: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "delete", "suite", "nightly")
	if r.code != 0 || r.stdout != "eval_suite/nightly deleted\n" || len(f.requests("DELETE", "/v1/suites/nightly")) != 1 {
		t.Errorf("delete suite: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "suite", "cases", "nightly")
	if r.code != 0 || r.stdout != casesJSONL {
		t.Errorf("suite cases: code %d stdout %q", r.code, r.stdout)
	}
	for _, op := range []struct{ op, done string }{{"pause", "paused"}, {"resume", "resumed"}, {"trigger", "triggered"}} {
		r = f.run(t, "", "suite", "schedule", op.op, "nightly")
		if r.code != 0 || r.stdout != "eval_suite/nightly schedule "+op.done+"\n" || len(f.requests("POST", "/v1/suites/nightly/schedule/"+op.op)) != 1 {
			t.Errorf("schedule %s: code %d stdout %q stderr %q", op.op, r.code, r.stdout, r.stderr)
		}
	}
	r = f.run(t, "", "suite", "schedule", "pause", "plain")
	if r.code != 1 || r.stderr != "error: suite plain has no schedule (failed_precondition)\n" {
		t.Errorf("pause without a schedule: code %d stderr %q", r.code, r.stderr)
	}
	r = f.run(t, "", "suite", "schedule", "stop", "nightly")
	if r.code != 2 {
		t.Errorf("unknown schedule op: code %d stderr %q", r.code, r.stderr)
	}
}

func TestSuiteRun(t *testing.T) {
	f := newEvalAPI(t)
	r := f.run(t, "", "suite", "run", "nightly", "--case", "a", "--case", "b", "--label", "level=easy", "--triggered-by", "ci")
	if r.code != 0 || r.stdout != "run/run-ok started: 3 cases of eval_suite/nightly\n" {
		t.Fatalf("suite run: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if body := f.requests("POST", "/v1/suites/nightly/runs")[0].Body; !jsonEqual(t, body, `{"cases":["a","b"],"labels":{"level":"easy"},"triggered_by":"ci"}`) {
		t.Errorf("run body %s", body)
	}
	r = f.run(t, "", "suite", "run", "nightly", "--label", "novalue")
	if r.code != 2 || !strings.Contains(r.stderr, "want KEY=VALUE") {
		t.Errorf("bad label: code %d stderr %q", r.code, r.stderr)
	}

	// --wait: progress on stderr, the run on stdout, exit 0 when every
	// case passed...
	r = f.run(t, "", "suite", "run", "nightly", "--wait")
	wantErr := "run/run-ok started: 3 cases of eval_suite/nightly\n" +
		"run/run-ok 0/3 done: 0 pass, 0 fail, 0 error\n" +
		"run/run-ok 1/3 done: 1 pass, 0 fail, 0 error; 2 running\n" +
		"run/run-ok 3/3 done: 3 pass, 0 fail, 0 error\n"
	rows := tableRows(r.stdout)
	if r.code != 0 || r.stderr != wantErr || len(rows) != 2 || rows[1][0] != "run-ok" || rows[1][2] != "succeeded" || rows[1][3] != "3/3" {
		t.Fatalf("suite run --wait: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	// ...and 1 otherwise.
	r = f.run(t, "", "suite", "run", "flaky", "--wait", "-o", "json")
	var run wire.RunView
	if r.code != 1 || json.Unmarshal([]byte(r.stdout), &run) != nil || run.ID != "run-bad" ||
		!strings.HasSuffix(r.stderr, "run/run-bad succeeded: 1 of 3 cases did not pass\n") {
		t.Fatalf("suite run --wait of a failing run: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = f.run(t, "", "run", "wait", "run-ok")
	if r.code != 0 {
		t.Errorf("run wait: code %d stderr %q", r.code, r.stderr)
	}
}

func TestRunCommands(t *testing.T) {
	f := newEvalAPI(t)
	r := f.run(t, "", "run", "get", "run-bad")
	rows := tableRows(r.stdout)
	if r.code != 0 || !reflect.DeepEqual(rows[0][:8], []string{"ID", "SUITE", "STATUS", "DONE", "PASS", "FAIL", "ERROR", "PASS"}) ||
		!reflect.DeepEqual(rows[1][:8], []string{"run-bad", "nightly", "succeeded", "3/3", "2", "1", "0", "66.7%"}) {
		t.Fatalf("run get: code %d stdout %q", r.code, r.stdout)
	}
	if r = f.run(t, "", "get", "run", "run-ok"); r.code != 0 || !strings.Contains(r.stdout, "1.5s") {
		t.Errorf("get run: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "run", "list", "--suite", "nightly", "--status", "succeeded", "--limit", "5")
	rows = tableRows(r.stdout)
	if r.code != 0 || len(rows) != 3 || rows[0][0] != "ID" || rows[1][0] != "run-bad" {
		t.Fatalf("run list: code %d stdout %q", r.code, r.stdout)
	}
	if q := f.requests("GET", "/v1/runs")[0].Query; q != "limit=5&status=succeeded&suite_id=nightly" {
		t.Errorf("run list query %q", q)
	}
	if r = f.run(t, "", "list", "runs", "--suite", "nightly"); r.code != 0 || f.requests("GET", "/v1/runs")[1].Query != "suite_id=nightly" {
		t.Errorf("list runs --suite: code %d stderr %q", r.code, r.stderr)
	}
	if r = f.run(t, "", "list", "workspaces", "--suite", "x"); r.code != 2 || !strings.Contains(r.stderr, "--suite does not filter workspaces") {
		t.Errorf("list workspaces --suite: code %d stderr %q", r.code, r.stderr)
	}

	// Results: a table by default, the server's bytes for json, jsonl, junit.
	r = f.run(t, "", "run", "results", "run-bad")
	rows = tableRows(r.stdout)
	if r.code != 0 || !reflect.DeepEqual(rows, [][]string{
		{"CASE", "VERDICT", "DURATION", "SCORE", "REASON"},
		{"fizzbuzz", "pass", "1.23s", "0.8", "<none>"},
		{"primes", "fail", "20ms", "-", "exit", "code", "1,", "want", "0"},
		{"slow", "running", "-", "-", "<none>"},
	}) {
		t.Fatalf("run results: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "run", "results", "run-bad", "-o", "jsonl")
	if lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n"); r.code != 0 || len(lines) != 3 || !strings.Contains(lines[1], `"verdict":"fail"`) {
		t.Errorf("run results -o jsonl: code %d stdout %q", r.code, r.stdout)
	}
	if r = f.run(t, "", "run", "results", "run-bad", "-o", "junit"); r.code != 0 || !strings.HasPrefix(r.stdout, "<testsuites>") {
		t.Errorf("run results -o junit: code %d stdout %q", r.code, r.stdout)
	}
	if r = f.run(t, "", "run", "results", "run-bad", "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, `"items"`) {
		t.Errorf("run results -o json: code %d stdout %q", r.code, r.stdout)
	}
	if r = f.run(t, "", "run", "results", "run-bad", "-o", "csv"); r.code != 2 || !strings.Contains(r.stderr, "-o csv: want table, json, yaml, jsonl, junit") {
		t.Errorf("run results -o csv: code %d stderr %q", r.code, r.stderr)
	}
	if r = f.run(t, "", "run", "get", "run-bad", "-o", "junit"); r.code != 2 {
		t.Errorf("run get -o junit: code %d stderr %q", r.code, r.stderr)
	}

	// Compare: exit 3 on regressions, 0 without.
	r = f.run(t, "", "run", "compare", "run-bad", "--base", "run-ok")
	if r.code != ExitRegressions || !strings.HasPrefix(r.stdout, "run/run-bad against run/run-ok: 1 regressions, 0 fixes, 1 new, 0 missing, 1 score changes, 2 unchanged\n") {
		t.Fatalf("run compare: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	rows = tableRows(r.stdout)
	if !reflect.DeepEqual(rows[2][:4], []string{"regression", "primes", "pass", "fail"}) || rows[3][0] != "new" ||
		!reflect.DeepEqual(rows[4], []string{"score", "fizzbuzz", "1", "0.8", "-0.2"}) {
		t.Errorf("compare rows %q", rows)
	}
	if q := f.requests("GET", "/v1/runs/run-bad/compare")[0].Query; q != "base=run-ok" {
		t.Errorf("compare query %q", q)
	}
	if r = f.run(t, "", "run", "compare", "run-ok", "--base", "run-bad", "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, `"regressions": []`) {
		t.Errorf("run compare without regressions: code %d stdout %q", r.code, r.stdout)
	}
	if r = f.run(t, "", "run", "compare", "run-ok"); r.code != 2 || !strings.Contains(r.stderr, "--base BASE is required") {
		t.Errorf("run compare without --base: code %d stderr %q", r.code, r.stderr)
	}

	// Cancel.
	r = f.run(t, "", "run", "cancel", "run-ok")
	if r.code != 0 || r.stdout != "run/run-ok cancel requested (1/3 done: 1 pass, 0 fail, 0 error; 2 running)\n" {
		t.Errorf("run cancel: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "run", "cancel", "run-done")
	if r.code != 1 || !strings.Contains(r.stderr, "already succeeded") || !strings.Contains(r.stderr, "(failed_precondition)") {
		t.Errorf("cancel a finished run: code %d stderr %q", r.code, r.stderr)
	}
	if r = f.run(t, "", "delete", "run", "run-ok"); r.code != 2 || !strings.Contains(r.stderr, "cannot be deleted") {
		t.Errorf("delete run: code %d stderr %q", r.code, r.stderr)
	}
}
