package models

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// TestReleaseImplicitSnapshots: a fork's implicit snapshot is marked
// deleting once it is done and no workspace or pool uses it; one still
// used, still creating, taken by a user, or made after the cut-off is
// left alone. SQLite and PostgreSQL.
func TestReleaseImplicitSnapshots(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			ctx := context.Background()
			must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendLocal}))
			must(t, s.CreateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p"}))
			ref := json.RawMessage(`{"ref":"x"}`)

			// fork makes a fork of n children whose snapshot ends in phase
			// (creating stays creating).
			fork := func(n int, phase string) (*wire.Snapshot, []*wire.Workspace) {
				snap, ws := forkRows(wire.DefaultTenantID, n, 0)
				must(t, s.CreateFork(ctx, snap, ws))
				switch phase {
				case wire.SnapshotReady:
					must(t, s.SetSnapshotReady(ctx, snap.ID, ref, 1<<20))
				case wire.SnapshotFailed:
					must(t, s.SetSnapshotFailed(ctx, snap.ID, "cut off"))
				}
				return snap, ws
			}
			orphaned, kids := fork(2, wire.SnapshotReady)
			failed, failedKids := fork(1, wire.SnapshotFailed)
			stillUsed, usedKids := fork(2, wire.SnapshotReady)
			taking, takingKids := fork(1, wire.SnapshotCreating)
			pooled, pooledKids := fork(1, wire.SnapshotReady)
			fromUser, userKids := fork(1, wire.SnapshotReady)
			// A workspace made from an implicit snapshot uses it as a child.
			made, madeKids := fork(1, wire.SnapshotReady)
			w := newWorkspace("t", "p")
			w.SnapshotID = made.ID
			must(t, s.CreateWorkspace(ctx, w))
			must(t, s.CreatePool(ctx, &wire.Pool{ID: "warm", TemplateID: "t", SnapshotID: pooled.ID, Size: 1}))
			// A user's snapshot is never released, used or not (fromUser
			// had workspaces made from it, explicit never did).
			explicit := &wire.Snapshot{ID: NewID("snap"), WorkspaceID: NewID("ws"), TemplateID: "t", ProviderID: "p",
				Backend: wire.BackendLocal, Mode: wire.SnapshotModeFilesystem}
			must(t, s.CreateSnapshot(ctx, explicit))
			must(t, s.SetSnapshotReady(ctx, explicit.ID, ref, 1<<20))
			must(t, s.w.Model(&wire.Snapshot{}).Where("id = ?", fromUser.ID).Update("implicit", false).Error)

			for _, group := range [][]*wire.Workspace{kids, failedKids, usedKids[:1], takingKids, pooledKids, userKids, madeKids} {
				for _, w := range group {
					must(t, s.DeleteWorkspace(ctx, w.ID))
				}
			}

			// Made after the cut-off: nothing is released yet.
			got, err := s.ReleaseImplicitSnapshots(ctx, time.Now().Add(-time.Hour))
			must(t, err)
			if len(got) != 0 {
				t.Fatalf("released %v of snapshots younger than the cut-off, want none", got)
			}
			got, err = s.ReleaseImplicitSnapshots(ctx, time.Now().Add(time.Second))
			must(t, err)
			want := []string{orphaned.ID, failed.ID}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("released %v, want %v (the ready and the failed fork snapshot without children)", got, want)
			}
			for _, id := range want {
				snap, err := s.GetSnapshot(ctx, id)
				must(t, err)
				if snap.Phase != wire.SnapshotDeleting || snap.Reason != ReasonImplicitReleased {
					t.Errorf("released snapshot %s: %s (%s), want deleting with the reason", id, snap.Phase, snap.Reason)
				}
			}
			for _, id := range []string{stillUsed.ID, taking.ID, pooled.ID, fromUser.ID, made.ID, explicit.ID} {
				snap, err := s.GetSnapshot(ctx, id)
				must(t, err)
				if snap.Phase == wire.SnapshotDeleting {
					t.Errorf("snapshot %s released, want it kept", id)
				}
			}

			// The last child goes, the capture finishes, the pool goes, the
			// workspace made from it goes: each is released in turn.
			must(t, s.DeleteWorkspace(ctx, usedKids[1].ID))
			must(t, s.SetSnapshotReady(ctx, taking.ID, ref, 1))
			must(t, s.DeletePool(ctx, "warm"))
			must(t, s.DeleteWorkspace(ctx, w.ID))
			got, err = s.ReleaseImplicitSnapshots(ctx, time.Now().Add(time.Second))
			must(t, err)
			want = []string{stillUsed.ID, taking.ID, pooled.ID, made.ID}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("released %v, want %v", got, want)
			}
			got, err = s.ReleaseImplicitSnapshots(ctx, time.Now().Add(time.Second))
			must(t, err)
			if len(got) != 0 {
				t.Fatalf("a second pass released %v, want nothing new", got)
			}
			for _, id := range []string{fromUser.ID, explicit.ID} {
				if snap, err := s.GetSnapshot(ctx, id); err != nil || snap.Phase != wire.SnapshotReady {
					t.Errorf("user's snapshot %s = %+v, %v; want ready", id, snap, err)
				}
			}
		})
	}
}
