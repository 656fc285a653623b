package models

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// TestMarkSnapshotDeletingUsedByPool: a snapshot a pool fills from is not
// marked deleting (Conflict naming the pools, the snapshot left ready)
// until no pool names it; a pool cannot be made, or updated, to fill from
// a snapshot being deleted. SQLite and PostgreSQL.
func TestMarkSnapshotDeletingUsedByPool(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			ctx := context.Background()
			must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendLocal}))
			must(t, s.CreateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p"}))
			snap := &wire.Snapshot{ID: NewID("snap"), WorkspaceID: "ws-gone", TemplateID: "t", ProviderID: "p",
				Backend: wire.BackendLocal, Mode: wire.SnapshotModeFilesystem}
			must(t, s.CreateSnapshot(ctx, snap))
			must(t, s.SetSnapshotReady(ctx, snap.ID, json.RawMessage(`{"ref":"x"}`), 1))
			must(t, s.CreatePool(ctx, &wire.Pool{ID: "warm-a", TemplateID: "t", Size: 1, SnapshotID: snap.ID}))
			must(t, s.CreatePool(ctx, &wire.Pool{ID: "warm-b", TemplateID: "t", Size: 1, SnapshotID: snap.ID}))

			refused := func(want string) {
				t.Helper()
				_, err := s.MarkSnapshotDeleting(ctx, snap.ID, "deleted by test")
				if !errs.Is(err, errs.Conflict) || err.Error() != want {
					t.Fatalf("mark deleting = %v, want Conflict %q", err, want)
				}
				if got, err := s.GetSnapshot(ctx, snap.ID); err != nil || got.Phase != wire.SnapshotReady {
					t.Fatalf("snapshot after a refused delete: %+v, %v; want ready", got, err)
				}
			}
			refused("snapshot " + snap.ID + ": pools warm-a, warm-b fill from it; delete them or change their snapshot_id first")
			must(t, s.DeletePool(ctx, "warm-a"))
			refused("snapshot " + snap.ID + ": pool warm-b fills from it; delete the pool or change its snapshot_id first")

			// A pool of another tenant (an admin may make one from any
			// snapshot) is counted, never named: its id is not for the
			// snapshot's tenant to read.
			must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p-other", TenantID: "other", Provider: wire.BackendLocal}))
			must(t, s.CreateTemplate(ctx, &wire.Template{ID: "t-other", TenantID: "other", ProviderID: "p-other"}))
			must(t, s.CreatePool(ctx, &wire.Pool{ID: "warm-secret", TenantID: "other", TemplateID: "t-other", Size: 1, SnapshotID: snap.ID}))
			refused("snapshot " + snap.ID + ": pools warm-b and 1 pool of another tenant fill from it; delete them or change their snapshot_id first")
			must(t, s.UpdatePool(ctx, &wire.Pool{ID: "warm-b", TemplateID: "t", Size: 1}))
			refused("snapshot " + snap.ID + ": 1 pool of another tenant fills from it; an admin must delete it or change its snapshot_id first")
			must(t, s.DeletePool(ctx, "warm-secret"))

			got, err := s.MarkSnapshotDeleting(ctx, snap.ID, "deleted by test")
			if err != nil || got.Phase != wire.SnapshotDeleting {
				t.Fatalf("mark deleting once no pool names it = %+v, %v", got, err)
			}
			err = s.CreatePool(ctx, &wire.Pool{ID: "warm-c", TemplateID: "t", Size: 1, SnapshotID: snap.ID})
			if !errs.Is(err, errs.Conflict) || errs.FieldOf(err) != "snapshot_id" {
				t.Fatalf("create a pool of a deleting snapshot = %v, want Conflict naming snapshot_id", err)
			}
			err = s.UpdatePool(ctx, &wire.Pool{ID: "warm-b", TemplateID: "t", Size: 1, SnapshotID: snap.ID})
			if !errs.Is(err, errs.Conflict) || errs.FieldOf(err) != "snapshot_id" {
				t.Fatalf("update a pool to a deleting snapshot = %v, want Conflict naming snapshot_id", err)
			}
			if _, err := s.MarkSnapshotDeleting(ctx, NewID("snap"), "x"); !errs.Is(err, errs.NotFound) {
				t.Fatalf("mark deleting an unknown snapshot = %v, want NotFound", err)
			}
		})
	}
}
