package container_test

import (
	"context"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/runtime/protocol"
)

// TestDeleteSnapshotInUse deletes a snapshot while a sandbox made from it
// runs: the sandbox keeps running and answering (Podman's forced image
// removal would remove it with the image), and the delete either succeeds
// or says the snapshot is in use, to be tried again; once the sandbox is
// gone the delete succeeds.
func TestDeleteSnapshotInUse(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		b := containertest.Backend(t, e)
		src, _ := provisionBusybox(ctx, t, b, "t-inuse", nil)
		ref, err := b.Snapshot(ctx, src, backend.SnapshotRequest{SnapshotID: backendtest.NewSnapshotID(t), TenantID: "t-inuse", Mode: backend.SnapshotFilesystem})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.DeleteSnapshot(context.Background(), ref) })
		child, token := provisionBusybox(ctx, t, b, "t-inuse", &ref)

		derr := b.DeleteSnapshot(ctx, ref)
		t.Logf("delete while in use: %v", derr)
		c := backendtest.Dial(ctx, t, b, child, token)
		res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"echo", "alive"}}, nil, nil)
		if err != nil || string(res.Stdout) != "alive\n" {
			t.Fatalf("the sandbox from the snapshot after the snapshot's delete: %+v, %v; want it still answering", res, err)
		}
		c.Close()

		if err := b.Destroy(ctx, child); err != nil {
			t.Fatal(err)
		}
		if err := b.DeleteSnapshot(ctx, ref); err != nil {
			t.Fatalf("delete once no sandbox uses it: %v", err)
		}
		imgs, err := b.Client().ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", container.LabelSnapshot+"="+ref.SnapshotID))})
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range imgs {
			t.Errorf("image %s %v of snapshot %s is left after its delete", img.ID, img.RepoTags, ref.SnapshotID)
		}
	})
}
