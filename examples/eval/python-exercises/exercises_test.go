package exercises_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/cli"
	"github.com/primerhq/primer/eval"
	exercises "github.com/primerhq/primer/examples/eval/python-exercises"
)

// suite reads suite.yaml with primectl's parser and cases.jsonl with the
// eval package's, joins them as `primectl create -f suite.yaml --cases
// cases.jsonl` does, and checks the result as the API does.
func suite(t *testing.T) *eval.SuiteSpec {
	t.Helper()
	f, err := os.Open("suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	docs, err := cli.ParseManifests(f)
	if err != nil {
		t.Fatalf("suite.yaml: %v", err)
	}
	var kinds []string
	var spec *eval.SuiteSpec
	templates := map[string]string{} // template id -> provider id
	providers := map[string]bool{}
	for _, d := range docs {
		kinds = append(kinds, d.Kind)
		switch {
		case d.Suite != nil:
			spec = d.Suite
		case d.Template != nil:
			templates[d.Template.ID] = d.Template.ProviderID
		case d.Provider != nil:
			providers[d.Provider.ID] = true
		}
	}
	if want := []string{"workspace_provider", "workspace_template", "eval_suite"}; !slices.Equal(kinds, want) {
		t.Fatalf("suite.yaml documents = %v, want %v", kinds, want)
	}
	if len(spec.Cases) != 0 {
		t.Errorf("suite.yaml has %d cases; they belong in cases.jsonl", len(spec.Cases))
	}
	if prov, ok := templates[spec.TemplateID]; !ok || !providers[prov] {
		t.Errorf("suite template %q (provider %q) is not defined in suite.yaml", spec.TemplateID, prov)
	}

	data, err := os.ReadFile("cases.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := eval.ReadCasesJSONL(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatalf("cases.jsonl: %v", err)
	}
	spec.Cases = cases
	if err := spec.Check(); err != nil {
		t.Fatalf("suite with its cases: %v", err)
	}
	return spec
}

// cases.jsonl is what the generator writes from the exercises now.
func TestCasesJSONLIsGenerated(t *testing.T) {
	cases, err := exercises.Cases()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := exercises.WriteJSONL(&want, cases); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("cases.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("cases.jsonl is not what the exercises make; run `go run ./gen` in examples/eval/python-exercises")
	}
}

// imageModules are the standard modules the tests may import: those the
// python3-minimal of primer/python:1.0 has (it lacks json, statistics,
// fractions, decimal and unittest, among others), checked with `docker run
// primer/python:1.0 python3 -c 'import M'`.
var imageModules = map[string]bool{
	"bisect": true, "collections": true, "csv": true, "datetime": true, "functools": true,
	"heapq": true, "io": true, "itertools": true, "math": true, "operator": true,
	"random": true, "re": true, "string": true, "textwrap": true,
}

// importLine finds the module of an import statement.
var importLine = regexp.MustCompile(`(?m)^\s*(?:import|from)\s+([A-Za-z_][A-Za-z0-9_]*)`)

// The suite is what the README says: about 50 cases over several topics
// and both levels, 5 expected to fail, some scored, every one a Python
// test that must print "ok".
func TestSuiteDocument(t *testing.T) {
	s := suite(t)
	if s.ID != "python-exercises" || s.TemplateID != "py-eval" || s.Concurrency != 4 || s.Defaults.Timeout.D() != time.Minute {
		t.Errorf("suite = id %q template %q concurrency %d timeout %s", s.ID, s.TemplateID, s.Concurrency, s.Defaults.Timeout.D())
	}
	if n := len(s.Cases); n < 45 || n > 55 {
		t.Errorf("%d cases, want about 50", n)
	}
	topics, levels := map[string]int{}, map[string]int{}
	fails, scored := 0, 0
	for _, c := range s.Cases {
		topics[c.Labels["topic"]]++
		levels[c.Labels["level"]]++
		if c.Labels["expected"] == "fail" {
			fails++
		} else if c.Labels["expected"] != "pass" {
			t.Errorf("case %s: label expected=%q, want pass or fail", c.ID, c.Labels["expected"])
		}
		if c.ScoreFile != "" {
			scored++
		}
		test := "test_" + c.ID + ".py"
		if !slices.Equal(c.Command.Args, []string{"python3", test}) || c.Files[test].Data == nil || c.Files["solution.py"].Data == nil {
			t.Errorf("case %s: command %v with files %v, want python3 %s with it and solution.py", c.ID, c.Command.Argv(), keys(c.Files), test)
		}
		for _, p := range keys(c.Files) {
			for _, m := range importLine.FindAllStringSubmatch(string(c.Files[p].Data), -1) {
				if m[1] != "solution" && !imageModules[m[1]] {
					t.Errorf("case %s: %s imports %s, which primer/python:1.0 does not have", c.ID, p, m[1])
				}
			}
		}
		if c.Expect.ExitCode == nil || *c.Expect.ExitCode != 0 || !slices.Equal(c.Expect.StdoutContains, []string{exercises.OK}) {
			t.Errorf("case %s: expect %+v, want exit code 0 and %q", c.ID, c.Expect, exercises.OK)
		}
	}
	if fails != 5 {
		t.Errorf("%d cases expected to fail, want 5", fails)
	}
	if scored < 5 {
		t.Errorf("%d scored cases, want at least 5", scored)
	}
	for _, topic := range []string{"strings", "math", "lists", "dicts"} {
		if topics[topic] < 5 {
			t.Errorf("topic %s has %d cases, want at least 5 (all: %v)", topic, topics[topic], topics)
		}
	}
	if levels["easy"] == 0 || levels["medium"] == 0 || len(levels) != 2 {
		t.Errorf("levels = %v, want easy and medium", levels)
	}
}

// Every case, run with python3 here as a workspace would run it, gets the
// verdict its label says: the good solutions pass, the buggy ones fail.
// Scored cases write a score and the file they collect.
func TestExercisesRunLocally(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		msg := "python3 is not on PATH; install Python 3 to check that the exercises pass and fail as labelled"
		if os.Getenv("CI") != "" {
			t.Fatal("CI: " + msg + " (.ci/run installs it)")
		}
		t.Skip(msg)
	}
	s := suite(t)
	for _, raw := range s.Cases {
		c := s.Resolve(raw)
		t.Run(c.ID, func(t *testing.T) {
			dir := t.TempDir()
			for p, f := range c.Files {
				if err := os.WriteFile(filepath.Join(dir, p), f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.Timeout.D())
			defer cancel()
			argv := c.Command.Argv()
			cmd := exec.CommandContext(ctx, python, argv[1:]...)
			cmd.Dir = dir
			cmd.Env = os.Environ()
			for k, v := range c.Env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			o := eval.Outcome{Stdout: stdout.String(), Stderr: stderr.String(), TimedOut: ctx.Err() != nil}
			var exitErr *exec.ExitError
			switch {
			case errors.As(err, &exitErr):
				o.ExitCode = exitErr.ExitCode()
			case err != nil:
				t.Fatalf("run %v: %v", argv, err)
			}
			verdict, reason := eval.Judge(c, o)
			want := eval.VerdictPass
			if c.Labels["expected"] == "fail" {
				want = eval.VerdictFail
			}
			if verdict != want {
				t.Fatalf("verdict %s (%s), want %s; stdout %q, stderr %q", verdict, reason, want, o.Stdout, o.Stderr)
			}
			if want == eval.VerdictFail && !strings.Contains(o.Stderr, "AssertionError") {
				t.Errorf("a buggy solution should fail an assert, not crash: stderr %q", o.Stderr)
			}
			if c.ScoreFile == "" {
				return
			}
			var sc eval.Score
			data, err := os.ReadFile(filepath.Join(dir, c.ScoreFile))
			if err != nil {
				t.Fatalf("score file: %v", err)
			}
			if err := json.Unmarshal(data, &sc); err != nil || sc.Score == nil {
				t.Fatalf("score file %s = %s: %v; want {\"score\": x, \"metrics\": {...}}", c.ScoreFile, data, err)
			}
			if full := *sc.Score == 1; full != (want == eval.VerdictPass) || *sc.Score < 0 || *sc.Score > 1 || sc.Metrics["total"] == 0 {
				t.Errorf("score %v, metrics %v for a case expected to %s", *sc.Score, sc.Metrics, want)
			}
			for _, p := range c.Collect {
				if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
					t.Errorf("collected file: %v", err)
				}
			}
			t.Logf("score %.2f, metrics %v", *sc.Score, sc.Metrics)
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
