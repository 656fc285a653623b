package local_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/errs"
)

// TestSnapshotPartialNotTaken: a copy a crash cut off (left under its
// temporary name) is never taken for the snapshot: a provision from the
// snapshot fails with NotFound and leaves nothing, and the next Snapshot
// with that id removes the partial copy and takes a complete one.
func TestSnapshotPartialNotTaken(t *testing.T) {
	b, _ := newBackend(t)
	ctx := t.Context()
	id, token := backendtest.NewID(t), backendtest.NewToken(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
	if err := os.WriteFile(filepath.Join(h.Path, "f"), []byte("complete"), 0o640); err != nil {
		t.Fatal(err)
	}
	snapID := backendtest.NewSnapshotID(t)
	final, err := local.SnapshotPath(b.Root(), snapID)
	if err != nil {
		t.Fatal(err)
	}
	// What a crash mid-copy leaves: half the files under the temporary name.
	partial := filepath.Join(filepath.Dir(final), "."+snapID+".partial-deadbeef")
	if err := os.MkdirAll(partial, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(partial, "f"), []byte("comp"), 0o640); err != nil {
		t.Fatal(err)
	}
	ref := backend.SnapshotRef{Backend: local.Type, SnapshotID: snapID, Mode: backend.SnapshotFilesystem, Ref: final}
	child := backendtest.NewID(t)
	if ch, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: child, Token: token, Snapshot: &ref}); err == nil {
		_ = b.Destroy(context.Background(), ch)
		t.Fatal("provision from a partial capture succeeded")
	} else if errs.KindOf(err) != errs.NotFound {
		t.Errorf("provision from a partial capture: %v, want NotFound", err)
	}
	if _, err := os.Lstat(filepath.Join(b.Root(), child)); err == nil {
		t.Error("a failed provision from a partial capture left the workspace's directory")
	}

	got, err := b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: snapID, TenantID: "default", Mode: backend.SnapshotFilesystem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.DeleteSnapshot(context.Background(), got) })
	if _, err := os.Stat(partial); err == nil {
		t.Error("the partial copy is still there after a complete snapshot")
	}
	if data, err := os.ReadFile(filepath.Join(got.Ref, "f")); err != nil || string(data) != "complete" {
		t.Errorf("snapshot holds f = %q, %v; want the complete file", data, err)
	}
	if fi, err := os.Stat(filepath.Join(got.Ref, "f")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("snapshot's f: %v, %v; want mode 0640", fi, err)
	}
}

// TestSnapshotsNotListed: the snapshot store under root_path (and a
// partial copy in it) is never listed as a workspace, so the reconciler
// cannot take a snapshot for an orphan.
func TestSnapshotsNotListed(t *testing.T) {
	b, _ := newBackend(t)
	ctx := t.Context()
	id, token := backendtest.NewID(t), backendtest.NewToken(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
	ref, err := b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: backendtest.NewSnapshotID(t), Mode: backend.SnapshotFilesystem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.DeleteSnapshot(context.Background(), ref) })
	// A directory in the store named like a workspace id is not one either.
	if err := os.MkdirAll(filepath.Join(b.Root(), local.SnapshotsDir, "ws-abc"), 0o700); err != nil {
		t.Fatal(err)
	}
	listed, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].WorkspaceID != id {
		t.Errorf("List = %+v, want only workspace %s", listed, id)
	}
	if filepath.Dir(ref.Ref) != filepath.Join(b.Root(), local.SnapshotsDir) {
		t.Errorf("snapshot at %s, want it in %s", ref.Ref, filepath.Join(b.Root(), local.SnapshotsDir))
	}
}

// TestPausedStaysPaused: a paused workspace's Endpoint refuses (nothing
// serves it again behind the workflow's back), also on a backend built
// after a platform restart; Resume serves it and removes the mark; the
// mark is not listed as a workspace.
func TestPausedStaysPaused(t *testing.T) {
	b, host := newBackend(t)
	ctx := t.Context()
	id, token := backendtest.NewID(t), backendtest.NewToken(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pause(ctx, h, backend.SnapshotFilesystem); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Endpoint(ctx, h, token); errs.KindOf(err) != errs.Unavailable {
		t.Errorf("endpoint of a paused workspace: %v, want Unavailable", err)
	}
	host.Close()
	b2, host2 := backendAt(t, b.Root())
	if _, err := b2.ServeRuntime(ctx, h, token, nil); errs.KindOf(err) != errs.Unavailable {
		t.Errorf("after a restart, serving a paused workspace: %v, want Unavailable", err)
	}
	if host2.URL(id) != "" {
		t.Error("a paused workspace is served after a restart")
	}
	if listed, err := b2.List(ctx); err != nil || len(listed) != 1 || listed[0].WorkspaceID != id {
		t.Errorf("List = %+v, %v; want only workspace %s", listed, err, id)
	}
	if _, err := b2.Resume(ctx, h, token, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Endpoint(ctx, h, token); err != nil {
		t.Errorf("endpoint after resume: %v", err)
	}
	if err := b2.Destroy(ctx, h); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Root(), local.PausedDir, id)); err == nil {
		t.Error("the paused mark outlives the workspace")
	}
}
