package server

// A workspace's own cgroup. A command that leaves its process group
// (setsid, a daemon double-forking) escapes the group kill of reset and
// Close; a cgroup does not let it: every exec is cloned straight into the
// cgroup (clone3 CLONE_INTO_CGROUP), its descendants stay there whatever
// they do, and a kill of every process listed in the frozen cgroup ends
// them all. The runtime uses one when
// Config.Cgroup names a cgroup v2 directory it may write (the local and
// worktree backends make one per workspace where the host allows it).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/primerhq/primer/errs"
)

// cgroup is a workspace's cgroup, open so execs can be cloned into it.
type cgroup struct {
	path string
	dir  *os.File
}

// openCgroup opens the cgroup v2 directory path.
func openCgroup(path string) (*cgroup, error) {
	if _, err := os.Stat(filepath.Join(path, "cgroup.procs")); err != nil {
		return nil, fmt.Errorf("cgroup %s: not a cgroup v2 directory: %w", path, err)
	}
	dir, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: open: %w", path, err)
	}
	return &cgroup{path: path, dir: dir}, nil
}

// attr puts a command started with it into the cgroup.
func (cg *cgroup) attr(a *syscall.SysProcAttr) {
	a.UseCgroupFD = true
	a.CgroupFD = int(cg.dir.Fd())
}

// kill ends every process of the cgroup and waits until none is left (or
// deadline). The cgroup is frozen meanwhile (cgroup.freeze, Linux 5.2), so
// nothing forks between the listing and the kill, and thawed after, so the
// workspace's next commands run. Not cgroup.kill: on the kernels tried, a
// process cloned into the cgroup after it was written was killed too.
func (cg *cgroup) kill(deadline time.Time) error {
	freeze := filepath.Join(cg.path, "cgroup.freeze")
	if os.WriteFile(freeze, []byte("1"), 0) == nil {
		defer func() { _ = os.WriteFile(freeze, []byte("0"), 0) }()
	}
	for {
		pids, err := cg.procs()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errs.E(errs.Unavailable, "reset: %d processes of cgroup %s still running after SIGKILL", len(pids), cg.path)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procs lists the cgroup's processes.
func (cg *cgroup) procs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(cg.path, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: list processes: %w", cg.path, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// RemoveCgroup kills every process of the cgroup v2 directory path and
// removes it; a missing one is no error. The owner of a workspace's cgroup
// calls it when the workspace's runtime stops for good (delete, teardown):
// a runtime's Close leaves the cgroup alone, since a replacement runtime
// of the same workspace may already use it.
func RemoveCgroup(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	cg := &cgroup{path: path}
	err := cg.kill(time.Now().Add(resetWait))
	if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = fmt.Errorf("cgroup %s: remove: %w", path, rerr)
	}
	return err
}
