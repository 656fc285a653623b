package container

import (
	"context"
	"errors"
	"strings"
	"testing"

	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	dnetwork "github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// TestRestoreEngineErrors drives Restore through what a live engine does
// not produce on demand: the old port taken between the removal and the
// new container's start (an error, not another port: the handle must keep
// its URL), the engine's changes unreadable, and an unchanged container
// (nothing removed). It also checks which containers a handle accepts.
func TestRestoreEngineErrors(t *testing.T) {
	const id = "ws-0a1b2c"
	name := Name(id)
	running := func(cid string, labels map[string]string) func(string) (dcontainer.InspectResponse, error) {
		l := map[string]string{LabelWorkspace: id, LabelManaged: "true", LabelTenant: "default"}
		for k, v := range labels {
			l[k] = v
		}
		return func(string) (dcontainer.InspectResponse, error) {
			ns := &dcontainer.NetworkSettings{Networks: map[string]*dnetwork.EndpointSettings{}}
			ns.Ports = nat.PortMap{runtimePort: {{HostIP: "127.0.0.1", HostPort: "40001"}}}
			return dcontainer.InspectResponse{
				ContainerJSONBase: &dcontainer.ContainerJSONBase{ID: cid, Image: "sha256:img", State: &dcontainer.State{Running: true}},
				Config:            &dcontainer.Config{Labels: l},
				Mounts:            []dcontainer.MountPoint{{Type: mount.TypeVolume, Name: name, Destination: "/workspace"}},
				NetworkSettings:   ns,
			}, nil
		}
	}
	h := backend.Handle{Backend: Type, WorkspaceID: id, Path: name, Attrs: map[string]string{"container_id": "cid-old"}}
	req := backend.ProvisionRequest{WorkspaceID: id, Template: []byte(`{"kind":"container","image":"busybox:test"}`), Token: "tok"}
	ctx := context.Background()

	t.Run("port taken", func(t *testing.T) {
		f := &fakeEngine{
			containerInspect: running("cid-old", nil),
			containerStart: func(string) error {
				return errors.New("driver failed programming external connectivity: Bind for 127.0.0.1:40001 failed: port is already allocated")
			},
		}
		b := fakeBackend(t, f)
		remade, err := b.Restore(ctx, h, req)
		if err == nil || remade || !strings.Contains(err.Error(), "port is already allocated") {
			t.Fatalf("restore with the port taken = %v, %v; want the engine's refusal", remade, err)
		}
		if got := f.called("ContainerCreate"); len(got) != 1 {
			t.Errorf("creates = %v; want one (a pinned port is not picked again)", got)
		}
	})

	t.Run("changes unreadable", func(t *testing.T) {
		f := &fakeEngine{containerInspect: running("cid-old", nil)}
		b := fakeBackend(t, f)
		if err := b.RecordBase(ctx, h); err != nil {
			t.Fatal(err)
		}
		f.containerDiff = func(string) ([]dcontainer.FilesystemChange, error) { return nil, unreachable }
		remade, err := b.Restore(ctx, h, req)
		if remade || errs.KindOf(err) != errs.Unavailable {
			t.Fatalf("restore with the changes unreadable = %v, %v; want Unavailable", remade, err)
		}
		if got := f.called("ContainerRemove"); len(got) != 0 {
			t.Errorf("removes = %v; want none", got)
		}
	})

	t.Run("unchanged is kept", func(t *testing.T) {
		f := &fakeEngine{containerInspect: running("cid-new", map[string]string{labelHandle: "cid-old"})}
		f.containerDiff = func(string) ([]dcontainer.FilesystemChange, error) {
			// What the engine itself changes, and the workspace's files.
			return []dcontainer.FilesystemChange{{Kind: dcontainer.ChangeModify, Path: "/etc"}, {Kind: dcontainer.ChangeAdd, Path: "/workspace/x"}}, nil
		}
		b := fakeBackend(t, f)
		if err := b.RecordBase(ctx, h); err != nil {
			t.Fatal(err)
		}
		remade, err := b.Restore(ctx, h, req)
		if err != nil || remade {
			t.Fatalf("restore of an unchanged container = %v, %v; want not remade", remade, err)
		}
		if got := f.called("ContainerRemove"); len(got) != 0 {
			t.Errorf("removes = %v; want none", got)
		}
	})

	t.Run("handle accepts its remade container only", func(t *testing.T) {
		for _, tc := range []struct {
			cid    string
			labels map[string]string
			ok     bool
		}{
			{"cid-old", nil, true},
			{"cid-new", map[string]string{labelHandle: "cid-old"}, true},
			{"cid-new", nil, false},
			{"cid-new", map[string]string{labelHandle: "cid-other"}, false},
		} {
			info, _ := running(tc.cid, tc.labels)("")
			if got := sameContainer(h, info); got != tc.ok {
				t.Errorf("sameContainer(handle of cid-old, %s labelled %v) = %v, want %v", tc.cid, tc.labels, got, tc.ok)
			}
		}
	})
}
