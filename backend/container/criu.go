package container

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Memory snapshots (mode full) would checkpoint the container's processes
// with CRIU through Podman. This backend does not offer them yet; criuNote
// says so, with what `criu check` says of this host where it fails, since
// that is the first thing an operator would need to fix.

var (
	criuOnce   sync.Once
	criuResult string
)

// criuNote is the reason full mode is missing, for Capabilities and
// refusals. `criu check` runs once per process.
func criuNote() string {
	criuOnce.Do(func() {
		const notOffered = "memory snapshots (CRIU checkpoint and restore) are not offered by this container backend"
		path, err := exec.LookPath("criu")
		if err != nil {
			criuResult = notOffered + "; criu is not installed on the platform's host"
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, "check").CombinedOutput()
		if err != nil {
			criuResult = notOffered + "; `criu check` fails on this host: " + criuCause(string(out), err)
			return
		}
		criuResult = notOffered
	})
	return criuResult
}

// criuCause is what `criu check` says went wrong: its first error line,
// which names the cause (a later one only says that detection stopped), or
// its last line, or err.
func criuCause(out string, err error) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "Error") {
			return l
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return err.Error()
}
