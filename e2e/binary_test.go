package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServeBinary is `make run` as a user meets it: the real `primer serve`
// binary configured by environment variables, driven by the real `primectl`
// binary through PRIMER_URL, stopped by SIGTERM with exit status 0, and
// started again on the same data dir with its workspace still running.
func TestServeBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries; run without -short")
	}
	bin := t.TempDir()
	for _, cmd := range []string{"primer", "primectl"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, cmd), "../cmd/"+cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("build %s: %v\n%s", cmd, err, out)
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	env := append(os.Environ(),
		"PRIMER_ADDR="+addr,
		"PRIMER_DATA_DIR="+t.TempDir(),
		"PRIMER_TEMPORAL_PORT="+strconv.Itoa(freePort(t)),
		"PRIMER_TEMPORAL_UI_PORT="+strconv.Itoa(freePort(t)),
		"PRIMER_PROBE_INTERVAL=1s",
		"PRIMER_URL=http://"+addr,
	)
	serve := func() *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, "primer"), "serve")
		cmd.Env = env
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
		waitReadyz(t, "http://"+addr, "primer serve")
		return cmd
	}
	stop := func(cmd *exec.Cmd) {
		stopProc(t, "primer serve", cmd, waitDone(cmd))
	}
	// primectl runs the binary and returns its stdout and exit code; its
	// stderr (the --wait progress, the error of a failure) goes to the
	// test's log, so a failure says why.
	primectl := func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "primectl"), args...)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if stderr.Len() > 0 {
			t.Logf("primectl %s: stderr:\n%s", strings.Join(args, " "), stderr.String())
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("primectl %v: %v", args, err)
		}
		return string(out), code
	}

	srv := serve()
	out, code := primectl("create", "workspace", "--set", "template_id=default", "--wait")
	m := regexp.MustCompile(`workspace/(ws-[0-9a-f]+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("create workspace: code %d, %q", code, out)
	}
	id := m[1]
	if out, code = primectl("workspace", "exec", id, "--", "sh", "-c", "echo 42 > answer; exit 4"); code != 4 {
		t.Errorf("exec exit code = %d (%q), want 4", code, out)
	}
	stop(srv)

	srv = serve()
	out, code = primectl("get", "workspace", id)
	if code != 0 || !strings.Contains(out, "running") {
		t.Errorf("after restart: code %d\n%s", code, out)
	}
	if out, code = primectl("workspace", "files", "get", id, "answer", "--content"); code != 0 || out != "42\n" {
		t.Errorf("file after restart = %q (code %d)", out, code)
	}
	if out, code = primectl("delete", "workspace", id, "--wait"); code != 0 {
		t.Errorf("delete: code %d %q", code, out)
	}
	stop(srv)
}
