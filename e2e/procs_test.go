package e2e

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The helpers the tests that run `primer serve` as a process share: wait
// for it, kill it, stop it, and show its log.

// waitReadyz waits up to 2 minutes until base+"/readyz" answers 200.
func waitReadyz(t *testing.T, base, what string) {
	t.Helper()
	eventually(t, 2*time.Minute, what+" ready", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// killProc sends SIGKILL to cmd and waits until it is gone; done receives
// cmd.Wait's result.
func killProc(t *testing.T, name string, cmd *exec.Cmd, done <-chan error) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", name, err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still running 30s after SIGKILL", name)
	}
}

// stopProc sends SIGTERM to cmd and waits for exit status 0; done receives
// cmd.Wait's result. A process still running after 60 s fails the test and
// is killed.
func stopProc(t *testing.T, name string, cmd *exec.Cmd, done <-chan error) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("stop %s: %v", name, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s after SIGTERM: %v, want exit status 0", name, err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("%s did not stop within 60s of SIGTERM; killing it", name)
		_ = cmd.Process.Kill()
		<-done
	}
}

// waitDone returns a channel that receives cmd.Wait's result once.
func waitDone(cmd *exec.Cmd) <-chan error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return done
}

// logTail logs the last n lines of the log file of the process name.
func logTail(t *testing.T, name, path string, n int) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("%s log (last %d lines):\n%s", name, len(lines), strings.Join(lines, "\n"))
}
