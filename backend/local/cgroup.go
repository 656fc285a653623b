package local

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// cgroupDir is the directory under which the host makes one cgroup per
// workspace, in the platform's own cgroup v2.
const cgroupDir = "primer-workspaces"

// cgroupBase returns <cgroup v2 mount><this process's cgroup>/primer-workspaces,
// created, or "" where there is none this process may write (no cgroup v2,
// or not delegated to this user): then a workspace's reset and delete kill
// its commands' process groups only, and a process that left its group
// (setsid, a daemon) outlives them.
func cgroupBase() string {
	mount := cgroup2Mount()
	if mount == "" {
		return ""
	}
	own := ownCgroup()
	if own == "" {
		return ""
	}
	base := filepath.Join(mount, own, cgroupDir)
	if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return ""
	}
	if _, err := os.Stat(filepath.Join(base, "cgroup.procs")); err != nil {
		return ""
	}
	return base
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted ("" if nowhere):
// /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid one.
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, after := strings.Fields(pre), strings.Fields(post)
		if len(fields) >= 5 && len(after) > 0 && after[0] == "cgroup2" {
			return fields[4]
		}
	}
	return ""
}

// ownCgroup is this process's cgroup v2 path ("0::/path" in /proc/self/cgroup).
func ownCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}

// randomSuffix is 8 random hex digits.
func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
