package worktree_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/worktree"
	"github.com/primerhq/primer/errs"
)

// TestSnapshotLeavesWorkspaceAlone: a snapshot moves neither the
// workspace's branch nor its index (a staged change stays staged, an
// untracked file untracked), captures tracked, untracked and staged files
// but not ignored ones, and is not listed as a workspace or a stray
// branch; a workspace made from it is on its own branch at the snapshot's
// commit, whose parent is the source's HEAD.
func TestSnapshotLeavesWorkspaceAlone(t *testing.T) {
	repo := newRepo(t)
	if err := os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("*.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, repo, "add", ".gitignore")
	run(t, repo, "commit", "-q", "-m", "ignore logs")
	b := newBackend(t)
	ctx := t.Context()
	id, token := backendtest.NewID(t), backendtest.NewToken(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: template(repo, ""), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(h.Path, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "changed\n")
	write("staged.txt", "staged\n")
	run(t, h.Path, "add", "staged.txt")
	write("untracked.txt", "untracked\n")
	write("build.log", "ignored\n")
	head := run(t, h.Path, "rev-parse", "HEAD")
	status := run(t, h.Path, "status", "--porcelain")

	ref, err := b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: backendtest.NewSnapshotID(t), Mode: backend.SnapshotFilesystem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.DeleteSnapshot(context.Background(), ref) })
	if got := run(t, h.Path, "rev-parse", "HEAD"); got != head {
		t.Errorf("snapshot moved the workspace's HEAD from %s to %s", head, got)
	}
	if got := run(t, h.Path, "status", "--porcelain"); got != status {
		t.Errorf("snapshot changed the workspace's status:\n%s\nwant\n%s", got, status)
	}
	if got := run(t, repo, "rev-parse", worktree.SnapshotRefPrefix+ref.SnapshotID); got != ref.Ref {
		t.Errorf("snapshot ref names %s, want %s", got, ref.Ref)
	}
	if got := run(t, repo, "rev-parse", ref.Ref+"^"); got != head {
		t.Errorf("snapshot commit's parent = %s, want the workspace's HEAD %s", got, head)
	}
	files := run(t, repo, "ls-tree", "-r", "--name-only", ref.Ref)
	for _, want := range []string{"README.md", "staged.txt", "untracked.txt"} {
		if !strings.Contains(files, want) {
			t.Errorf("snapshot tree lacks %s:\n%s", want, files)
		}
	}
	if strings.Contains(files, "build.log") {
		t.Errorf("snapshot tree holds the ignored build.log:\n%s", files)
	}
	listed, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].WorkspaceID != id {
		t.Errorf("List = %+v, want only workspace %s", listed, id)
	}

	child := backendtest.NewID(t)
	ch, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: child, Template: template(repo, ""), Token: token, Snapshot: &ref})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), ch) })
	if got := run(t, ch.Path, "rev-parse", "HEAD"); got != ref.Ref {
		t.Errorf("child HEAD = %s, want the snapshot's commit %s", got, ref.Ref)
	}
	if got := run(t, ch.Path, "branch", "--show-current"); got != worktree.Branch(child) {
		t.Errorf("child branch = %s, want %s", got, worktree.Branch(child))
	}
	if data, err := os.ReadFile(filepath.Join(ch.Path, "README.md")); err != nil || string(data) != "changed\n" {
		t.Errorf("child README.md = %q, %v; want the source's change", data, err)
	}
}

// TestSnapshotWithoutRefNotTaken: a snapshot whose ref was never written
// (the platform died after the commit, before update-ref) or was deleted
// is not found: a provision from it fails with NotFound and leaves no
// worktree or branch.
func TestSnapshotWithoutRefNotTaken(t *testing.T) {
	repo := newRepo(t)
	b := newBackend(t)
	ctx := t.Context()
	head := run(t, repo, "rev-parse", "HEAD")
	ref := backend.SnapshotRef{Backend: worktree.Type, SnapshotID: backendtest.NewSnapshotID(t), Mode: backend.SnapshotFilesystem, Ref: head,
		Attrs: map[string]string{"repository": repo}}
	child := backendtest.NewID(t)
	if ch, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: child, Template: template(repo, ""), Token: backendtest.NewToken(t), Snapshot: &ref}); err == nil {
		_ = b.Destroy(context.Background(), ch)
		t.Fatal("provision from a snapshot without its ref succeeded")
	} else if errs.KindOf(err) != errs.NotFound {
		t.Errorf("provision from a snapshot without its ref: %v, want NotFound", err)
	}
	if branchExists(t, repo, worktree.Branch(child)) {
		t.Error("a failed provision from a snapshot left a branch")
	}
	if _, err := os.Lstat(filepath.Join(b.Root(), child)); err == nil {
		t.Error("a failed provision from a snapshot left a directory")
	}
	if err := b.DeleteSnapshot(ctx, ref); err != nil {
		t.Errorf("delete of a snapshot without its ref: %v, want nil", err)
	}
}
