package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/activities/llm/llmtest"
)

// TestSDKPythonReadme is the Python SDK's "Done when": the package is
// installed with pip, offline, from sdk/python (Debian's setuptools, no
// build isolation) into a directory of its own, and the README's example
// runs as written against a platform on this machine, with no key given:
// the client finds the admin key in the server's data directory as
// primectl does.
func TestSDKPythonReadme(t *testing.T) {
	py := pythonSDK(t)
	if out, err := exec.Command(py.python, "-m", "pip", "--version").CombinedOutput(); err != nil {
		missingPip(t, py, string(out))
	}
	p := startPrimer(t)
	ctx := ctxT(t, 5*time.Minute)
	tmp := t.TempDir()
	// pip builds in the source directory; a copy keeps the tree clean.
	src := filepath.Join(tmp, "src")
	if out, err := exec.Command("cp", "-r", py.dir, src).CombinedOutput(); err != nil {
		t.Fatalf("copy sdk/python: %v\n%s", err, out)
	}
	site := filepath.Join(tmp, "site")
	out := py.run(t, ctx, tmp, os.Environ(), "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
		"--disable-pip-version-check", "--target", site, src)
	if !strings.Contains(out, "Successfully installed primer-sdk-") {
		t.Fatalf("pip install:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(site, "primer", "py.typed")); err != nil {
		t.Errorf("the installed package has no py.typed: %v", err)
	}

	readme, err := os.ReadFile(filepath.Join(py.dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Example.*?```python\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("sdk/python/README.md has no ```python block under ## Example")
	}
	if n := strings.Count(string(m[1]), "\n"); n > 15 {
		t.Errorf("the README's example is %d lines; the issue asks for 15", n)
	}
	example := filepath.Join(tmp, "example.py")
	if err := os.WriteFile(example, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	// As a user on the server's machine: its URL, no key, no config file.
	env := []string{"PRIMER_URL=" + p.srv.URL(), "PRIMER_DATA_DIR=" + p.cfg.DataDir, "HOME=" + tmp,
		"PYTHONPATH=" + site, "PYTHONDONTWRITEBYTECODE=1", "PATH=" + os.Getenv("PATH")}
	out = py.run(t, ctx, tmp, env, example)
	t.Logf("README example:\n%s", out)
	for _, want := range []string{"0 hello from linux\n", "stdout tick 1\nstdout tick 2\nstdout tick 3\n", "'hello.py'", "not found: 404 workspace ws-"} {
		if !strings.Contains(out, want) {
			t.Errorf("README example printed no %q", want)
		}
	}
}

// missingPip skips t (fails it in CI) saying how to get pip.
func missingPip(t *testing.T, py *pySDK, out string) {
	t.Helper()
	msg := "%s has no pip (%s): apt-get install python3-pip python3-setuptools (.ci/run does)"
	if os.Getenv("CI") != "" {
		t.Fatalf("CI: "+msg, py.python, strings.TrimSpace(out))
	}
	t.Skipf(msg, py.python, strings.TrimSpace(out))
}

// TestSDKPythonExamples runs each program of examples/python against a
// platform and checks what it printed: a snippet in a sandbox, a parallel
// map over 100 inputs on a warm pool, an eval suite on a schedule, and an
// agent session streaming its transcript (against a model stand-in that
// speaks OpenAI's wire format).
func TestSDKPythonExamples(t *testing.T) {
	py := pythonSDK(t)
	p := startPrimer(t)
	dir := filepath.Join(py.repo, "examples", "python")
	run := func(t *testing.T, extra []string, args ...string) string {
		t.Helper()
		out := py.run(t, ctxT(t, 10*time.Minute), t.TempDir(), py.env(p, p.key, extra...), args...)
		t.Logf("%s:\n%s", args[0], out)
		return out
	}
	expect := func(t *testing.T, out string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !regexp.MustCompile(w).MatchString(out) {
				t.Errorf("output has no match for %q", w)
			}
		}
	}
	t.Run("run_snippet", func(t *testing.T) {
		out := run(t, nil, filepath.Join(dir, "run_snippet.py"))
		expect(t, out, `(?m)^workspace ws-[0-9a-f]+ \(local, (cold|warm)\)$`, `\[stdout\] step 0 on Linux\n\[stdout\] step 1 on Linux\n\[stdout\] step 2 on Linux\n\[stdout\] 285\n`, `exit code 0 in \d+ ms`)
	})
	t.Run("parallel_map", func(t *testing.T) {
		out := run(t, nil, filepath.Join(dir, "parallel_map.py"), "default", "4")
		expect(t, out, `pool map-[0-9a-f]+: 4 warm workspaces`, `mapped 100 inputs in [0-9.]+s on 4 workspaces`, `sum of squares: 328350\n`)
	})
	t.Run("eval_schedule", func(t *testing.T) {
		junit := filepath.Join(t.TempDir(), "results.xml")
		out := run(t, nil, filepath.Join(dir, "eval_schedule.py"), "--suite", "py-example-"+randomHex(3), "--every", "3s", "--runs", "2", "--junit", junit, "--delete")
		expect(t, out, `(?m)^run run-py-example-\S+ \(schedule\): succeeded, pass rate 100%$`, `fizzbuzz\s+pass`, `score\s+pass .* score 0.9`, `0 regressions, 0 fixes, 3 unchanged`)
		if strings.Count(out, "(schedule): succeeded") != 2 {
			t.Errorf("want two scheduled runs")
		}
		if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), `<testcase`) {
			t.Errorf("JUnit file: %v %.200s", err, b)
		}
	})
	t.Run("agent_session", func(t *testing.T) {
		model := llmtest.Start(t, llmtest.CodeRunnerScript())
		out := run(t, []string{"MODEL_BASE_URL=" + model.URL(), "MODEL_API_KEY=sk-example-" + randomHex(8), "MODEL_NAME=test-model-1"},
			filepath.Join(dir, "agent_session.py"))
		expect(t, out, `(?m)^user\s+Write snippet.py`, `tool\s+workspace__write .* -> commit [0-9a-f]{8}`, `tool\s+workspace__exec .* -> commit [0-9a-f]{8}`,
			`assistant The snippet printed 42.`, `run ended: completed after 3 turns`, `out.txt: 42\n`, `history [0-9a-f]{8} workspace__exec: `)
		if n := len(model.Requests()); n != 3 {
			t.Errorf("the model got %d requests, want 3", n)
		}
	})
}
