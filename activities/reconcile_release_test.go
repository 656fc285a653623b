package activities

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// The reconciler removes a fork's implicit snapshot, capture and row, in
// the pass after its last child is gone; one with a child left, and a
// snapshot a user took that nothing uses, stay ready.
func TestReconcileReleasesImplicitSnapshots(t *testing.T) {
	r, sm := snapRig(t)
	ctx := context.Background()
	parent := r.workspace(t, "ws-parent", `{"kind":"memory"}`)
	if _, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: parent.ID}); err != nil {
		t.Fatal(err)
	}
	// fork stores a fork of n running children, as the API does, and
	// takes its snapshot.
	fork := func(n int) (string, []string) {
		snap := &wire.Snapshot{ID: models.NewID("snap"), WorkspaceID: parent.ID, TemplateID: parent.TemplateID,
			ProviderID: parent.ProviderID, Backend: parent.Backend, Mode: wire.SnapshotModeFilesystem, Implicit: true}
		var kids []*wire.Workspace
		var ids []string
		for range n {
			w := &wire.Workspace{ID: models.NewID("ws"), TemplateID: parent.TemplateID, ProviderID: "mem",
				Backend: memory.Type, Phase: wire.PhaseRunning, SnapshotID: snap.ID}
			kids, ids = append(kids, w), append(ids, w.ID)
		}
		if err := r.store.CreateFork(ctx, snap, kids); err != nil {
			t.Fatal(err)
		}
		if _, err := r.a.Snapshot(ctx, SnapshotInput{WorkspaceID: parent.ID, SnapshotID: snap.ID}); err != nil {
			t.Fatal(err)
		}
		return snap.ID, ids
	}
	done, doneKids := fork(2)
	kept, keptKids := fork(2)
	r.newSnapshotRow(t, "snap-user", parent)
	if _, err := r.a.Snapshot(ctx, SnapshotInput{WorkspaceID: parent.ID, SnapshotID: "snap-user"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range append(doneKids, keptKids[0]) {
		if err := r.store.DeleteWorkspace(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	out, err := r.a.Reconcile(ctx, ReconcileInput{Grace: 0})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.SnapshotsReleased, []string{done}) || !slices.Contains(out.SnapshotsRemoved, done) {
		t.Fatalf("released %v, removed %v; want %s released and removed", out.SnapshotsReleased, out.SnapshotsRemoved, done)
	}
	if _, err := r.store.GetSnapshot(ctx, done); !errs.Is(err, errs.NotFound) {
		t.Errorf("released snapshot's row: %v, want gone", err)
	}
	if _, err := os.Stat(filepath.Join(sm.dir, done)); !os.IsNotExist(err) {
		t.Errorf("released snapshot's capture still there (%v)", err)
	}
	for _, id := range []string{kept, "snap-user"} {
		if s, err := r.store.GetSnapshot(ctx, id); err != nil || s.Phase != wire.SnapshotReady {
			t.Errorf("snapshot %s = %+v, %v; want kept, ready", id, s, err)
		}
		if _, err := os.Stat(filepath.Join(sm.dir, id)); err != nil {
			t.Errorf("snapshot %s's capture: %v, want kept", id, err)
		}
	}

	// The last child of the other fork goes: its snapshot goes next pass.
	if err := r.store.DeleteWorkspace(ctx, keptKids[1]); err != nil {
		t.Fatal(err)
	}
	if out, err = r.a.Reconcile(ctx, ReconcileInput{Grace: 0}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.SnapshotsReleased, []string{kept}) {
		t.Fatalf("released %v, want %s", out.SnapshotsReleased, kept)
	}
	if _, err := r.store.GetSnapshot(ctx, kept); !errs.Is(err, errs.NotFound) {
		t.Errorf("released snapshot's row: %v, want gone", err)
	}
	if s, err := r.store.GetSnapshot(ctx, "snap-user"); err != nil || s.Phase != wire.SnapshotReady {
		t.Errorf("user's snapshot = %+v, %v; want kept, ready", s, err)
	}
}
