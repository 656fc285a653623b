package container_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// TestLayerSandbox checks what the conformance suite cannot see of a
// sandbox made from a snapshot: it has no workspace volume (its files are
// in its container's layer, nothing is copied per child), and everything
// that assumed the volume keeps its files: a snapshot of it, pause and
// resume, and Teardown followed by a Provision with a new token (stale
// recovery's replacement), after which Destroy leaves nothing.
func TestLayerSandbox(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		b := containertest.Backend(t, e)
		tmpl := busyboxTemplate(nil)
		provision := func(id, token string, ref *backend.SnapshotRef) (backend.Handle, *client.Client) {
			t.Helper()
			h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, TenantID: "t-layer", Template: tmpl, Token: token, Snapshot: ref})
			if err != nil {
				t.Fatalf("provision %s: %v", id, err)
			}
			t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
			return h, backendtest.Dial(ctx, t, b, h, token)
		}
		sh := func(c *client.Client, script string) string {
			t.Helper()
			res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", script}}, nil, nil)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("exec %q: %+v, %v", script, res, err)
			}
			return string(res.Stdout)
		}
		snapshot := func(h backend.Handle) backend.SnapshotRef {
			t.Helper()
			ref, err := b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: backendtest.NewSnapshotID(t), TenantID: "t-layer", Mode: backend.SnapshotFilesystem})
			if err != nil {
				t.Fatalf("snapshot of %s: %v", h.WorkspaceID, err)
			}
			t.Cleanup(func() { _ = b.DeleteSnapshot(context.Background(), ref) })
			return ref
		}

		src, sc := provision(backendtest.NewID(t), backendtest.NewToken(t), nil)
		sh(sc, "printf src > /workspace/src; chown 1234:2345 /workspace/src")
		ref := snapshot(src)

		id := backendtest.NewID(t)
		h, c := provision(id, backendtest.NewToken(t), &ref)
		if objs := containertest.Objects(t, b, id); slices.Contains(objs, "volume "+container.Name(id)) {
			t.Errorf("a sandbox from a snapshot has a workspace volume: %v", objs)
		}
		const mine = "printf mine > /workspace/mine; printf mine > /tmp/mine"
		const check = "cat /workspace/src /workspace/mine /tmp/mine; stat -c ' %u:%g' /workspace/src"
		const want = "srcminemine 1234:2345\n"
		sh(c, mine)

		// A snapshot of it holds its own writes.
		ref2 := snapshot(h)
		_, gc := provision(backendtest.NewID(t), backendtest.NewToken(t), &ref2)
		if got := sh(gc, check); got != want {
			t.Errorf("a sandbox from a snapshot of a sandbox from a snapshot has %q, want %q", got, want)
		}

		// Pause and resume keep its files.
		token := backendtest.NewToken(t)
		h, c = provision(backendtest.NewID(t), token, &ref2)
		sh(c, "printf paused > /workspace/paused")
		c.Close()
		ph, err := b.Pause(ctx, h, backend.SnapshotFilesystem)
		if err != nil {
			t.Fatal(err)
		}
		if h, err = b.Resume(ctx, ph, token, nil); err != nil {
			t.Fatal(err)
		}
		if got := sh(backendtest.Dial(ctx, t, b, h, token), "cat /workspace/paused"); got != "paused" {
			t.Errorf("after resume, /workspace/paused = %q", got)
		}

		// Teardown keeps its files, and a Provision with a new token finds
		// them, its whole filesystem included.
		if err := b.Teardown(ctx, backend.Handle{Backend: container.Type, WorkspaceID: id}); err != nil {
			t.Fatalf("teardown: %v", err)
		}
		listed, err := b.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(listed, func(l backend.Listed) bool { return l.WorkspaceID == id }) {
			t.Errorf("List does not return torn-down sandbox %s", id)
		}
		h, c = provision(id, backendtest.NewToken(t), &ref)
		if got := sh(c, check); got != want {
			t.Errorf("after teardown and provision, the sandbox has %q, want %q", got, want)
		}
		if objs := containertest.Objects(t, b, id); !slices.Contains(objs, "volume "+container.Name(id)) {
			t.Errorf("the replacement has no workspace volume: %v", objs)
		}
		// Torn down again, then destroyed: nothing is left.
		if err := b.Teardown(ctx, h); err != nil {
			t.Fatalf("second teardown: %v", err)
		}
		if err := b.Destroy(ctx, h); err != nil {
			t.Fatal(err)
		}
		if objs := containertest.Objects(t, b, id); len(objs) > 0 {
			t.Errorf("after destroy, left: %v", objs)
		}
	})
}
