// Package containertest finds the container engines and images the container
// backend's tests run against, and builds the primer-runtime they copy into
// containers. Outside CI a test skips with a message saying how to get what
// is missing; with CI set, a missing engine or image fails the test.
package containertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"
	dockerclient "github.com/docker/docker/client"

	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/internal/testenv"
)

// Images built by `make images` (deploy/images/build.sh).
const (
	BusyboxImage = "primer/busybox:1.0"
	PythonImage  = "primer/python:1.0"
)

// Engine is one container engine to test against.
type Engine struct {
	Name   string // docker or podman
	Socket string
}

// Known are the engines the tests look for, at their usual sockets
// (overridable with PRIMER_TEST_DOCKER_SOCKET / PRIMER_TEST_PODMAN_SOCKET).
func Known() []Engine {
	return []Engine{
		{Name: container.EngineDocker, Socket: envOr("PRIMER_TEST_DOCKER_SOCKET", "/var/run/docker.sock")},
		{Name: container.EnginePodman, Socket: envOr("PRIMER_TEST_PODMAN_SOCKET", "/run/podman/podman.sock")},
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Each runs f as a subtest per known engine. An engine that does not answer
// skips its subtest (fails it in CI).
func Each(t *testing.T, f func(t *testing.T, e Engine)) {
	t.Helper()
	for _, e := range Known() {
		t.Run(e.Name, func(t *testing.T) {
			Require(t, e)
			f(t, e)
		})
	}
}

// Require skips (or, in CI, fails) t unless e answers and has the test
// images.
func Require(t testing.TB, e Engine) {
	t.Helper()
	if err := ping(e.Socket); err != nil {
		Missing(t, "%s engine not answering on %s (%v); start it with `deploy/ci/engines.sh` (as root)", e.Name, e.Socket, err)
	}
	for _, img := range []string{BusyboxImage, PythonImage} {
		if err := hasImage(e.Socket, img); err != nil {
			Missing(t, "%s engine has no image %s (%v); build the test images with `make images`", e.Name, img, err)
		}
	}
}

// Missing skips t with msg, saying how to get what is missing; with CI
// set it fails t instead: in CI nothing skips (testenv.Missing).
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	testenv.Missing(t, format, args...)
}

func unixClient(socket string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
}

func ping(socket string) error {
	resp, err := unixClient(socket).Get("http://engine/_ping")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ping: %s", resp.Status)
	}
	return nil
}

func hasImage(socket, image string) error {
	resp, err := unixClient(socket).Get("http://engine/images/" + image + "/json")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("inspect: %s", resp.Status)
	}
	return nil
}

// ProviderConfig returns a provider document for e, publishing runtime
// ports on 127.0.0.1.
func ProviderConfig(e Engine) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{
		"kind":         "container",
		"runtime":      e.Name,
		"connection":   map[string]any{"kind": "socket", "socket_path": e.Socket},
		"reachability": map[string]any{"kind": "host_port", "bind_host": "127.0.0.1"},
	})
	return raw
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// RuntimeBinaryPath builds the static primer-runtime once per test process
// and returns its path: one file in the user's cache directory, replaced
// atomically, so test processes leave nothing behind in /tmp.
func RuntimeBinaryPath(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		dir = filepath.Join(dir, "primer-test")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "primer-runtime")
		tmp := fmt.Sprintf("%s.%d", buildPath, os.Getpid())
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..", "..")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", tmp, "./cmd/primer-runtime")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build primer-runtime: %v: %s", err, out)
			return
		}
		buildErr = os.Rename(tmp, buildPath)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// RuntimeBinary returns the test process's primer-runtime for backends.
func RuntimeBinary(t testing.TB) *container.RuntimeBinary {
	t.Helper()
	runtimeOnce.Do(func() { runtimeBin = container.NewRuntimeBinary(RuntimeBinaryPath(t)) })
	return runtimeBin
}

var (
	runtimeOnce sync.Once
	runtimeBin  *container.RuntimeBinary
)

// Backend returns a container backend on e, closed at cleanup.
func Backend(t testing.TB, e Engine) *container.Backend {
	t.Helper()
	return BackendOf(t, e, "")
}

// BackendOf is Backend labelling what it makes as installation's (a
// platform's worker.Server.Installation), so that platform's reconciler
// sees it as its own.
func BackendOf(t testing.TB, e Engine, installation string) *container.Backend {
	t.Helper()
	cfg, err := container.ParseProviderConfig(ProviderConfig(e))
	if err != nil {
		t.Fatal(err)
	}
	b, err := container.New(cfg, container.Options{Runtime: RuntimeBinary(t), Installation: installation})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// Objects returns what the engine still holds of workspace id (containers,
// volumes, networks named after it or labelled with it).
func Objects(t testing.TB, b *container.Backend, id string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	objs, err := b.Objects(ctx, id)
	if err != nil {
		t.Fatalf("list engine objects of %s: %v", id, err)
	}
	return objs
}

// SnapshotObjects returns what the engine holds of snapshot snapID: its
// image, staging images and containers.
func SnapshotObjects(t testing.TB, b *container.Backend, snapID string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := b.Client()
	var out []string
	if _, err := cli.ImageInspect(ctx, container.SnapshotImage(snapID)); err == nil {
		out = append(out, "image "+container.SnapshotImage(snapID))
	}
	f := filters.NewArgs(filters.Arg("label", container.LabelSnapshot+"="+snapID))
	imgs, err := cli.ImageList(ctx, image.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatalf("list images of snapshot %s: %v", snapID, err)
	}
	for _, img := range imgs {
		out = append(out, "image "+img.ID)
	}
	cs, err := cli.ContainerList(ctx, dcontainer.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatalf("list containers of snapshot %s: %v", snapID, err)
	}
	for _, c := range cs {
		out = append(out, "container "+strings.Join(c.Names, ","))
	}
	return out
}

// RemoveInstallation removes, from every engine that answers, the
// containers (with their anonymous volumes) and the volumes labelled as
// installation's, and names what it removed. A test platform that stopped
// with workspaces still running leaves them so; removing them at its end
// keeps them from piling up across runs, and the names say which test
// leaked them.
func RemoveInstallation(installation string) ([]string, error) {
	if installation == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var removed []string
	var errsSeen []string
	for _, e := range Known() {
		if ping(e.Socket) != nil {
			continue
		}
		cli, err := dockerclient.NewClientWithOpts(dockerclient.WithHost("unix://"+e.Socket), dockerclient.WithAPIVersionNegotiation())
		if err != nil {
			errsSeen = append(errsSeen, e.Name+": "+err.Error())
			continue
		}
		f := filters.NewArgs(filters.Arg("label", container.LabelInstallation+"="+installation))
		cs, err := cli.ContainerList(ctx, dcontainer.ListOptions{All: true, Filters: f})
		if err != nil {
			errsSeen = append(errsSeen, e.Name+": list containers: "+err.Error())
		}
		for _, c := range cs {
			if err := cli.ContainerRemove(ctx, c.ID, dcontainer.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
				errsSeen = append(errsSeen, e.Name+": remove container: "+err.Error())
				continue
			}
			removed = append(removed, e.Name+" container "+strings.Join(c.Names, ","))
		}
		vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
		if err != nil {
			errsSeen = append(errsSeen, e.Name+": list volumes: "+err.Error())
		}
		for _, v := range vs.Volumes {
			if err := cli.VolumeRemove(ctx, v.Name, true); err != nil {
				errsSeen = append(errsSeen, e.Name+": remove volume: "+err.Error())
				continue
			}
			removed = append(removed, e.Name+" volume "+v.Name)
		}
		_ = cli.Close()
	}
	if len(errsSeen) > 0 {
		return removed, fmt.Errorf("%s", strings.Join(errsSeen, "; "))
	}
	return removed, nil
}
