package container_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/models"
)

// TestListSnapshots: the backend lists the snapshots its installation
// took (their images), never a workspace made from one, nor another
// installation's snapshots, and a snapshot it deleted is no longer
// listed; a backend without an installation lists nothing.
func TestListSnapshots(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b := containertest.BackendOf(t, e, models.NewID("pri"))
		other := containertest.BackendOf(t, e, models.NewID("pri"))
		id := backendtest.NewID(t)
		h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, TenantID: "t-list", Template: busyboxTemplate(nil), Token: backendtest.NewToken(t)})
		if err != nil {
			t.Fatalf("provision: %v", err)
		}
		t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
		snapID := backendtest.NewSnapshotID(t)
		ref, err := b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: snapID, TenantID: "t-list", Mode: backend.SnapshotFilesystem})
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		t.Cleanup(func() { _ = b.DeleteSnapshot(context.Background(), ref) })
		child := backendtest.NewID(t)
		ch, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: child, TenantID: "t-list", Template: busyboxTemplate(nil), Token: backendtest.NewToken(t), Snapshot: &ref})
		if err != nil {
			t.Fatalf("provision from the snapshot: %v", err)
		}
		t.Cleanup(func() { _ = b.Destroy(context.Background(), ch) })

		ids := func(b interface {
			ListSnapshots(context.Context) ([]backend.ListedSnapshot, error)
		}) (out []string, objs []string) {
			t.Helper()
			listed, err := b.ListSnapshots(ctx)
			if err != nil {
				t.Fatalf("list snapshots: %v", err)
			}
			for _, l := range listed {
				out = append(out, l.Ref.SnapshotID)
				if l.Ref.SnapshotID == snapID {
					objs = l.Objects
					if time.Since(l.Modified) > time.Hour {
						t.Errorf("snapshot %s listed as modified %s, want about now", snapID, l.Modified)
					}
				}
			}
			return out, objs
		}
		got, objs := ids(b)
		if !slices.Equal(got, []string{snapID}) {
			t.Fatalf("listed %v, want only %s (not the workspace made from it)", got, snapID)
		}
		if !strings.Contains(strings.Join(objs, " "), ref.Ref) {
			t.Errorf("snapshot %s objects %v, want its image %s", snapID, objs, ref.Ref)
		}
		if got, _ := ids(other); len(got) != 0 {
			t.Errorf("another installation lists %v, want nothing of this one", got)
		}
		if got, _ := ids(containertest.Backend(t, e)); len(got) != 0 {
			t.Errorf("a backend with no installation lists %v, want nothing", got)
		}
		// A snapshot a sandbox runs from stays on Podman until it is gone
		// (TestDeleteSnapshotInUse).
		if err := b.Destroy(ctx, ch); err != nil {
			t.Fatal(err)
		}
		if err := b.DeleteSnapshot(ctx, ref); err != nil {
			t.Fatal(err)
		}
		if got, _ := ids(b); len(got) != 0 {
			t.Errorf("after its delete, listed %v, want nothing", got)
		}
	})
}
