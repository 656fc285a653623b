package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/internal/testenv"
)

// e2bSDKVersion is the npm e2b SDK the scripts in e2e/e2bsdk drive,
// pinned exactly in its package.json and package-lock.json.
const e2bSDKVersion = "2.51.0"

// e2bSDK runs the scripts of e2e/e2bsdk, each a user's program on the
// unmodified npm e2b SDK, against one platform with one API key: the
// three variables of the README's "E2B SDK" section are all it is given.
type e2bSDK struct {
	t   *testing.T
	dir string
	env []string
}

// e2bScriptsDir returns e2e/e2bsdk once node (new enough for the SDK) and
// the pinned SDK are installed there; otherwise it skips t (fails it in
// CI) saying how to install them.
func e2bScriptsDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "e2bsdk")
	const install = "cd e2e/e2bsdk && npm ci (.ci/run does)"
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		testenv.Missing(t, "node is not on PATH (%v); install Node.js >= 20.18.1, then %s", err, install)
	}
	if v := strings.TrimSpace(string(out)); !nodeNewEnough(v) {
		testenv.Missing(t, "node %s is older than the e2b SDK needs (>= 20.18.1); install a newer Node.js, then %s", v, install)
	}
	pkg, err := os.ReadFile(filepath.Join(dir, "node_modules", "e2b", "package.json"))
	if err != nil {
		testenv.Missing(t, "the e2b SDK is not installed (%v): %s", err, install)
	}
	var meta struct{ Version string }
	if json.Unmarshal(pkg, &meta) != nil || meta.Version != e2bSDKVersion {
		testenv.Missing(t, "e2e/e2bsdk/node_modules holds e2b %q, not the pinned %s: %s", meta.Version, e2bSDKVersion, install)
	}
	return dir
}

// nodeNewEnough reports whether node version v ("v20.20.2") satisfies the
// SDK's engines field, >=20.18.1 <21 || >=22.
func nodeNewEnough(v string) bool {
	m := regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(v)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	patch, _ := strconv.Atoi(m[3])
	switch {
	case major >= 22:
		return true
	case major == 20:
		return minor > 18 || minor == 18 && patch >= 1
	}
	return false
}

// newE2BSDK points the SDK at p's /e2b door with key.
func newE2BSDK(t *testing.T, p *primer, key string) *e2bSDK {
	t.Helper()
	base := p.srv.URL()
	env := []string{
		"E2B_API_URL=" + base + "/e2b",
		"E2B_SANDBOX_URL=" + base + "/e2b/envd",
		"E2B_API_KEY=" + key,
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "E2B_") {
			env = append(env, kv)
		}
	}
	return &e2bSDK{t: t, dir: e2bScriptsDir(t), env: env}
}

// withKey is the same SDK with another API key.
func (s *e2bSDK) withKey(key string) *e2bSDK {
	env := append([]string{"E2B_API_KEY=" + key}, s.env...)
	for i, kv := range env[1:] {
		if strings.HasPrefix(kv, "E2B_API_KEY=") {
			env = append(env[:i+1], env[i+2:]...)
			break
		}
	}
	return &e2bSDK{t: s.t, dir: s.dir, env: env}
}

// run runs script with args in a node process of its own and decodes the
// one JSON line it prints into out. A script that ends on an unexpected
// error fails t with the SDK's message.
func (s *e2bSDK) run(t *testing.T, out any, script string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script + ".mjs"}, args...)...)
	cmd.Dir = s.dir
	cmd.Env = s.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("node %s.mjs %s: %s", script, strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	var fatal struct {
		Fatal string `json:"fatal"`
		Stack string `json:"stack"`
	}
	if json.Unmarshal(stdout.Bytes(), &fatal) == nil && fatal.Fatal != "" {
		t.Fatalf("node %s.mjs: %s\n%s\nstderr:\n%s", script, fatal.Fatal, fatal.Stack, stderr.String())
	}
	if err != nil {
		t.Fatalf("node %s.mjs: %v\nstdout:\n%s\nstderr:\n%s", script, err, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node %s.mjs printed %q: %v\nstderr:\n%s", script, stdout.String(), err, stderr.String())
	}
}

// e2bLongLived is a script that answers JSON lines with JSON lines
// (bench.mjs), so the benchmarks time the SDK, not node's start-up.
type e2bLongLived struct {
	t    testing.TB
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	errs bytes.Buffer
}

// start starts script, stopped when t ends.
func (s *e2bSDK) start(script string) *e2bLongLived {
	s.t.Helper()
	l := &e2bLongLived{t: s.t, cmd: exec.Command("node", script+".mjs")}
	l.cmd.Dir, l.cmd.Env, l.cmd.Stderr = s.dir, s.env, &l.errs
	in, err := l.cmd.StdinPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	out, err := l.cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		s.t.Fatalf("start node %s.mjs: %v", script, err)
	}
	l.in, l.out = in, bufio.NewScanner(out)
	l.out.Buffer(make([]byte, 1<<20), 64<<20)
	s.t.Cleanup(func() {
		_ = l.in.Close()
		done := make(chan error, 1)
		go func() { done <- l.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = l.cmd.Process.Kill()
			<-done
		}
	})
	return l
}

// ask sends one request and decodes the answer into out.
func (l *e2bLongLived) ask(req map[string]any, out any) {
	l.t.Helper()
	line, _ := json.Marshal(req)
	if _, err := fmt.Fprintf(l.in, "%s\n", line); err != nil {
		l.t.Fatalf("write to node: %v\nstderr:\n%s", err, l.errs.String())
	}
	if !l.out.Scan() {
		l.t.Fatalf("node ended without answering %s: %v\nstderr:\n%s", line, l.out.Err(), l.errs.String())
	}
	var fatal struct {
		Fatal string `json:"fatal"`
	}
	if json.Unmarshal(l.out.Bytes(), &fatal) == nil && fatal.Fatal != "" {
		l.t.Fatalf("node answered %s with %s\nstderr:\n%s", line, fatal.Fatal, l.errs.String())
	}
	if err := json.Unmarshal(l.out.Bytes(), out); err != nil {
		l.t.Fatalf("node answered %s with %q: %v", line, l.out.Text(), err)
	}
}

// sdkCaught is what lib.mjs's caught records: the value, or the error the
// SDK threw (its class name, message and, for CommandExitError, the
// command's result).
type sdkCaught struct {
	OK       bool            `json:"ok"`
	Value    json.RawMessage `json:"value"`
	Name     string          `json:"name"`
	Message  string          `json:"message"`
	ExitCode *int            `json:"exitCode"`
	Stdout   string          `json:"stdout"`
	Stderr   string          `json:"stderr"`
}

// threw fails t unless c is an error of class name (one of names).
func (c sdkCaught) threw(t *testing.T, what string, names ...string) {
	t.Helper()
	for _, n := range names {
		if !c.OK && c.Name == n {
			return
		}
	}
	if c.OK {
		t.Errorf("%s = %s; want the SDK to throw %s", what, c.Value, strings.Join(names, " or "))
		return
	}
	t.Errorf("%s threw %s: %s; want %s", what, c.Name, c.Message, strings.Join(names, " or "))
}
