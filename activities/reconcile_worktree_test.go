package activities

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/backend/worktree"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/wire"
)

// TestReconcileWorktreeCrashLeftovers: what `git worktree add` made before
// the platform died is removed by the reconciler when no workspace has its
// id (a branch whose directory is gone, or the whole worktree), and left
// for the workspace to adopt when one does: its next provision checks the
// branch out again, with the work committed on it.
func TestReconcileWorktreeCrashLeftovers(t *testing.T) {
	testenv.Git(t)
	r := newRig(t)
	ctx := context.Background()
	host := local.NewHost(nil)
	t.Cleanup(func() { _ = host.Close() })
	r.a.Backends = backend.NewRegistry(map[string]backend.Factory{
		memory.Type: r.mem.Factory(), worktree.Type: worktree.Factory(host, nil),
	})
	root := t.TempDir()
	cfg := json.RawMessage(`{"kind":"worktree","root_path":"` + root + `"}`)
	if err := r.store.CreateProvider(ctx, &wire.Provider{ID: "wt", Provider: worktree.Type, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	b, err := r.a.Backends.For(&wire.Provider{ID: "wt", Provider: worktree.Type, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@x", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(repo, "init", "-q", "-b", "main")
	git(repo, "commit", "-q", "--allow-empty", "-m", "first")
	tmplDoc := json.RawMessage(`{"kind":"worktree","repository":"` + repo + `"}`)
	hasBranch := func(id string) bool {
		return exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+worktree.Branch(id)).Run() == nil
	}
	// provision runs the backend's add as a workspace's provision does;
	// dirGone then removes the directory as a crash mid-checkout leaves it
	// (the branch made, the worktree registered, no files).
	provision := func(id string, dirGone bool) backend.Handle {
		t.Helper()
		h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: tmplDoc, Token: "tok"})
		if err != nil {
			t.Fatal(err)
		}
		if dirGone {
			if err := os.WriteFile(filepath.Join(h.Path, "work.txt"), []byte("w"), 0o644); err != nil {
				t.Fatal(err)
			}
			git(h.Path, "add", "work.txt")
			git(h.Path, "commit", "-q", "-m", "work")
			host.Stop(id)
			if err := os.RemoveAll(h.Path); err != nil {
				t.Fatal(err)
			}
		}
		return h
	}
	branchOnly := "ws-" + strings.Repeat("a", 16)
	whole := "ws-" + strings.Repeat("b", 16)
	owned := "ws-" + strings.Repeat("c", 16)
	provision(branchOnly, true)
	provision(whole, false)
	provision(owned, true)
	if err := r.store.CreateTemplate(ctx, &wire.Template{ID: "tmpl-wt", ProviderID: "wt", Backend: tmplDoc}); err != nil {
		t.Fatal(err)
	}
	if err := r.store.CreateWorkspace(ctx, &wire.Workspace{ID: owned, TemplateID: "tmpl-wt", ProviderID: "wt", Backend: worktree.Type, Phase: wire.PhasePending}); err != nil {
		t.Fatal(err)
	}

	out, err := r.a.Reconcile(ctx, ReconcileInput{Grace: 0})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out.Removed)
	if !slices.Equal(out.Removed, []string{branchOnly, whole}) || len(out.Errors) != 0 {
		t.Fatalf("reconcile removed %v (errors %v), want %s and %s", out.Removed, out.Errors, branchOnly, whole)
	}
	for _, id := range []string{branchOnly, whole} {
		if hasBranch(id) {
			t.Errorf("branch of %s (no workspace) left after the reconciler", id)
		}
		if _, err := os.Stat(filepath.Join(root, id)); err == nil {
			t.Errorf("directory of %s (no workspace) left after the reconciler", id)
		}
	}
	if wt := git(repo, "worktree", "list", "--porcelain"); strings.Contains(wt, branchOnly) || strings.Contains(wt, whole) {
		t.Errorf("git still lists a removed worktree:\n%s", wt)
	}
	if !hasBranch(owned) {
		t.Fatal("the reconciler removed the branch of a workspace that exists")
	}
	// Adopted: the workspace's provision (its workflow's retry) checks the
	// branch out again, with its work.
	h := provision(owned, false)
	if _, err := os.Stat(filepath.Join(h.Path, "work.txt")); err != nil {
		t.Errorf("adopting the branch lost its committed work: %v", err)
	}
	// A second pass finds nothing more.
	if out, err := r.a.Reconcile(ctx, ReconcileInput{Grace: time.Hour}); err != nil || len(out.Removed) != 0 {
		t.Errorf("second pass: removed %v, %v", out.Removed, err)
	}
}
