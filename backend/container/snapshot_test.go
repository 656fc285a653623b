package container_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/runtime/protocol"
)

// TestSnapshotImage checks what the conformance suite cannot see of a
// snapshot: its image carries none of the workspace's env values (the
// runtime token, a template secret) and no workspace label, the
// reconciler's List does not take it (or a sandbox made from it) for
// anything but the workspaces it belongs to, and a paused workspace keeps
// its tenant network through the reconciler's Tidy.
func TestSnapshotImage(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b := containertest.Backend(t, e)
		id, token := backendtest.NewID(t), backendtest.NewToken(t)
		secret := "s3cret-" + backendtest.NewToken(t)
		h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, TenantID: "t-snap", Template: busyboxTemplate(nil), Env: map[string]string{"API_KEY": secret}, Token: token})
		if err != nil {
			t.Fatalf("provision: %v", err)
		}
		t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
		snapID := backendtest.NewSnapshotID(t)
		ref, err := b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: snapID, TenantID: "t-snap", Mode: backend.SnapshotFilesystem})
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		t.Cleanup(func() { _ = b.DeleteSnapshot(context.Background(), ref) })

		img, err := b.Client().ImageInspect(ctx, ref.Ref)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range img.Config.Env {
			if strings.Contains(kv, token) || strings.Contains(kv, secret) {
				t.Errorf("snapshot image env holds a workspace secret: %q", kv)
			}
		}
		if w := img.Config.Labels[container.LabelWorkspace]; w != "" {
			t.Errorf("snapshot image is labelled as workspace %q's", w)
		}
		if img.Config.Labels[container.LabelSnapshot] != snapID || img.Config.Labels[container.LabelTenant] != "t-snap" {
			t.Errorf("snapshot image labels = %v, want snapshot %s of tenant t-snap", img.Config.Labels, snapID)
		}

		// A workspace of another tenant cannot start from it.
		other := ref
		if _, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: backendtest.NewID(t), TenantID: "t-other", Template: busyboxTemplate(nil), Token: token, Snapshot: &other}); err == nil {
			t.Error("a workspace of another tenant was provisioned from the snapshot")
		}

		child := backendtest.NewID(t)
		ch, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: child, TenantID: "t-snap", Template: busyboxTemplate(nil), Token: backendtest.NewToken(t), Snapshot: &ref})
		if err != nil {
			t.Fatalf("provision from the snapshot: %v", err)
		}
		t.Cleanup(func() { _ = b.Destroy(context.Background(), ch) })
		if _, err := b.Pause(ctx, h, backend.SnapshotFilesystem); err != nil {
			t.Fatalf("pause: %v", err)
		}
		if err := b.Destroy(ctx, ch); err != nil {
			t.Fatal(err)
		}

		listed, err := b.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range listed {
			for _, o := range l.Objects {
				if strings.Contains(o, snapID) {
					t.Errorf("List returns snapshot object %q as workspace %s's", o, l.WorkspaceID)
				}
			}
			if l.WorkspaceID == child {
				t.Errorf("List returns destroyed child %s: %+v", child, l)
			}
		}
		if objs := containertest.SnapshotObjects(t, b, snapID); len(objs) == 0 || objs[0] != "image "+ref.Ref {
			t.Errorf("snapshot objects after a child's destroy = %v, want its image kept", objs)
		}

		// Tidy with no grace: the paused workspace's tenant network stays,
		// so it resumes.
		if removed, err := b.Tidy(ctx, 0); err != nil {
			t.Fatal(err)
		} else {
			for _, r := range removed {
				if strings.Contains(r, "t-snap") {
					t.Errorf("Tidy removed %s, the network of a paused workspace", r)
				}
			}
		}
		// A paused workspace can be captured too (a snapshot of an idle
		// workspace before it is deleted).
		ref2, err := b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: backendtest.NewSnapshotID(t), TenantID: "t-snap", Mode: backend.SnapshotFilesystem})
		if err != nil {
			t.Fatalf("snapshot of a paused workspace: %v", err)
		}
		if err := b.DeleteSnapshot(ctx, ref2); err != nil {
			t.Fatal(err)
		}
		if objs := containertest.SnapshotObjects(t, b, ref2.SnapshotID); len(objs) > 0 {
			t.Errorf("after delete snapshot, left: %v", objs)
		}
		rh, err := b.Resume(ctx, h, token, nil)
		if err != nil {
			t.Fatalf("resume after tidy: %v", err)
		}
		c := backendtest.Dial(ctx, t, b, rh, token)
		if err := c.Ping(ctx); err != nil {
			t.Errorf("ping after resume: %v", err)
		}
	})
}

// TestSnapshotWorkspaceOnly: a sandbox that changed nothing outside its
// workspace is captured without a commit of its root filesystem (on
// Docker, where the overlay upper directory is read, the snapshot image's
// parent is the image the container runs, not a commit of it), and a
// sandbox made from the snapshot has the workspace as it was: names,
// modes, owners, a link, contents, and the workdir's own mode.
func TestSnapshotWorkspaceOnly(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b := containertest.Backend(t, e)
		run := func(h backend.Handle, token, script string) string {
			t.Helper()
			c := backendtest.Dial(ctx, t, b, h, token)
			defer c.Close()
			res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", script}}, nil, nil)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("exec %q: %v, %+v", script, err, res)
			}
			return string(res.Stdout)
		}
		h, token := provisionBusybox(ctx, t, b, "", nil)
		run(h, token, "mkdir -p d/e && echo hi > d/e/f && chmod 640 d/e/f && chown 1000:1001 d/e && chmod 750 d && ln -s e/f d/l && chmod 770 .")
		const fingerprint = "stat -c '%n %a %u %g %s %F' . d d/e d/e/f d/l && readlink d/l && cat d/e/f"
		want := run(h, token, fingerprint)

		ref, err := b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: backendtest.NewSnapshotID(t), Mode: backend.SnapshotFilesystem})
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		t.Cleanup(func() { _ = b.DeleteSnapshot(context.Background(), ref) })
		if e.Name == container.EngineDocker {
			img, err := b.Client().ImageInspect(ctx, ref.Ref)
			if err != nil {
				t.Fatal(err)
			}
			info, err := b.Client().ContainerInspect(ctx, container.Name(h.WorkspaceID))
			if err != nil {
				t.Fatal(err)
			}
			// Parent is deprecated in the API's types, yet it is what the
			// engine still records for an image committed or built here,
			// and the only field that names the image a commit was made on.
			//lint:ignore SA1019 see above
			if parent := img.Parent; parent != info.Image {
				t.Errorf("snapshot image's parent = %s, want the container's image %s (its unchanged root filesystem was committed)", parent, info.Image)
			}
		}

		ch, ctoken := provisionBusybox(ctx, t, b, "", &ref)
		if got := run(ch, ctoken, fingerprint); got != want {
			t.Errorf("sandbox from the snapshot has\n%s\nwant\n%s", got, want)
		}
	})
}
