package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker"
)

// shOut runs script in workspace id and returns its stdout, failing the
// test unless it exits 0.
func shOut(t *testing.T, ctx context.Context, api *client.Client, id, script string) string {
	t.Helper()
	res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatalf("exec in %s %q: %v", id, script, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exec in %s %q: exit %d, stdout %q, stderr %q", id, script, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// TestSnapshotOnDocker drives issue 25 through the API on the real
// platform with Docker: a snapshot keeps a workspace's files (its
// workspace directory and the rest of its filesystem); a workspace made
// from it and a fork's children start with them and are independent of
// each other and of the parent; a pause stops the container and a resume
// brings it back with its files; a deleted snapshot goes away.
func TestSnapshotOnDocker(t *testing.T) {
	e := containertest.Known()[0] // docker
	containertest.Require(t, e)
	// The reconciler removes deleted snapshots: often, so the test does
	// not wait a minute for it.
	p := startPrimer(t, withContainers(t), func(c *worker.Config) { c.ReconcileInterval = 2 * time.Second })
	eng := containertest.Backend(t, e)
	containerTemplate(t, p, e, "bb", `{"kind":"container","image":"`+containertest.BusyboxImage+`"}`)
	ctx := ctxT(t, 10*time.Minute)
	api := p.api

	parent := createRunning(t, p, "bb")
	shOut(t, ctx, api, parent.ID, "echo parent-a > /workspace/a && echo parent-mark > /tmp/mark")
	const both = "cat /workspace/a /tmp/mark"

	snap, err := api.CreateSnapshot(ctx, parent.ID, wire.CreateSnapshotRequest{})
	if err != nil {
		t.Fatalf("create snapshot: %v", err)
	}
	if snap.Phase != wire.SnapshotCreating || snap.Mode != wire.SnapshotModeFilesystem {
		t.Fatalf("snapshot = %+v, want creating, filesystem", snap)
	}
	if snap, err = api.WaitSnapshot(ctx, snap.ID); err != nil {
		t.Fatalf("wait snapshot: %v (%+v)", err, snap)
	}

	// A workspace from the snapshot (its template left to the snapshot).
	from, err := api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{SnapshotID: snap.ID})
	if err != nil {
		t.Fatalf("create from snapshot: %v", err)
	}
	if from, err = api.WaitWorkspace(ctx, from.ID, wire.PhaseRunning, nil); err != nil {
		t.Fatalf("wait workspace from snapshot: %v", err)
	}
	if got := shOut(t, ctx, api, from.ID, both); got != "parent-a\nparent-mark\n" {
		t.Fatalf("workspace from snapshot reads %q", got)
	}
	if from.SnapshotID != snap.ID {
		t.Errorf("workspace from snapshot has snapshot_id %q, want %s", from.SnapshotID, snap.ID)
	}

	// Fork 3: each child sees the parent's files; a write in one is its own.
	forked, err := api.ForkWorkspace(ctx, parent.ID, wire.ForkRequest{Count: 3})
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	if len(forked.Workspaces) != 3 || !forked.Snapshot.Implicit {
		t.Fatalf("forked = %+v", forked)
	}
	var kids []string
	for _, w := range forked.Workspaces {
		got, err := api.WaitWorkspace(ctx, w.ID, wire.PhaseRunning, nil)
		if err != nil {
			t.Fatalf("wait child %s: %v", w.ID, err)
		}
		if out := shOut(t, ctx, api, got.ID, both); out != "parent-a\nparent-mark\n" {
			t.Fatalf("child %s reads %q", got.ID, out)
		}
		kids = append(kids, got.ID)
	}
	shOut(t, ctx, api, kids[0], "echo child0 > /workspace/a && echo child0 > /workspace/only0")
	for _, id := range []string{kids[1], kids[2], parent.ID} {
		if out := shOut(t, ctx, api, id, "cat /workspace/a; ls /workspace"); strings.Contains(out, "child0") || strings.Contains(out, "only0") {
			t.Fatalf("%s sees child %s's write: %q", id, kids[0], out)
		}
	}

	// Pause: the container stops, its files stay; resume brings it back.
	if _, err := api.PauseWorkspace(ctx, parent.ID, wire.PauseRequest{}); err != nil {
		t.Fatalf("pause: %v", err)
	}
	if _, err := api.WaitWorkspace(ctx, parent.ID, wire.PhasePaused, nil); err != nil {
		t.Fatalf("wait paused: %v", err)
	}
	info, err := eng.Client().ContainerInspect(ctx, container.Name(parent.ID))
	if err != nil {
		t.Fatalf("inspect the paused workspace's container: %v", err)
	}
	if info.State.Running {
		t.Fatalf("the paused workspace's container is %s, want stopped", info.State.Status)
	}
	if _, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: parent.ID, Command: []string{"true"}}); errs.KindOf(err) != errs.Precondition {
		t.Errorf("exec in a paused workspace: %v, want a precondition error", err)
	}
	if _, err := api.ResumeWorkspace(ctx, parent.ID); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if _, err := api.WaitWorkspace(ctx, parent.ID, wire.PhaseRunning, nil); err != nil {
		t.Fatalf("wait resumed: %v", err)
	}
	if got := shOut(t, ctx, api, parent.ID, "cat /workspace/a"); got != "parent-a\n" {
		t.Fatalf("resumed workspace reads %q", got)
	}

	// Delete the snapshots (the fork's implicit one too, so no capture is
	// left on the engine): deleting, then gone.
	for _, id := range []string{snap.ID, forked.Snapshot.ID} {
		del, err := api.DeleteSnapshot(ctx, id)
		if err != nil || del.Phase != wire.SnapshotDeleting {
			t.Fatalf("delete snapshot %s: %+v, %v", id, del, err)
		}
	}
	for _, id := range []string{snap.ID, forked.Snapshot.ID} {
		eventually(t, 3*time.Minute, "deleted snapshot "+id+" is gone", func() bool {
			_, err := api.GetSnapshot(ctx, id)
			return errs.Is(err, errs.NotFound)
		})
	}

	for _, id := range append(kids, parent.ID, from.ID) {
		if _, err := api.DeleteWorkspace(ctx, id); err != nil {
			t.Errorf("delete %s: %v", id, err)
		}
	}
	for _, id := range append(kids, parent.ID, from.ID) {
		if err := api.WaitGone(ctx, id, nil); err != nil {
			t.Errorf("wait gone %s: %v", id, err)
		}
	}
}
