package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// This file kills `primer serve` with SIGKILL while a snapshot is being
// captured and right after a fork was accepted (issue 25), and starts it
// again on the same state: every snapshot listed then is ready and
// restorable, or failed with a reason, or gone; every fork child ends
// running with the parent's files, or gone or failed with a reason; and
// the engine keeps no staging container or dangling image of a capture.
// Docker only: what is engine-specific in a capture the container
// backend's own snapshot tests cover on both engines.

// bigFiles writes 100 MiB of random data in the workspace volume, so that
// a capture (the staging copy and the commit of the copy) takes long
// enough to be cut off, and a mark outside it, in the root filesystem.
const bigFiles = "dd if=/dev/urandom of=/workspace/big bs=1M count=100 2>/dev/null && echo crash-mark > /tmp/mark"

// bigSum is what a sandbox with the files of bigFiles prints for it.
const bigSum = "md5sum < /workspace/big; cat /tmp/mark"

// snapshotRig is a rig that also removes, when the test ends, every image
// the engine keeps of the snapshots the test tracked, whatever became of
// them. Make it before the platform, as a rig.
type snapshotRig struct {
	*rig
	mu    sync.Mutex
	snaps []string
}

func newSnapshotRig(t *testing.T, e containertest.Engine) *snapshotRig {
	t.Helper()
	r := &snapshotRig{rig: newRig(t, e)}
	t.Cleanup(r.removeImages)
	return r
}

// trackSnapshot records a snapshot id whose images the cleanup removes.
func (r *snapshotRig) trackSnapshot(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snaps = append(r.snaps, id)
}

func (r *snapshotRig) removeImages() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range r.snaps {
		if err := r.eng.DeleteSnapshot(ctx, snapshotRef(id)); err != nil {
			r.t.Errorf("cleanup snapshot %s: %v", id, err)
		}
	}
}

// snapshotRef is the reference the container backend removes snapshot
// id's objects by.
func snapshotRef(id string) backend.SnapshotRef {
	return backend.SnapshotRef{Backend: container.Type, SnapshotID: id, Mode: backend.SnapshotFilesystem}
}

// stagingLeft describes what the engine holds of snapshot id's capture
// besides its tagged image: its staging container, and its images that
// are neither tagged nor the parent of a tagged one (dangling).
func (r *snapshotRig) stagingLeft(ctx context.Context, id string) []string {
	r.t.Helper()
	var out []string
	if _, err := r.eng.Client().ContainerInspect(ctx, "primer-snapshot-"+id); err == nil {
		out = append(out, "container primer-snapshot-"+id)
	} else if !cerrdefs.IsNotFound(err) {
		r.t.Fatalf("inspect the staging container of %s: %v", id, err)
	}
	imgs, err := r.eng.Client().ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", container.LabelSnapshot+"="+id), filters.Arg("dangling", "true"))})
	if err != nil {
		r.t.Fatalf("list the images of snapshot %s: %v", id, err)
	}
	for _, img := range imgs {
		what := "dangling image " + img.ID
		if info, err := r.eng.Client().ImageInspect(ctx, img.ID); err == nil {
			what += fmt.Sprintf(" (%q, made %s)", info.Comment, info.Created)
		}
		out = append(out, what)
	}
	return out
}

// images lists every image (intermediate ones too) of snapshot id.
func (r *snapshotRig) images(ctx context.Context, id string) []string {
	r.t.Helper()
	imgs, err := r.eng.Client().ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", container.LabelSnapshot+"="+id))})
	if err != nil {
		r.t.Fatalf("list the images of snapshot %s: %v", id, err)
	}
	var out []string
	for _, img := range imgs {
		out = append(out, fmt.Sprintf("image %s %v", img.ID, img.RepoTags))
	}
	return out
}

// settledSnapshot waits until snapshot id leaves phase creating and
// returns it, or nil once it is gone.
func settledSnapshot(t *testing.T, api *client.Client, id string, d time.Duration) *wire.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		snap, err := api.GetSnapshot(ctx, id)
		switch {
		case errs.Is(err, errs.NotFound):
			return nil
		case err == nil && snap.Phase != wire.SnapshotCreating:
			return snap
		case err != nil && errs.KindOf(err) != errs.Unavailable && ctx.Err() == nil:
			t.Fatalf("get snapshot %s: %v", id, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("snapshot %s still creating %s after the restart", id, d)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// settledWorkspace waits until workspace id is running or failed and
// returns it, or nil once it is gone: a fork child must end in one of
// those, never stay pending.
func settledWorkspace(t *testing.T, api *client.Client, id string, d time.Duration, diag func(string) string) *wire.Workspace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var last *wire.Workspace
	for {
		ws, err := api.GetWorkspace(ctx, id)
		switch {
		case errs.Is(err, errs.NotFound):
			return nil
		case err == nil:
			if last == nil || last.Phase != ws.Phase || last.Reason != ws.Reason {
				t.Logf("%s: %s (%s)", id, ws.Phase, ws.Reason)
			}
			last = ws
			if ws.Phase == wire.PhaseRunning || ws.Phase == wire.PhaseFailed {
				return ws
			}
		case errs.KindOf(err) != errs.Unavailable && ctx.Err() == nil:
			t.Fatalf("get workspace %s: %v", id, err)
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("workspace %s neither running, failed nor gone %s after the restart", id, d)
			if last != nil {
				msg += fmt.Sprintf("; last %s (%s)", last.Phase, last.Reason)
			}
			t.Fatal(msg + "; " + diag(id))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkSnapshots asserts what a restart must leave of the snapshots the
// platform lists: each one ready is restorable (a workspace made from it
// prints want for bigSum), each failed one says why, and none keeps a
// staging container or a dangling image. It returns the workspaces it
// made.
func (r *snapshotRig) checkSnapshots(ctx context.Context, api *client.Client, want string) []string {
	r.t.Helper()
	snaps, err := api.ListSnapshots(ctx, client.SnapshotListOptions{})
	if err != nil {
		r.t.Fatalf("list snapshots: %v", err)
	}
	var made []string
	for _, snap := range snaps {
		r.t.Logf("listed: snapshot %s %s (%s), %d bytes, implicit %v", snap.ID, snap.Phase, snap.Reason, snap.Bytes, snap.Implicit)
		switch snap.Phase {
		case wire.SnapshotReady:
			ws, err := api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{SnapshotID: snap.ID})
			if err != nil {
				r.t.Fatalf("create from snapshot %s: %v", snap.ID, err)
			}
			r.track(ws.ID)
			made = append(made, ws.ID)
			waitRunning(r.t, api, ws.ID, 2*time.Minute)
			if got := shOut(r.t, ctx, api, ws.ID, bigSum); got != want {
				r.t.Errorf("a workspace from ready snapshot %s reads %q, want %q", snap.ID, got, want)
			}
		case wire.SnapshotFailed:
			if snap.Reason == "" {
				r.t.Errorf("snapshot %s failed with no reason", snap.ID)
			}
			if imgs := r.images(ctx, snap.ID); len(imgs) > 0 {
				r.t.Errorf("failed snapshot %s keeps %v on the engine", snap.ID, imgs)
			}
		default:
			r.t.Errorf("snapshot %s is %s after things settled, want ready or failed", snap.ID, snap.Phase)
		}
		if left := r.stagingLeft(ctx, snap.ID); len(left) > 0 {
			r.t.Errorf("snapshot %s (%s) left %v on the engine", snap.ID, snap.Phase, left)
		}
	}
	return made
}

// TestCrashDuringSnapshot kills `primer serve` while a workspace with 100
// MiB of files is being captured (its staging container exists and the
// row is creating), and starts it again: the snapshot ends ready, and a
// workspace made from it has the files, or failed with a reason; no
// staging container or dangling image of it is left; nothing of the run
// is left that no workspace owns.
func TestCrashDuringSnapshot(t *testing.T) {
	t.Parallel() // the crash tests run together, see crashPolicy
	e := containertest.Known()[0]
	containertest.Require(t, e)
	r := newSnapshotRig(t, e)
	s := startServe(t)
	ctx := ctxT(t, 8*time.Minute)
	r.template(s.api, "big", nil)
	id := r.create(ctx, s.api, "big")
	waitRunning(t, s.api, id, time.Minute)
	shOut(t, ctx, s.api, id, bigFiles)
	want := shOut(t, ctx, s.api, id, bigSum)

	snap, err := s.api.CreateSnapshot(ctx, id, wire.CreateSnapshotRequest{})
	if err != nil {
		t.Fatalf("create snapshot: %v", err)
	}
	r.trackSnapshot(snap.ID)
	// The staging container copies the workspace's files, then is
	// committed as the snapshot: the capture is under way while it exists.
	eventually(t, time.Minute, "the staging container of "+snap.ID, func() bool {
		_, err := r.eng.Client().ContainerInspect(ctx, "primer-snapshot-"+snap.ID)
		return err == nil
	})
	at, err := s.api.GetSnapshot(ctx, snap.ID)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	s.kill()
	t.Logf("killed with snapshot %s %s", snap.ID, at.Phase)
	if at.Phase != wire.SnapshotCreating {
		t.Logf("the capture completed before the kill: the restart finds it done")
	}
	s.restart()

	got := settledSnapshot(t, s.api, snap.ID, crashConverge+2*time.Minute)
	if got == nil {
		t.Fatalf("snapshot %s gone after the restart; nobody deleted it", snap.ID)
	}
	t.Logf("snapshot %s %s (%s) %s after the kill", got.ID, got.Phase, got.Reason, time.Since(killed).Round(time.Millisecond))
	made := r.checkSnapshots(ctx, s.api, want)
	if got.Phase == wire.SnapshotReady && len(made) != 1 {
		t.Errorf("made %d workspaces from the ready snapshots, want 1", len(made))
	}
	// The source workspace is untouched by the cut-off capture.
	waitRunning(t, s.api, id, time.Minute)
	if out := shOut(t, ctx, s.api, id, bigSum); out != want {
		t.Errorf("the snapshotted workspace reads %q after the crash, want %q", out, want)
	}
	r.checkNoOrphans(ctx, s.api)

	// An explicit snapshot is never removed for want of workspaces: the
	// one made from it goes, and it stays, until it is deleted.
	for _, w := range append(made, id) {
		if _, err := s.api.DeleteWorkspace(ctx, w); err != nil {
			t.Fatalf("delete %s: %v", w, err)
		}
	}
	for _, w := range append(made, id) {
		if err := s.api.WaitGone(ctx, w, nil); err != nil {
			t.Fatalf("wait gone %s: %v", w, err)
		}
	}
	if _, err := s.api.DeleteSnapshot(ctx, snap.ID); err != nil {
		t.Fatalf("delete snapshot: %v", err)
	}
	eventually(t, time.Minute, "snapshot "+snap.ID+" gone with its images", func() bool {
		_, err := s.api.GetSnapshot(ctx, snap.ID)
		return errs.Is(err, errs.NotFound) && len(r.images(ctx, snap.ID)) == 0
	})
}

// TestCrashDuringFork forks a workspace with 100 MiB of files 3 ways,
// kills `primer serve` as soon as the fork is accepted (the children
// pending, the implicit snapshot creating) and starts it again: every
// child ends running with the parent's files, or gone or failed with a
// reason, none stays pending; the implicit snapshot ends ready or failed;
// no staging container or dangling image is left. Once the children are
// deleted, the implicit snapshot goes with them (and its image), while an
// explicit snapshot of the same workspace stays.
func TestCrashDuringFork(t *testing.T) {
	t.Parallel() // the crash tests run together, see crashPolicy
	e := containertest.Known()[0]
	containertest.Require(t, e)
	r := newSnapshotRig(t, e)
	s := startServe(t)
	ctx := ctxT(t, 10*time.Minute)
	r.template(s.api, "big", nil)
	parent := r.create(ctx, s.api, "big")
	waitRunning(t, s.api, parent, time.Minute)
	shOut(t, ctx, s.api, parent, bigFiles)
	want := shOut(t, ctx, s.api, parent, bigSum)
	explicit, err := s.api.CreateSnapshot(ctx, parent, wire.CreateSnapshotRequest{})
	if err != nil {
		t.Fatalf("create snapshot: %v", err)
	}
	r.trackSnapshot(explicit.ID)
	if _, err := s.api.WaitSnapshot(ctx, explicit.ID); err != nil {
		t.Fatalf("wait explicit snapshot: %v", err)
	}

	const n = 3
	forked, err := s.api.ForkWorkspace(ctx, parent, wire.ForkRequest{Count: n})
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	implicit := forked.Snapshot.ID
	r.trackSnapshot(implicit)
	var kids []string
	for _, w := range forked.Workspaces {
		r.track(w.ID)
		kids = append(kids, w.ID)
	}
	killed := time.Now()
	s.kill()
	t.Logf("killed with snapshot %s %s and %d children", implicit, forked.Snapshot.Phase, len(kids))
	if len(kids) != n || !forked.Snapshot.Implicit {
		t.Fatalf("forked = %+v, want %d children of an implicit snapshot", forked, n)
	}
	s.restart()

	snap := settledSnapshot(t, s.api, implicit, crashConverge+2*time.Minute)
	if snap == nil {
		t.Fatalf("implicit snapshot %s gone after the restart, its children still there", implicit)
	}
	t.Logf("implicit snapshot %s %s (%s) %s after the kill", snap.ID, snap.Phase, snap.Reason, time.Since(killed).Round(time.Millisecond))
	running := 0
	for _, id := range kids {
		ws := settledWorkspace(t, s.api, id, crashConverge+2*time.Minute, s.pendingActivities)
		switch {
		case ws == nil:
			t.Logf("child %s gone", id)
		case ws.Phase == wire.PhaseFailed:
			if ws.Reason == "" {
				t.Errorf("child %s failed with no reason", id)
			}
		default:
			running++
			if got := shOut(t, ctx, s.api, id, bigSum); got != want {
				t.Errorf("child %s reads %q, want the parent's %q", id, got, want)
			}
		}
	}
	t.Logf("%d of %d children running %s after the kill", running, n, time.Since(killed).Round(time.Millisecond))
	if snap.Phase == wire.SnapshotReady && running != n {
		t.Errorf("%d of %d children running from ready snapshot %s, want all", running, n, snap.ID)
	}
	made := r.checkSnapshots(ctx, s.api, want)
	r.checkNoOrphans(ctx, s.api)

	// The implicit snapshot goes with its last child; the explicit one,
	// which nothing uses either, stays.
	gone := append(made, kids...)
	for _, id := range gone {
		if _, err := s.api.DeleteWorkspace(ctx, id); err != nil && !errs.Is(err, errs.NotFound) {
			t.Fatalf("delete %s: %v", id, err)
		}
	}
	for _, id := range gone {
		if err := s.api.WaitGone(ctx, id, nil); err != nil {
			t.Fatalf("wait gone %s: %v", id, err)
		}
	}
	eventually(t, time.Minute, "implicit snapshot "+implicit+" gone with its images after its children", func() bool {
		_, err := s.api.GetSnapshot(ctx, implicit)
		return errs.Is(err, errs.NotFound) && len(r.images(ctx, implicit)) == 0
	})
	if got, err := s.api.GetSnapshot(ctx, explicit.ID); err != nil || got.Phase != wire.SnapshotReady {
		t.Errorf("explicit snapshot after the implicit one went: %+v, %v; want it kept, ready", got, err)
	}
	if imgs := r.images(ctx, explicit.ID); !strings.Contains(strings.Join(imgs, " "), container.SnapshotImage(explicit.ID)) {
		t.Errorf("explicit snapshot's images %v, want its image kept", imgs)
	}
}
