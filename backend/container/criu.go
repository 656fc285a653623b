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
			criuResult = notOffered + "; `criu check` fails on this host: " + lastLine(string(out), err)
			return
		}
		criuResult = notOffered
	})
	return criuResult
}

// lastLine is the last non-empty line of a command's output, or err.
func lastLine(out string, err error) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return err.Error()
}
