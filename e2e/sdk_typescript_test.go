package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/activities/llm/llmtest"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker"
)

// tsSDKDir returns sdk/typescript once node and its devDependencies (npm
// ci there) are installed; otherwise it skips t (fails it in CI) saying how
// to install them.
func tsSDKDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "sdk", "typescript")
	const install = "cd sdk/typescript && npm ci (.ci/run does)"
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(t, "node is not on PATH (%v); install Node.js >= 20, then %s", err, install)
	}
	for _, bin := range []string{"tsc", "openapi-typescript"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", bin)); err != nil {
			testenv.Missing(t, "the TypeScript SDK's devDependencies are not installed (%v): %s", err, install)
		}
	}
	return dir
}

// tsRun runs a command of sdk/typescript's toolchain in dir with env and
// fails t with its output when it fails.
func tsRun(t *testing.T, dir string, env []string, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %s", name, strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// TestTypeScriptSDK runs the TypeScript SDK's own tests (sdk/typescript/test,
// node --test) and the examples (examples/typescript) against a real
// platform: the first admin key, the local default template, a Docker
// template and model stand-ins speaking the OpenAI wire format for the
// agent runs. The SDK and its tests are compiled first, which is also the
// check that they type-check (tsc, strict).
func TestTypeScriptSDK(t *testing.T) {
	dir := tsSDKDir(t)
	e := containertest.Known()[0]
	containertest.Require(t, e)
	p := startPrimer(t, withContainers(t), func(c *worker.Config) { c.PoolInterval = time.Second })
	t.Cleanup(func() { e2bDeleteAll(t, p) })
	ctx := ctxT(t, 20*time.Minute)
	if _, err := p.api.CreateProvider(ctx, wire.ProviderSpec{ID: "ts-docker", Provider: "container", Config: containertest.ProviderConfig(e)}); err != nil {
		t.Fatalf("create provider: %v", err)
	}
	doc := `{"kind":"container","image":"` + containertest.PythonImage + `","cpu_cores":1,"memory_bytes":536870912,"network":{"egress":"deny_all"}}`
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "ts-docker", ProviderID: "ts-docker", Backend: raw(doc)}); err != nil {
		t.Fatalf("create template: %v", err)
	}
	testModel := llmtest.Start(t, llmtest.CodeRunnerScript())
	exampleModel := llmtest.Start(t, llmtest.CodeRunnerScript())
	env := append(os.Environ(),
		"PRIMER_URL="+p.checkedURL(),
		"PRIMER_TOKEN="+p.key,
		"PRIMER_TEST_DOCKER_TEMPLATE=ts-docker",
		"PRIMER_TEST_MODEL_URL="+testModel.URL(),
		"PRIMER_EXAMPLE_MODEL_URL="+exampleModel.URL(),
	)
	// Node 20 has a WebSocket (for processes.attach) behind a flag; 22 and
	// later have it on.
	if v, _ := exec.Command("node", "--version").Output(); strings.HasPrefix(string(v), "v20.") || strings.HasPrefix(string(v), "v21.") {
		env = append(env, "NODE_OPTIONS=--experimental-websocket")
	}
	tsc := filepath.Join("node_modules", ".bin", "tsc")
	tsRun(t, dir, env, 5*time.Minute, tsc, "-p", "tsconfig.test.json")
	tests, err := filepath.Glob(filepath.Join(dir, "build", "sdk", "typescript", "test", "*.test.js"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no compiled tests in build/sdk/typescript/test (%v)", err)
	}
	out := tsRun(t, dir, env, 15*time.Minute, "node", append([]string{"--test", "--test-reporter=spec"}, tests...)...)
	t.Log(out)
}
