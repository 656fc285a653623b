package container

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	dnetwork "github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	dclient "github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// fakeEngine is an engine with nothing in it: every image exists (the
// runtime image included, so no build runs), no container or volume does,
// and every create, start and remove succeeds. A test sets down to make
// every call fail, or a hook to make one fail. It records the calls.
type fakeEngine struct {
	down error // every call returns it

	imageInspect     func(ref string) (image.InspectResponse, error)
	volumeInspect    func(name string) (volume.Volume, error)
	containerCreate  func(name string) (dcontainer.CreateResponse, error)
	containerStart   func(id string) error
	containerRemove  func(name string) error
	volumeRemove     func(name string) error
	containerInspect func(name string) (dcontainer.InspectResponse, error)
	containerDiff    func(id string) ([]dcontainer.FilesystemChange, error)
	// networkCreate, when set, runs before the fake creates a network
	// (a test makes another worker's network appear there).
	networkCreate func(name string, o dnetwork.CreateOptions) error

	mu    sync.Mutex
	calls []string
	nets  map[string]dnetwork.Inspect
}

var _ engine = (*fakeEngine)(nil)

func (f *fakeEngine) record(call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	return f.down
}

// called returns the recorded calls whose name starts with prefix.
func (f *fakeEngine) called(prefix string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeEngine) ImageInspect(_ context.Context, ref string, _ ...dclient.ImageInspectOption) (image.InspectResponse, error) {
	if err := f.record("ImageInspect " + ref); err != nil {
		return image.InspectResponse{}, err
	}
	if f.imageInspect != nil {
		return f.imageInspect(ref)
	}
	return image.InspectResponse{ID: "sha256:0123456789abcdef"}, nil
}

func (f *fakeEngine) ImageList(context.Context, image.ListOptions) ([]image.Summary, error) {
	return nil, f.record("ImageList")
}

func (f *fakeEngine) ImageRemove(_ context.Context, ref string, _ image.RemoveOptions) ([]image.DeleteResponse, error) {
	return nil, f.record("ImageRemove " + ref)
}

func (f *fakeEngine) ContainerCreate(_ context.Context, _ *dcontainer.Config, _ *dcontainer.HostConfig, _ *dnetwork.NetworkingConfig, _ *ocispec.Platform, name string) (dcontainer.CreateResponse, error) {
	if err := f.record("ContainerCreate " + name); err != nil {
		return dcontainer.CreateResponse{}, err
	}
	if f.containerCreate != nil {
		return f.containerCreate(name)
	}
	return dcontainer.CreateResponse{ID: "id-" + name}, nil
}

func (f *fakeEngine) ContainerStart(_ context.Context, id string, _ dcontainer.StartOptions) error {
	if err := f.record("ContainerStart " + id); err != nil {
		return err
	}
	if f.containerStart != nil {
		return f.containerStart(id)
	}
	return nil
}

func (f *fakeEngine) ContainerInspect(_ context.Context, name string) (dcontainer.InspectResponse, error) {
	if err := f.record("ContainerInspect " + name); err != nil {
		return dcontainer.InspectResponse{}, err
	}
	if f.containerInspect != nil {
		return f.containerInspect(name)
	}
	return dcontainer.InspectResponse{}, cerrdefs.ErrNotFound.WithMessage("no such container: " + name)
}

func (f *fakeEngine) ContainerDiff(_ context.Context, id string) ([]dcontainer.FilesystemChange, error) {
	if err := f.record("ContainerDiff " + id); err != nil {
		return nil, err
	}
	if f.containerDiff != nil {
		return f.containerDiff(id)
	}
	return nil, nil
}

func (f *fakeEngine) ContainerLogs(_ context.Context, id string, _ dcontainer.LogsOptions) (io.ReadCloser, error) {
	if err := f.record("ContainerLogs " + id); err != nil {
		return nil, err
	}
	return io.NopCloser(strings.NewReader("")), nil
}

func (f *fakeEngine) ContainerList(context.Context, dcontainer.ListOptions) ([]dcontainer.Summary, error) {
	return nil, f.record("ContainerList")
}

func (f *fakeEngine) ContainerStop(_ context.Context, id string, _ dcontainer.StopOptions) error {
	return f.record("ContainerStop " + id)
}

func (f *fakeEngine) ContainerWait(_ context.Context, id string, _ dcontainer.WaitCondition) (<-chan dcontainer.WaitResponse, <-chan error) {
	res, errc := make(chan dcontainer.WaitResponse, 1), make(chan error, 1)
	if err := f.record("ContainerWait " + id); err != nil {
		errc <- err
	} else {
		res <- dcontainer.WaitResponse{}
	}
	return res, errc
}

func (f *fakeEngine) ContainerRemove(_ context.Context, name string, _ dcontainer.RemoveOptions) error {
	if err := f.record("ContainerRemove " + name); err != nil {
		return err
	}
	if f.containerRemove != nil {
		return f.containerRemove(name)
	}
	return nil
}

func (f *fakeEngine) CopyToContainer(_ context.Context, id, _ string, _ io.Reader, _ dcontainer.CopyToContainerOptions) error {
	return f.record("CopyToContainer " + id)
}

func (f *fakeEngine) ContainerCommit(_ context.Context, id string, _ dcontainer.CommitOptions) (dcontainer.CommitResponse, error) {
	return dcontainer.CommitResponse{}, f.record("ContainerCommit " + id)
}

func (f *fakeEngine) VolumeCreate(_ context.Context, o volume.CreateOptions) (volume.Volume, error) {
	return volume.Volume{Name: o.Name, Labels: o.Labels}, f.record("VolumeCreate " + o.Name)
}

func (f *fakeEngine) VolumeInspect(_ context.Context, name string) (volume.Volume, error) {
	if err := f.record("VolumeInspect " + name); err != nil {
		return volume.Volume{}, err
	}
	if f.volumeInspect != nil {
		return f.volumeInspect(name)
	}
	return volume.Volume{}, cerrdefs.ErrNotFound.WithMessage("no such volume: " + name)
}

func (f *fakeEngine) VolumeList(context.Context, volume.ListOptions) (volume.ListResponse, error) {
	return volume.ListResponse{}, f.record("VolumeList")
}

func (f *fakeEngine) VolumeRemove(_ context.Context, name string, _ bool) error {
	if err := f.record("VolumeRemove " + name); err != nil {
		return err
	}
	if f.volumeRemove != nil {
		return f.volumeRemove(name)
	}
	return nil
}

// NetworkList lists the networks NetworkCreate made (unfiltered: callers
// check labels themselves).
func (f *fakeEngine) NetworkList(context.Context, dnetwork.ListOptions) ([]dnetwork.Summary, error) {
	if err := f.record("NetworkList"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []dnetwork.Summary
	for _, n := range f.nets {
		out = append(out, n)
	}
	return out, nil
}

// NetworkInspect finds the networks NetworkCreate made.
func (f *fakeEngine) NetworkInspect(_ context.Context, name string, _ dnetwork.InspectOptions) (dnetwork.Inspect, error) {
	if err := f.record("NetworkInspect " + name); err != nil {
		return dnetwork.Inspect{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nets[name]
	if !ok {
		return n, cerrdefs.ErrNotFound
	}
	return n, nil
}

// NetworkCreate makes a network with a subnet, or answers a conflict as
// engines do for a name taken.
func (f *fakeEngine) NetworkCreate(_ context.Context, name string, o dnetwork.CreateOptions) (dnetwork.CreateResponse, error) {
	if err := f.record("NetworkCreate " + name); err != nil {
		return dnetwork.CreateResponse{}, err
	}
	if f.networkCreate != nil {
		if err := f.networkCreate(name, o); err != nil {
			return dnetwork.CreateResponse{}, err
		}
	}
	return dnetwork.CreateResponse{}, f.addNetwork(name, o.Labels)
}

// NetworkRemove removes a network NetworkCreate made.
func (f *fakeEngine) NetworkRemove(_ context.Context, name string) error {
	if err := f.record("NetworkRemove " + name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.nets[name]; !ok {
		return cerrdefs.ErrNotFound
	}
	delete(f.nets, name)
	return nil
}

func (f *fakeEngine) addNetwork(name string, labels map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.nets[name]; ok {
		return cerrdefs.ErrConflict.WithMessage("network with name " + name + " already exists")
	}
	if f.nets == nil {
		f.nets = map[string]dnetwork.Inspect{}
	}
	f.nets[name] = dnetwork.Inspect{Name: name, Labels: labels, Created: time.Now(), IPAM: dnetwork.IPAM{Config: []dnetwork.IPAMConfig{{Subnet: "10.77.0.0/16"}}}}
	return nil
}

func (f *fakeEngine) Close() error { return nil }

// fakeBackend returns a Docker backend on f whose runtime binary is already
// loaded (its digest made up), so nothing is read from disk.
func fakeBackend(t *testing.T, f *fakeEngine) *Backend {
	t.Helper()
	cfg, err := ParseProviderConfig(json.RawMessage(`{"kind":"container","runtime":"docker","connection":{"kind":"socket","socket_path":"/nonexistent/docker.sock"},"reachability":{"kind":"host_port","bind_host":"127.0.0.1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	rb := &RuntimeBinary{}
	rb.once.Do(func() { rb.digest = strings.Repeat("ab", 32) })
	return newBackend(cfg, f, Options{Runtime: rb, ReadyTimeout: time.Second, Logger: slog.New(slog.DiscardHandler)})
}

// unreachable is what the client returns when nothing listens on the
// engine's socket.
var unreachable = &net.OpError{Op: "dial", Net: "unix", Err: syscall.ECONNREFUSED}

// TestProvisionEngineErrors drives Provision through the engine failures a
// live engine does not produce on demand: the error's kind (which decides
// whether the activity retries) and what is left on the engine.
func TestProvisionEngineErrors(t *testing.T) {
	const id = "ws-0a1b2c"
	name := Name(id)
	keptVolume := func(string) (volume.Volume, error) {
		return volume.Volume{Name: name, Labels: map[string]string{LabelWorkspace: id, LabelManaged: "true"}}, nil
	}
	tests := []struct {
		name    string
		engine  *fakeEngine
		want    errs.Kind
		wantMsg string
		// calls that must and must not have been made, by prefix.
		made, notMade []string
	}{
		{
			name: "image missing is not found, and nothing is made",
			engine: &fakeEngine{imageInspect: func(string) (image.InspectResponse, error) {
				return image.InspectResponse{}, cerrdefs.ErrNotFound.WithMessage("no such image")
			}},
			want:    errs.NotFound,
			wantMsg: `workspace ws-0a1b2c: image "busybox:test"`,
			notMade: []string{"VolumeCreate", "ContainerCreate"},
		},
		{
			name:    "engine unreachable is unavailable",
			engine:  &fakeEngine{down: unreachable},
			want:    errs.Unavailable,
			wantMsg: "docker engine is not reachable at /nonexistent/docker.sock",
			notMade: []string{"VolumeCreate", "ContainerCreate"},
		},
		{
			name: "create that fails removes the volume it made",
			engine: &fakeEngine{containerCreate: func(string) (dcontainer.CreateResponse, error) {
				return dcontainer.CreateResponse{}, errors.New("no space left on device")
			}},
			want:    errs.Unavailable,
			wantMsg: "workspace ws-0a1b2c: create container: docker engine: no space left on device",
			made:    []string{"VolumeCreate " + name, "ContainerRemove " + name, "VolumeRemove " + name},
			notMade: []string{"ContainerStart"},
		},
		{
			name: "create refused as invalid is invalid",
			engine: &fakeEngine{containerCreate: func(string) (dcontainer.CreateResponse, error) {
				return dcontainer.CreateResponse{}, cerrdefs.ErrInvalidArgument.WithMessage("bad memory limit")
			}},
			want:    errs.Invalid,
			wantMsg: "create container",
			made:    []string{"ContainerRemove " + name, "VolumeRemove " + name},
		},
		{
			name: "start that fails is cleaned up",
			engine: &fakeEngine{containerStart: func(string) error {
				return errors.New("OCI runtime create failed: unable to start container process")
			}},
			want:    errs.Unavailable,
			wantMsg: "workspace ws-0a1b2c: start container",
			made:    []string{"ContainerCreate " + name, "ContainerStart id-" + name, "ContainerRemove " + name, "VolumeRemove " + name},
		},
		{
			name: "start that fails keeps a volume from before (a replacement)",
			engine: &fakeEngine{volumeInspect: keptVolume, containerStart: func(string) error {
				return errors.New("OCI runtime create failed")
			}},
			want:    errs.Unavailable,
			wantMsg: "start container",
			made:    []string{"ContainerRemove " + name},
			notMade: []string{"VolumeRemove"},
		},
		{
			name: "a port taken three times in a row gives up",
			engine: &fakeEngine{containerStart: func(string) error {
				return errors.New("driver failed programming external connectivity: Bind for 127.0.0.1:32768 failed: port is already allocated")
			}},
			want:    errs.Unavailable,
			wantMsg: "port is already allocated",
			made:    []string{"ContainerCreate " + name, "ContainerCreate " + name, "ContainerCreate " + name},
		},
		{
			name: "a volume of that name that is not the workspace's is a conflict",
			engine: &fakeEngine{volumeInspect: func(string) (volume.Volume, error) {
				return volume.Volume{Name: name, Labels: map[string]string{"owner": "someone"}}, nil
			}},
			want:    errs.Conflict,
			wantMsg: "volume primer-ws-0a1b2c exists and does not belong to it",
			notMade: []string{"VolumeCreate", "ContainerCreate", "VolumeRemove"},
		},
		{
			name: "a container of that name that is not the workspace's is a conflict",
			engine: &fakeEngine{containerInspect: func(string) (dcontainer.InspectResponse, error) {
				return dcontainer.InspectResponse{
					ContainerJSONBase: &dcontainer.ContainerJSONBase{ID: "other"},
					Config:            &dcontainer.Config{Labels: map[string]string{LabelWorkspace: "ws-ffff"}},
				}, nil
			}},
			want:    errs.Conflict,
			wantMsg: "container primer-ws-0a1b2c exists and does not belong to it",
			notMade: []string{"ContainerRemove", "ContainerCreate"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakeBackend(t, tt.engine)
			_, err := b.Provision(t.Context(), backend.ProvisionRequest{
				WorkspaceID: id,
				Template:    json.RawMessage(`{"kind":"container","image":"busybox:test"}`),
				Token:       "token",
			})
			if err == nil {
				t.Fatal("provision succeeded, want an error")
			}
			if got := errs.KindOf(err); got != tt.want {
				t.Errorf("error kind = %v, want %v (error: %v)", got, tt.want, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantMsg)
			}
			for _, c := range tt.made {
				if n := len(tt.engine.called(c)); n < countOf(tt.made, c) {
					t.Errorf("%q called %d times, want %d; calls: %v", c, n, countOf(tt.made, c), tt.engine.calls)
				}
			}
			for _, c := range tt.notMade {
				if got := tt.engine.called(c); len(got) > 0 {
					t.Errorf("%v called, want no %s; calls: %v", got, c, tt.engine.calls)
				}
			}
		})
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestEngineErrorsOutsideProvision covers Destroy, Teardown, Endpoint and
// List against a failing or empty engine.
func TestEngineErrorsOutsideProvision(t *testing.T) {
	const id = "ws-0a1b2c"
	h := backend.Handle{Backend: Type, WorkspaceID: id, Path: Name(id)}
	exited := func(string) (dcontainer.InspectResponse, error) {
		return dcontainer.InspectResponse{ContainerJSONBase: &dcontainer.ContainerJSONBase{
			ID:    "c1",
			State: &dcontainer.State{Status: "exited", ExitCode: 137, OOMKilled: true},
		}}, nil
	}
	tests := []struct {
		name    string
		engine  *fakeEngine
		call    func(ctx context.Context, b *Backend) error
		want    errs.Kind // 0: no error
		wantMsg string
	}{
		{"destroy of what is gone is not an error", &fakeEngine{
			containerRemove: func(string) error { return cerrdefs.ErrNotFound },
			volumeRemove:    func(string) error { return cerrdefs.ErrNotFound },
		}, func(ctx context.Context, b *Backend) error { return b.Destroy(ctx, h) }, 0, ""},
		{"destroy on an unreachable engine is unavailable", &fakeEngine{down: unreachable},
			func(ctx context.Context, b *Backend) error { return b.Destroy(ctx, h) }, errs.Unavailable, "remove container"},
		{"destroy whose volume is in use is a conflict", &fakeEngine{
			volumeRemove: func(string) error { return cerrdefs.ErrConflict.WithMessage("volume is in use") },
		}, func(ctx context.Context, b *Backend) error { return b.Destroy(ctx, h) }, errs.Conflict, "remove volume"},
		{"teardown on an unreachable engine is unavailable", &fakeEngine{down: unreachable},
			func(ctx context.Context, b *Backend) error { return b.Teardown(ctx, h) }, errs.Unavailable, "not reachable"},
		{"endpoint of a missing container is not found", &fakeEngine{},
			func(ctx context.Context, b *Backend) error { _, err := b.Endpoint(ctx, h, "t"); return err }, errs.NotFound, "inspect container"},
		{"endpoint of an exited container says why", &fakeEngine{containerInspect: exited},
			func(ctx context.Context, b *Backend) error { _, err := b.Endpoint(ctx, h, "t"); return err }, errs.Unavailable, "exited (exit code 137, OOM killed)"},
		{"endpoint of a replaced container is not found", &fakeEngine{containerInspect: exited},
			func(ctx context.Context, b *Backend) error {
				h := h
				h.Attrs = map[string]string{"container_id": "c0"}
				_, err := b.Endpoint(ctx, h, "t")
				return err
			}, errs.NotFound, "replaced outside the platform"},
		{"list on an unreachable engine is unavailable", &fakeEngine{down: unreachable},
			func(ctx context.Context, b *Backend) error { _, err := b.List(ctx); return err }, errs.Unavailable, "list containers"},
		{"a timed out call is a timeout", &fakeEngine{down: context.DeadlineExceeded},
			func(ctx context.Context, b *Backend) error { return b.Destroy(ctx, h) }, errs.Timeout, "remove container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(t.Context(), fakeBackend(t, tt.engine))
			if tt.want == 0 {
				if err != nil {
					t.Fatalf("error = %v, want nil", err)
				}
				return
			}
			if got := errs.KindOf(err); got != tt.want {
				t.Errorf("error kind = %v, want %v (error: %v)", got, tt.want, err)
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error = %v, want it to contain %q", err, tt.wantMsg)
			}
		})
	}
}

// TestClientOfFakeEngine: Client is nil for a backend on a fake engine
// instead of panicking.
func TestClientOfFakeEngine(t *testing.T) {
	if c := fakeBackend(t, &fakeEngine{}).Client(); c != nil {
		t.Errorf("Client() = %v, want nil", c)
	}
}
