package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSDKPython runs the Python SDK's pytest suite (sdk/python/tests)
// against a real platform: the local template, and a Docker template when
// the engine answers (always in CI). Every SDK call, its errors, its
// streams and its context managers are driven there; a failing pytest
// fails this test with pytest's report.
func TestSDKPython(t *testing.T) {
	py := pythonSDK(t)
	checkPythonVersion(t, py)
	docker := dockerForSDK(t)
	p := startPrimer(t, withContainers(t), withProbeInterval(time.Second))
	ctx := ctxT(t, 20*time.Minute)
	extra := docker
	if os.Getenv("CI") != "" {
		extra = append(extra, "PRIMER_SDK_REQUIRE_DOCKER=1")
	}
	out := py.run(t, ctx, py.dir, py.env(p, p.key, extra...),
		"-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "--durations=5", filepath.Join(py.dir, "tests"))
	t.Logf("pytest:\n%s", out)
}
