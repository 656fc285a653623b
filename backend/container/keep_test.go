package container_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/errs"
)

// TestTeardownReplacesContainer checks on the engine what the suite cannot
// see: Teardown leaves the volume and nothing else, the replacement is a new
// container on that volume, and the old handle no longer finds a sandbox.
func TestTeardownReplacesContainer(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b := containertest.Backend(t, e)
		id, token := backendtest.NewID(t), backendtest.NewToken(t)
		h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: busyboxTemplate(nil), Token: token})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })

		if err := b.Teardown(ctx, h); err != nil {
			t.Fatal(err)
		}
		want := []string{"volume " + container.Name(id)}
		if got := containertest.Objects(t, b, id); !slices.Equal(got, want) {
			t.Errorf("after teardown the engine holds %v, want only %v", got, want)
		}
		if _, err := b.Endpoint(ctx, h, token); !errs.Is(err, errs.NotFound) {
			t.Errorf("endpoint after teardown = %v (kind %v), want not_found", err, errs.KindOf(err))
		}

		h2, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: busyboxTemplate(nil), Token: backendtest.NewToken(t)})
		if err != nil {
			t.Fatalf("provision after teardown: %v", err)
		}
		if h2.Attrs["container_id"] == "" || h2.Attrs["container_id"] == h.Attrs["container_id"] {
			t.Errorf("replacement container id %q, want a new one (old %q)", h2.Attrs["container_id"], h.Attrs["container_id"])
		}
		want = []string{"container " + container.Name(id), "volume " + container.Name(id)}
		if got := containertest.Objects(t, b, id); !slices.Equal(got, want) {
			t.Errorf("after the replacement the engine holds %v, want %v", got, want)
		}
		info, err := b.Client().ContainerInspect(ctx, container.Name(id))
		if err != nil {
			t.Fatal(err)
		}
		var mounted bool
		for _, m := range info.Mounts {
			mounted = mounted || m.Name == container.Name(id)
		}
		if !mounted || len(info.Mounts) != 1 {
			t.Errorf("replacement mounts %+v, want the workspace's volume only", info.Mounts)
		}
		// The old handle names the old container: it finds nothing.
		if _, err := b.Endpoint(ctx, h, token); !errs.Is(err, errs.NotFound) {
			t.Errorf("endpoint with the pre-teardown handle = %v (kind %v), want not_found", err, errs.KindOf(err))
		}
	})
}

// TestFailedReplacementKeepsVolume: when the provision after Teardown fails,
// its cleanup removes the container it made but not the volume with the
// workspace's files, which a later try finds.
func TestFailedReplacementKeepsVolume(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b := containertest.Backend(t, e)
		id, token := backendtest.NewID(t), backendtest.NewToken(t)
		h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: busyboxTemplate(nil), Token: token})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
		c := backendtest.Dial(ctx, t, b, h, token)
		if err := c.WriteFile(ctx, "precious.txt", []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if err := b.Teardown(ctx, h); err != nil {
			t.Fatal(err)
		}

		// A backend whose runtime can never be ready in time.
		cfg, err := container.ParseProviderConfig(containertest.ProviderConfig(e))
		if err != nil {
			t.Fatal(err)
		}
		impatient, err := container.New(cfg, container.Options{Runtime: containertest.RuntimeBinary(t), ReadyTimeout: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		defer impatient.Close()
		if _, err := impatient.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: busyboxTemplate(nil), Token: backendtest.NewToken(t)}); err == nil {
			t.Fatal("provision with a 1 ns ready timeout succeeded")
		}
		want := []string{"volume " + container.Name(id)}
		if got := containertest.Objects(t, b, id); !slices.Equal(got, want) {
			t.Fatalf("after a failed replacement the engine holds %v, want only %v", got, want)
		}

		token2 := backendtest.NewToken(t)
		h2, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: busyboxTemplate(nil), Token: token2})
		if err != nil {
			t.Fatal(err)
		}
		c2 := backendtest.Dial(ctx, t, b, h2, token2)
		if got, err := c2.ReadFile(ctx, "precious.txt"); err != nil || string(got) != "keep me" {
			t.Errorf("precious.txt after a failed and a good replacement = %q, %v", got, err)
		}
	})
}

// TestListAndProvisionIgnoreLookalikes: objects that look like a
// workspace's but were not made by the backend (unlabelled, labelled
// without managed, named for another workspace, an id the server does not
// mint) are never listed, and Provision refuses to mount a volume of the
// workspace's name that is not labelled as its own.
func TestListAndProvisionIgnoreLookalikes(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b := containertest.Backend(t, e)
		cli := b.Client()
		volumes := map[string]map[string]string{} // name -> labels
		unlabelled, unmanaged, misnamed, other, oddID := backendtest.NewID(t), backendtest.NewID(t), backendtest.NewID(t), backendtest.NewID(t), "test-"+backendtest.NewID(t)
		volumes[container.Name(unlabelled)] = nil
		volumes[container.Name(unmanaged)] = map[string]string{container.LabelWorkspace: unmanaged}
		volumes[container.Name(misnamed)] = map[string]string{container.LabelWorkspace: other, container.LabelManaged: "true"}
		volumes[container.Name(oddID)] = map[string]string{container.LabelWorkspace: oddID, container.LabelManaged: "true"}
		for name, labels := range volumes {
			if _, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: labels}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cli.VolumeRemove(context.Background(), name, true) })
		}
		// A container labelled for a workspace under a name of its own.
		ctr, err := cli.ContainerCreate(ctx, &dcontainer.Config{
			Image: containertest.BusyboxImage, Cmd: []string{"true"},
			Labels: map[string]string{container.LabelWorkspace: other, container.LabelManaged: "true"},
		}, nil, nil, nil, "lookalike-"+other)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cli.ContainerRemove(context.Background(), ctr.ID, dcontainer.RemoveOptions{Force: true})
		})

		listed, err := b.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range listed {
			if slices.Contains([]string{unlabelled, unmanaged, misnamed, other, oddID}, l.WorkspaceID) {
				t.Errorf("list returns a look-alike: %+v", l)
			}
		}

		// The unlabelled volume has the workspace's name: Provision must
		// neither mount it nor remove it.
		_, err = b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: unlabelled, Template: busyboxTemplate(nil), Token: backendtest.NewToken(t)})
		if !errs.Is(err, errs.Conflict) {
			t.Errorf("provision over a foreign volume = %v (kind %v), want conflict", err, errs.KindOf(err))
		}
		if _, err := cli.VolumeInspect(ctx, container.Name(unlabelled)); err != nil {
			t.Errorf("foreign volume after the refused provision: %v", err)
		}
		if _, err := cli.ContainerInspect(ctx, container.Name(unlabelled)); !cerrdefs.IsNotFound(err) {
			t.Errorf("refused provision left a container: %v", err)
		}
	})
}

// TestListGroupsObjects: a workspace's container and volume are one entry,
// created at the older of the two.
func TestListGroupsObjects(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b := containertest.Backend(t, e)
		id := backendtest.NewID(t)
		start := time.Now().Truncate(time.Second)
		h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: json.RawMessage(busyboxTemplate(nil)), Token: backendtest.NewToken(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
		listed, err := b.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(listed, func(l backend.Listed) bool { return l.WorkspaceID == id })
		if i < 0 {
			t.Fatalf("list %+v does not return %s", listed, id)
		}
		l := listed[i]
		want := []string{"container " + container.Name(id), "volume " + container.Name(id)}
		if !slices.Equal(l.Objects, want) {
			t.Errorf("objects of %s = %v, want %v", id, l.Objects, want)
		}
		if l.Created.Before(start.Add(-2*time.Second)) || l.Created.After(time.Now().Add(2*time.Second)) {
			t.Errorf("created = %v, want between %v and now", l.Created, start)
		}
	})
}

// Two installations sharing one engine each list only their own
// workspaces, so neither's reconciler removes the other's.
func TestListSeesOnlyItsInstallation(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		mine := containertest.BackendOf(t, e, "pri-mine")
		theirs := containertest.BackendOf(t, e, "pri-theirs")
		a, b := backendtest.NewID(t), backendtest.NewID(t)
		for _, c := range []struct {
			be *container.Backend
			id string
		}{{mine, a}, {theirs, b}} {
			if _, err := c.be.Provision(ctx, backend.ProvisionRequest{WorkspaceID: c.id, Template: busyboxTemplate(nil), Token: backendtest.NewToken(t)}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = c.be.Destroy(context.Background(), backend.Handle{Backend: container.Type, WorkspaceID: c.id})
			})
		}
		ids := func(be *container.Backend) []string {
			listed, err := be.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, l := range listed {
				out = append(out, l.WorkspaceID)
			}
			return out
		}
		if got := ids(mine); !slices.Contains(got, a) || slices.Contains(got, b) {
			t.Errorf("mine lists %v, want %s and not %s", got, a, b)
		}
		if got := ids(theirs); !slices.Contains(got, b) || slices.Contains(got, a) {
			t.Errorf("theirs lists %v, want %s and not %s", got, b, a)
		}
		// A backend without an installation sees neither.
		if got := ids(containertest.Backend(t, e)); slices.Contains(got, a) || slices.Contains(got, b) {
			t.Errorf("an unlabelled backend lists %v", got)
		}
	})
}
