package server_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// TestStateRewriteDetected: a commit that names the caller's last commit
// (Expect) says whether it is still on the history's line; after a
// command rewrites .state (git commit --amend, git reset), it is not.
func TestStateRewriteDetected(t *testing.T) {
	gitBin := testenv.Git(t)
	for _, tc := range []struct {
		name, rewrite string
	}{
		{"amend", "commit --amend --allow-empty -m forged"},
		{"reset", "reset --soft HEAD~1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := runtimetest.Start(t, server.Config{})
			c := e.Client
			ctx := runtimetest.Ctx(t)
			host(t, e.Root, "echo a > a.txt")
			one := mustCommit(t, c, "one")
			host(t, e.Root, "echo b > b.txt")
			p := sig("two")
			p.Expect = one.Commit
			two, err := c.StateCommit(ctx, p)
			if err != nil || two.ExpectMissing {
				t.Fatalf("commit on an untouched history: %+v, %v; want the expected commit found", two, err)
			}
			if two.Bytes <= 0 {
				t.Errorf("Bytes = %d, want the history's size", two.Bytes)
			}
			cmd := exec.Command(gitBin, append([]string{"--git-dir=" + filepath.Join(e.Root, ".state"), "-c", "user.name=x", "-c", "user.email=x@x"}, strings.Fields(tc.rewrite)...)...)
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+e.Dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %s: %v\n%s", tc.rewrite, err, out)
			}
			p = sig("three")
			p.Expect = two.Commit
			three, err := c.StateCommit(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if !three.ExpectMissing {
				t.Errorf("after git %s: ExpectMissing false, want the rewrite noticed", tc.rewrite)
			}
		})
	}
}

// TestStateGC: every StateGCEvery commits the history is packed: loose
// objects go, the history stays whole (git fsck, every commit readable)
// and its size stops growing with the commits of unchanged files.
func TestStateGC(t *testing.T) {
	gitBin := testenv.Git(t)
	e := runtimetest.Start(t, server.Config{StateGCEvery: 5})
	c := e.Client
	var last protocol.StateCommitResult
	for i := range 12 {
		host(t, e.Root, "echo "+strings.Repeat("x", i)+" > f.txt && seq 1 2000 > big.txt")
		last = mustCommit(t, c, "c")
	}
	objects := filepath.Join(e.Root, ".state", "objects")
	var loose, packs int
	_ = filepath.WalkDir(objects, func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil || d.IsDir():
		case strings.HasSuffix(p, ".pack"):
			packs++
		case !strings.Contains(p, string(filepath.Separator)+"pack"+string(filepath.Separator)):
			loose++
		}
		return nil
	})
	// 12 commits, packed at 5 and 10: what the last two wrote is loose.
	if packs != 1 || loose > 2*3 {
		t.Errorf("after 12 commits packed every 5: %d packs, %d loose objects; want 1 pack, at most 6 loose", packs, loose)
	}
	cmd := exec.Command(gitBin, "--git-dir="+filepath.Join(e.Root, ".state"), "fsck", "--strict")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+e.Dir)
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "error") {
		t.Fatalf("git fsck after gc: %v\n%s", err, out)
	}
	log, err := c.StateLog(runtimetest.Ctx(t), protocol.StateLogParams{})
	if err != nil || len(log.Commits) != 12 || log.Commits[0].Commit != last.Commit {
		t.Fatalf("log after gc: %d commits, %v; want 12 from %s", len(log.Commits), err, last.Commit)
	}
	if last.Bytes <= 0 || last.Bytes > 64<<10 {
		t.Errorf("history of 12 small commits is %d bytes, want packed well under 64 KiB", last.Bytes)
	}
}
