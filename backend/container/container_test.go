package container_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	dnetwork "github.com/docker/docker/api/types/network"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	rtclient "github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

func busyboxTemplate(extra map[string]any) json.RawMessage {
	doc := map[string]any{"kind": "container", "image": containertest.BusyboxImage, "memory_bytes": 256 << 20, "pids_limit": 256}
	for k, v := range extra {
		doc[k] = v
	}
	raw, _ := json.Marshal(doc)
	return raw
}

// provisionBusybox provisions a busybox sandbox for tenant (from ref when
// it is set), destroyed at cleanup (Destroy of a sandbox already gone is
// fine), and returns its handle and runtime token.
func provisionBusybox(ctx context.Context, t *testing.T, b *container.Backend, tenant string, ref *backend.SnapshotRef) (backend.Handle, string) {
	t.Helper()
	id, token := backendtest.NewID(t), backendtest.NewToken(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, TenantID: tenant, Template: busyboxTemplate(nil), Token: token, Snapshot: ref})
	if err != nil {
		t.Fatalf("provision %s: %v", id, err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
	return h, token
}

// TestConformance runs the backend suite on each engine.
func TestConformance(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		backendtest.Run(t, conformance(e, busyboxTemplate(nil)))
	})
}

// TestConformanceLayer runs the backend suite on each engine with
// workspaces whose files live in the container's layer (storage: layer): a
// snapshot is one commit, a reset always makes the container again, and
// Teardown keeps the files as an image.
func TestConformanceLayer(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		backendtest.Run(t, conformance(e, busyboxTemplate(map[string]any{"storage": container.StorageLayer})))
	})
}

// conformance is the suite's harness for engine e and template tmpl.
func conformance(e containertest.Engine, tmpl json.RawMessage) backendtest.Harness {
	return backendtest.Harness{
		New: func(t *testing.T) backend.Backend { return containertest.Backend(t, e) },
		// The sandbox lives on the engine: a new backend on the same
		// engine is what a restarted platform builds.
		Restart: func(t *testing.T, old backend.Backend) backend.Backend {
			_ = old.(backend.Closer).Close()
			return containertest.Backend(t, e)
		},
		Template: tmpl,
		Gone: func(t *testing.T, h backend.Handle) bool {
			objs := containertest.Objects(t, containertest.Backend(t, e), h.WorkspaceID)
			if len(objs) > 0 {
				t.Logf("left of %s: %v", h.WorkspaceID, objs)
			}
			return len(objs) == 0
		},
		Timeout: 2 * time.Minute,
		// A snapshot is a commit of the whole container plus its
		// workspace volume.
		WholeSandbox: true,
		// Paused is stopped: no process, no CPU.
		Stopped: func(t *testing.T, h backend.Handle) bool {
			info, err := containertest.Backend(t, e).Client().ContainerInspect(context.Background(), container.Name(h.WorkspaceID))
			if err != nil {
				t.Fatalf("inspect %s: %v", h.WorkspaceID, err)
			}
			return info.State != nil && !info.State.Running && info.State.Pid == 0
		},
		SnapshotGone: func(t *testing.T, ref backend.SnapshotRef) bool {
			return len(containertest.SnapshotObjects(t, containertest.Backend(t, e), ref.SnapshotID)) == 0
		},
	}
}

// TestNetworkReachability runs a workspace on a user-defined network with
// reachability kind network: the platform dials the container's address on
// it, and no port is published.
func TestNetworkReachability(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		base := containertest.Backend(t, e)
		netName := "primer-test-" + backendtest.NewID(t)
		if _, err := base.Client().NetworkCreate(ctx, netName, dnetwork.CreateOptions{}); err != nil {
			t.Fatalf("create network: %v", err)
		}
		t.Cleanup(func() { _ = base.Client().NetworkRemove(context.Background(), netName) })

		raw, _ := json.Marshal(map[string]any{
			"runtime":      e.Name,
			"connection":   map[string]any{"kind": "socket", "socket_path": e.Socket},
			"reachability": map[string]any{"kind": "network", "network": netName},
		})
		cfg, err := container.ParseProviderConfig(raw)
		if err != nil {
			t.Fatal(err)
		}
		b, err := container.New(cfg, container.Options{Runtime: containertest.RuntimeBinary(t)})
		if err != nil {
			t.Fatal(err)
		}
		provision := func(egress string) (string, *rtclient.Client) {
			t.Helper()
			id, token := backendtest.NewID(t), backendtest.NewToken(t)
			h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: busyboxTemplate(map[string]any{"network": map[string]any{"egress": egress}}), Token: token})
			if err != nil {
				t.Fatalf("provision: %v", err)
			}
			t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
			if strings.HasPrefix(h.RuntimeURL, "ws://127.0.0.1") {
				t.Errorf("runtime URL %s: want the container's address on %s", h.RuntimeURL, netName)
			}
			return id, backendtest.Dial(ctx, t, b, h, token)
		}
		// lookup resolves a container's name with the workspace's resolver:
		// the engine's DNS on a user-defined network (127.0.0.11 inside the
		// container on Docker, the network's gateway on Podman).
		lookup := func(c *rtclient.Client, name string) string {
			t.Helper()
			res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "nslookup -timeout=2 " + name + " >/dev/null 2>&1 && echo resolved || echo no-dns"}}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(string(res.Stdout))
		}
		allowID, allowed := provision("allow")
		id, denied := provision("deny_all")
		// The control: with egress allowed the engine's DNS answers for a
		// container on the network. Where it does, deny_all must not reach it.
		if got := lookup(allowed, container.Name(allowID)); got != "resolved" {
			t.Logf("%s: this network has no engine DNS (%s from an allow workspace); the DNS check has nothing to deny", e.Name, got)
		} else if got := lookup(denied, container.Name(allowID)); got != "no-dns" {
			t.Errorf("deny_all workspace looked up %s through the engine's DNS: %s", container.Name(allowID), got)
		}
		info, err := b.Client().ContainerInspect(ctx, container.Name(id))
		if err != nil {
			t.Fatal(err)
		}
		for p, bs := range info.NetworkSettings.Ports {
			for _, pb := range bs {
				if pb.HostPort != "" {
					t.Errorf("network reachability published %s on %s:%s, want nothing published", p, pb.HostIP, pb.HostPort)
				}
			}
		}
	})
}

// TestRuntimeImage checks the derived runtime image: made once per image,
// reused by later workspaces, and a newer platform's build removes the one
// of an older version.
func TestRuntimeImage(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b := containertest.Backend(t, e)
		cli := b.Client()

		// An image of the test's own, so no other test shares its runtime
		// images.
		label := backendtest.NewID(t)
		base, err := cli.ContainerCreate(ctx, &dcontainer.Config{Image: containertest.BusyboxImage, Cmd: []string{"true"}}, nil, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		ref := "primer-test/runtime-image:" + label
		_, err = cli.ContainerCommit(ctx, base.ID, dcontainer.CommitOptions{Reference: ref, Changes: []string{"LABEL primer-test=" + label}, Config: &dcontainer.Config{}})
		_ = cli.ContainerRemove(ctx, base.ID, dcontainer.RemoveOptions{Force: true})
		if err != nil {
			t.Fatalf("commit test image: %v", err)
		}
		img, err := cli.ImageInspect(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		repo := "primer-runtime/" + strings.TrimPrefix(img.ID, "sha256:")[:12]
		t.Cleanup(func() {
			imgs, _ := cli.ImageList(context.Background(), image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", repo))})
			for _, i := range imgs {
				_, _ = cli.ImageRemove(context.Background(), i.ID, image.RemoveOptions{Force: true})
			}
			_, _ = cli.ImageRemove(context.Background(), ref, image.RemoveOptions{Force: true})
		})
		tags := func() []string {
			imgs, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", repo))})
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, i := range imgs {
				out = append(out, i.RepoTags...)
			}
			return out
		}
		provision := func() {
			t.Helper()
			id := backendtest.NewID(t)
			h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: json.RawMessage(`{"kind":"container","image":"` + ref + `"}`), Token: backendtest.NewToken(t)})
			if err != nil {
				t.Fatalf("provision: %v", err)
			}
			if err := b.Destroy(ctx, h); err != nil {
				t.Fatal(err)
			}
		}

		provision()
		first := tags()
		if len(first) != 1 {
			t.Fatalf("runtime images after the first workspace = %v, want one", first)
		}
		provision()
		if again := tags(); len(again) != 1 || again[0] != first[0] {
			t.Fatalf("runtime images after the second workspace = %v, want the same %v", again, first)
		}

		// Pretend the current one is an older platform's: retag it and drop
		// the current tag; the next workspace builds anew and prunes it.
		old := repo + ":000000000000"
		if err := cli.ImageTag(ctx, first[0], old); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.ImageRemove(ctx, first[0], image.RemoveOptions{}); err != nil {
			t.Fatal(err)
		}
		provision()
		for _, tag := range tags() {
			if strings.HasSuffix(tag, old) {
				t.Errorf("old runtime image %s left after a newer build: %v", old, tags())
			}
		}
	})
}
