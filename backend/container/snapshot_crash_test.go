package container_test

import (
	"context"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
)

// TestSnapshotAfterKilledTry: a capture whose platform was killed with
// SIGKILL leaves its staging image (the first commit) and its staging
// container on the engine; the retry of the same snapshot removes them
// and leaves no dangling image, also when the killed try had got as far
// as its tagged image. Found by e2e TestCrashDuringSnapshot: Docker lists
// an untagged image with the tag "<none>:<none>", which the cleanup took
// for a tagged one.
func TestSnapshotAfterKilledTry(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b := containertest.Backend(t, e)
		cli := b.Client()
		h, _ := provisionBusybox(ctx, t, b, "t-kill", nil)
		id := h.WorkspaceID
		snapID := backendtest.NewSnapshotID(t)
		ref := backend.SnapshotRef{Backend: container.Type, SnapshotID: snapID, Mode: backend.SnapshotFilesystem}
		t.Cleanup(func() { _ = b.DeleteSnapshot(context.Background(), ref) })
		label := container.LabelSnapshot + "=" + snapID
		staging := "primer-snapshot-" + snapID

		// What the killed try left: its first commit and the staging
		// container made of it.
		stage, err := cli.ContainerCommit(ctx, container.Name(id), dcontainer.CommitOptions{
			Changes: []string{"LABEL " + label},
			Config:  &dcontainer.Config{Entrypoint: []string{"true"}},
		})
		if err != nil {
			t.Fatalf("commit the killed try's staging image: %v", err)
		}
		leftover := func() {
			t.Helper()
			if _, err := cli.ContainerCreate(ctx, &dcontainer.Config{Image: stage.ID, Entrypoint: []string{"true"}, Labels: map[string]string{container.LabelSnapshot: snapID}},
				nil, nil, nil, staging); err != nil {
				t.Fatalf("create the killed try's staging container: %v", err)
			}
		}
		leftover()

		ref, err = b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: snapID, TenantID: "t-kill", Mode: backend.SnapshotFilesystem})
		if err != nil {
			t.Fatalf("snapshot after a killed try: %v", err)
		}
		all, err := cli.ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range all {
			if strings.TrimPrefix(img.ID, "sha256:") == strings.TrimPrefix(stage.ID, "sha256:") {
				t.Errorf("the killed try's staging image %s is still there", stage.ID)
			}
		}
		checkNoStaging := func(when string) {
			t.Helper()
			if _, err := cli.ContainerInspect(ctx, staging); !cerrdefs.IsNotFound(err) {
				t.Errorf("%s: staging container %s: %v, want removed", when, staging, err)
			}
			imgs, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label), filters.Arg("dangling", "true"))})
			if err != nil {
				t.Fatal(err)
			}
			for _, img := range imgs {
				t.Errorf("%s: dangling image %s %v of the snapshot", when, img.ID, img.RepoTags)
			}
		}
		checkNoStaging("after the retry")

		// A try killed after its last commit: the tagged image is done,
		// and its staging container is still there.
		stage, err = cli.ContainerCommit(ctx, container.Name(id), dcontainer.CommitOptions{
			Changes: []string{"LABEL " + label},
			Config:  &dcontainer.Config{Entrypoint: []string{"true"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		leftover()
		again, err := b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: snapID, TenantID: "t-kill", Mode: backend.SnapshotFilesystem})
		if err != nil || again.Ref != ref.Ref {
			t.Fatalf("snapshot again = %+v, %v; want the image taken", again, err)
		}
		checkNoStaging("after a retry that found the image")
		if _, err := cli.ImageInspect(ctx, ref.Ref); err != nil {
			t.Errorf("snapshot image after the retry: %v", err)
		}
	})
}
