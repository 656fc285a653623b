package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/wire"
)

// pySDK is the Python SDK (sdk/python) and an interpreter that has what it
// needs: Debian's python3 with python3-httpx and python3-pytest.
type pySDK struct {
	python string // the interpreter
	dir    string // sdk/python
	repo   string // the repository's root
}

// pythonSDK returns the SDK once a python3 that imports httpx and pytest
// is found; otherwise it skips t (fails it in CI) saying how to install
// them. PRIMER_PYTHON names the interpreter to use; else python3 on PATH,
// then Debian's /usr/bin/python3 (a pyenv python3 on PATH may lack
// Debian's packages).
func pythonSDK(t *testing.T) *pySDK {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Dir(filepath.Dir(file))
	const install = "apt-get install python3 python3-httpx python3-pytest (.ci/run does), or set PRIMER_PYTHON to a python3 that has httpx and pytest"
	var tried []string
	for _, py := range []string{os.Getenv("PRIMER_PYTHON"), "python3", "/usr/bin/python3"} {
		if py == "" {
			continue
		}
		out, err := exec.Command(py, "-c", "import httpx, pytest; print(httpx.__version__)").CombinedOutput()
		if err == nil {
			return &pySDK{python: py, dir: filepath.Join(repo, "sdk", "python"), repo: repo}
		}
		tried = append(tried, py+": "+strings.TrimSpace(lastLine(string(out), err)))
	}
	testenv.Missing(t, "no python3 with httpx and pytest (%s): %s", strings.Join(tried, "; "), install)
	return nil
}

func lastLine(out string, err error) string {
	out = strings.TrimSpace(out)
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if out == "" {
		return err.Error()
	}
	return out
}

// env is the environment of a Python program against p with key: the two
// variables the README names, the SDK importable, nothing written into the
// source tree.
func (s *pySDK) env(p *primer, key string, extra ...string) []string {
	env := []string{
		"PRIMER_URL=" + p.checkedURL(),
		"PRIMER_TOKEN=" + key,
		"PYTHONPATH=" + s.dir,
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PRIMER_") && !strings.HasPrefix(kv, "PYTHONPATH=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// run runs the interpreter with args in dir and returns its combined
// output; a failure fails t with the output.
func (s *pySDK) run(t *testing.T, ctx context.Context, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, s.python, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %s", filepath.Base(s.python), strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", s.python, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// dockerForSDK reports whether the Docker engine answers with the test
// images, as a subtest that skips (fails in CI) when it does not, and
// returns the environment that points the SDK's Docker tests at it.
func dockerForSDK(t *testing.T) []string {
	t.Helper()
	e := containertest.Known()[0]
	ok := false
	t.Run("docker-engine", func(t *testing.T) {
		containertest.Require(t, e)
		ok = true
	})
	if !ok {
		return nil
	}
	return []string{"PRIMER_SDK_DOCKER_SOCKET=" + e.Socket, "PRIMER_SDK_PYTHON_IMAGE=" + containertest.PythonImage}
}

// checkPythonVersion fails t unless sdk/python says the server's version
// (wire.Version) in pyproject.toml and primer/_version.py.
func checkPythonVersion(t *testing.T, s *pySDK) {
	t.Helper()
	for file, re := range map[string]string{
		"pyproject.toml":     `(?m)^version = "([^"]+)"`,
		"primer/_version.py": `__version__ = "([^"]+)"`,
	} {
		b, err := os.ReadFile(filepath.Join(s.dir, file))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(re).FindSubmatch(b)
		if m == nil || string(m[1]) != wire.Version {
			t.Errorf("sdk/python/%s: version %q, want the server's %q (wire.Version)", file, m, wire.Version)
		}
	}
}
