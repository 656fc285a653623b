// Package container is the backend whose workspaces are Docker or Podman
// containers, reached through the engine's (Docker-compatible) API.
//
// A workspace is a container named primer-<id> with its own volume
// primer-<id> mounted at the template's workdir (/workspace). The platform
// adds its static primer-runtime to the template's image (a derived image
// committed once per image and runtime version) and makes it the entrypoint,
// so any image with a shell is a workspace image.
// The runtime listens on port 7777; the platform reaches it on a port
// published on the provider's bind_host, or by the container's address on a
// named network.
//
// Hardening by default: no host path or socket is mounted; every capability
// is dropped except the few a shell user needs; no-new-privileges; a pids
// limit, explicit ulimits and the template's CPU and memory caps. A template
// with network.egress deny_all gets a firewall inside the container's network
// namespace, installed by the runtime before any command can run (see
// runtime/PROTOCOL.md), so the workspace cannot open a connection to anything
// outside itself, the host included.
//
// Tenants never share a network: a workspace with egress allowed joins its
// tenant's own bridge network (TenantNetwork), and every workspace's runtime
// admits connections only to its own port and from its tenant's network
// (--ingress=restrict), which holds on engines that do not isolate their
// networks from each other (Podman with netavark before 1.5).
package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	dnetwork "github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"
	"github.com/docker/go-units"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/internal/keylock"
	"github.com/primerhq/primer/backend/internal/restoring"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// Type is the backend type and template kind of this backend.
const Type = wire.BackendContainer

const (
	// RuntimePort is the port the runtime listens on inside the container.
	RuntimePort = 7777
	// RuntimePath is where the platform puts primer-runtime in the container.
	RuntimePath = "/.primer/primer-runtime"

	labelPrefix    = "primer."
	LabelWorkspace = labelPrefix + "workspace"
	LabelManaged   = labelPrefix + "managed"
	// LabelInstallation names the Primer installation that made the object
	// (Options.Installation); List sees only its own installation's.
	LabelInstallation = labelPrefix + "installation"

	// The ulimits every container gets. Podman needs explicit ones at or
	// below the host's (its defaults ask for a capability some hosts lack);
	// these suit a shell workload and sit below common host limits.
	ulimitNofile = 8192
	ulimitNproc  = 16384
)

// runtimePort is RuntimePort as the engine names it.
var runtimePort = nat.Port(strconv.Itoa(RuntimePort) + "/tcp")

// shellCaps are the capabilities a workspace keeps: enough for a root shell
// to own, chmod and chown its files, signal its processes, switch users and
// bind low ports. Everything else (NET_RAW, MKNOD, SYS_CHROOT, AUDIT_WRITE,
// SETFCAP, ...) is dropped.
var shellCaps = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"}

// lockdownCaps are added to every workspace: the runtime needs them to
// install its firewall (ingress always, egress for deny_all), and drops
// both from every set, bounding set included, before it starts serving (so
// no command can get them back).
var lockdownCaps = []string{"NET_ADMIN", "SETPCAP"}

// tenantOf is the request's tenant, the default one when it names none.
func tenantOf(req backend.ProvisionRequest) string { return orDefault(req.TenantID) }

// Name returns the name of the container and the volume of a workspace.
func Name(workspaceID string) string { return "primer-" + workspaceID }

// Options are the platform's settings for every container backend.
type Options struct {
	// Runtime supplies the static primer-runtime binary added to each
	// workspace image (see runtimeImage).
	Runtime *RuntimeBinary
	// ReadyTimeout bounds how long Provision waits for the runtime to answer
	// after the container starts; default 30 s.
	ReadyTimeout time.Duration
	Logger       *slog.Logger
	// Installation labels every object this platform makes, so List (and the
	// reconciler after it) never takes another installation's sandboxes on a
	// shared engine for orphans. Empty: objects carry no such label, and
	// List sees only objects without one.
	Installation string
}

// Backend makes workspaces as containers of one engine.
type Backend struct {
	cfg    ProviderConfig
	cli    engine
	opts   Options
	logger *slog.Logger
	locks  keylock.Map // workspace id
	builds keylock.Map // runtime image key
	nets   keylock.Map // tenant network name
	// netUsers keeps tenant networks that provisions are joining.
	netUsers netUsers
	ports    portSet // host ports picked for Podman
	// bases are the containers' changes outside the workspace at their
	// base, for Restore.
	bases baseSet
	// restoring holds Endpoint while Restore remakes a container.
	restoring restoring.Set
}

var (
	_ backend.Backend = (*Backend)(nil)
	_ backend.Keeper  = (*Backend)(nil)
	_ backend.Lister  = (*Backend)(nil)
	_ backend.Closer  = (*Backend)(nil)
)

// New returns a backend for a parsed provider config.
func New(cfg ProviderConfig, opts Options) (*Backend, error) {
	if opts.Runtime == nil {
		return nil, errs.E(errs.Invalid, "container backend: no primer-runtime binary configured")
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cli, err := newClient(cfg.Connection)
	if err != nil {
		return nil, err
	}
	return newBackend(cfg, cli, opts), nil
}

// newBackend returns a backend on cli for a parsed provider config and
// options with their defaults filled in.
func newBackend(cfg ProviderConfig, cli engine, opts Options) *Backend {
	return &Backend{cfg: cfg, cli: cli, opts: opts, logger: opts.Logger.With("backend", Type, "engine", cfg.Runtime)}
}

// Factory builds container backends from provider configs.
func Factory(opts Options) backend.Factory {
	return func(config json.RawMessage) (backend.Backend, error) {
		c, err := ParseProviderConfig(config)
		if err != nil {
			return nil, err
		}
		return New(c, opts)
	}
}

// Capabilities implements backend.Backend.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		Isolation:               "container",
		PersistentAcrossRestart: true,
		Snapshots:               []string{backend.SnapshotFilesystem},
		SnapshotsNote:           b.snapshotsNote(),
		Pause:                   true,
		Reset:                   backend.ResetScopeSandbox,
		ResetNote:               resetNote,
	}
}

// ValidateTemplate implements backend.Backend.
func (b *Backend) ValidateTemplate(tmpl json.RawMessage) error {
	_, err := ParseTemplate(tmpl)
	return err
}

// Provision implements backend.Backend. It makes the volume and the
// container from the runtime image, starts it and waits until the runtime
// answers with the request's token. A retry finds a running container of the
// workspace and returns it; a container left stopped or half-made by an
// earlier try is removed and made again. A volume the workspace already has
// (kept by Teardown) is mounted again with its files. On failure nothing
// named after the workspace is left behind but such a kept volume.
func (b *Backend) Provision(ctx context.Context, req backend.ProvisionRequest) (backend.Handle, error) {
	if err := backend.CheckID(req.WorkspaceID); err != nil {
		return backend.Handle{}, err
	}
	t, err := ParseTemplate(req.Template)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", req.WorkspaceID, err)
	}
	if req.Token == "" {
		return backend.Handle{}, errs.E(errs.Invalid, "workspace %s: provision: no runtime token", req.WorkspaceID)
	}
	if b.cfg.Reachability.Kind == ReachNetwork {
		if err := b.checkProviderNetwork(ctx, req.WorkspaceID, b.cfg.Reachability.Network); err != nil {
			return backend.Handle{}, err
		}
	}
	unlock := b.locks.Lock(req.WorkspaceID)
	defer unlock()

	name := Name(req.WorkspaceID)
	if h, ok, err := b.existing(ctx, req.WorkspaceID, req.Token); err != nil || ok {
		return h, err
	}
	kept, err := b.keptVolume(ctx, req.WorkspaceID)
	if err != nil {
		return backend.Handle{}, err
	}
	var ref string
	var refresh, keptLayer bool
	if kept {
		// A layer sandbox torn down: its files are in keptImage, which
		// the kept volume is filled from (layer.go).
		if ref, keptLayer, err = b.keptLayer(ctx, req.WorkspaceID); err != nil {
			return backend.Handle{}, err
		}
		refresh = keptLayer
	}
	switch {
	case keptLayer:
	case req.Snapshot != nil:
		// The sandbox starts from the snapshot's image, its workspace
		// files in its layer (layer.go).
		if ref, refresh, err = b.snapshotImageFor(ctx, req, t); err != nil {
			return backend.Handle{}, err
		}
	default:
		img, err := b.cli.ImageInspect(ctx, t.Image)
		if err != nil {
			return backend.Handle{}, b.engineErr(err, "workspace %s: image %q", req.WorkspaceID, t.Image)
		}
		if ref, err = b.runtimeImage(ctx, t.Image, img.ID); err != nil {
			return backend.Handle{}, fmt.Errorf("workspace %s: %w", req.WorkspaceID, err)
		}
	}
	h, err := b.create(ctx, req, t, ref, refresh, pinned{})
	if err != nil && b.joinsTenantNetwork(t) && b.tenantNetworkGone(ctx, req.TenantID) {
		// Another worker removed the tenant's network, empty at that
		// moment, between its creation here and the container's start:
		// make both again, once.
		b.logger.Warn("tenant network removed while joining it; trying again", "workspace_id", req.WorkspaceID, "err", err)
		if rerr := b.removeContainer(ctx, req.WorkspaceID); rerr == nil {
			h, err = b.create(ctx, req, t, ref, refresh, pinned{})
		}
	}
	if err != nil {
		// Leave nothing behind: a retry starts clean, a failure is final.
		// A volume from before this call holds the workspace's files (a
		// replacement after Teardown): it stays for the next try or for
		// Destroy.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		cleanup := b.remove
		if kept {
			cleanup = b.removeContainer
		}
		if derr := cleanup(cctx, req.WorkspaceID); derr != nil {
			b.logger.Warn("cleanup after failed provision", "workspace_id", req.WorkspaceID, "err", derr)
		}
		return backend.Handle{}, err
	}
	b.logger.Info("container started", "workspace_id", req.WorkspaceID, "container", name, "url", h.RuntimeURL, "template", t.String())
	return h, nil
}

// joinsTenantNetwork reports whether a workspace of t joins its tenant's
// network.
func (b *Backend) joinsTenantNetwork(t Template) bool {
	return b.cfg.Reachability.Kind != ReachNetwork && t.Network.Egress != EgressDenyAll
}

// keptVolume reports whether the workspace's volume exists already. One of
// that name that is not labelled as the workspace's is a conflict: mounting
// it would hand someone else's files to the workspace.
func (b *Backend) keptVolume(ctx context.Context, id string) (bool, error) {
	v, err := b.cli.VolumeInspect(ctx, Name(id))
	switch {
	case cerrdefs.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, b.engineErr(err, "workspace %s: inspect volume", id)
	case v.Labels[LabelWorkspace] != id || v.Labels[LabelManaged] != "true":
		return false, errs.E(errs.Conflict, "workspace %s: volume %s exists and does not belong to it", id, Name(id))
	}
	return true, nil
}

// existing returns the handle of a running container of the workspace whose
// runtime answers to token. A container in any other state is removed, so
// Provision makes it again.
func (b *Backend) existing(ctx context.Context, id, token string) (backend.Handle, bool, error) {
	info, err := b.cli.ContainerInspect(ctx, Name(id))
	if cerrdefs.IsNotFound(err) {
		return backend.Handle{}, false, nil
	}
	if err != nil {
		return backend.Handle{}, false, b.engineErr(err, "workspace %s: inspect container", id)
	}
	if info.Config != nil && info.Config.Labels[LabelWorkspace] != id {
		return backend.Handle{}, false, errs.E(errs.Conflict, "workspace %s: container %s exists and does not belong to it", id, Name(id))
	}
	if info.State != nil && info.State.Running {
		h, err := b.handle(id, info)
		if err == nil {
			if err = b.waitReady(ctx, id, h.RuntimeURL, token); err == nil {
				return h, true, nil
			}
		}
		b.logger.Warn("replacing a container whose runtime does not answer", "workspace_id", id, "err", err)
	}
	if err := b.keepLayer(ctx, id, info); err != nil {
		return backend.Handle{}, false, err
	}
	if err := b.removeContainer(ctx, id); err != nil {
		return backend.Handle{}, false, err
	}
	return backend.Handle{}, false, nil
}

// create makes the volume and container from the runtime image (or a
// snapshot's image), starts it and waits for the runtime. refresh copies
// this platform's primer-runtime into the container before it starts: a
// snapshot's image holds the runtime of the platform that took it.
//
// pin, when set, is what a container Restore makes again keeps of the one
// it replaces: its published port or network address, and the handle's
// container id as labelHandle.
func (b *Backend) create(ctx context.Context, req backend.ProvisionRequest, t Template, image string, refresh bool, pin pinned) (backend.Handle, error) {
	id, name := req.WorkspaceID, Name(req.WorkspaceID)
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	labels[LabelWorkspace] = id
	labels[LabelManaged] = "true"
	labels[LabelTenant] = tenantOf(req)
	if b.opts.Installation != "" {
		labels[LabelInstallation] = b.opts.Installation
	}
	volLabels := maps.Clone(labels)
	if req.Snapshot != nil {
		// The container's labels hide the snapshot image's: it is not a
		// snapshot, and its runtime is the image's or the one copied in.
		labels[LabelSnapshot] = ""
		labels[labelWorkdir] = ""
		labels[labelBaseBytes] = ""
		labels[labelFrom] = req.Snapshot.SnapshotID
	}
	if pin.handleID != "" {
		labels[labelHandle] = pin.handleID
	}
	if d, err := b.opts.Runtime.Digest(); err == nil && refresh {
		labels[labelRuntime] = d[:12]
	}
	// A container from a snapshot or a layer template has no workspace
	// volume: its files are in the image and its own layer (layer.go).
	layer, err := b.inLayer(ctx, req, t)
	if err != nil {
		return backend.Handle{}, err
	}
	mounts := []mount.Mount{{Type: mount.TypeVolume, Source: name, Target: t.Workdir}}
	if layer {
		labels[labelLayer] = t.Workdir
		mounts = nil
	} else if _, err := b.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: volLabels}); err != nil {
		return backend.Handle{}, b.engineErr(err, "workspace %s: create volume", id)
	}

	env := make([]string, 0, len(req.Env)+1)
	for k, v := range req.Env {
		env = append(env, k+"="+v)
	}
	env = append(env, "PRIMER_RUNTIME_TOKEN="+req.Token)
	entrypoint := []string{RuntimePath, "--listen=:" + strconv.Itoa(RuntimePort), "--root=" + t.Workdir, "--fs=" + protocol.FSWhole}
	// Every workspace's runtime closes it to connections opened towards
	// it but to the runtime's own port (token-authenticated) and from its
	// tenant's network; it needs lockdownCaps for that and drops them
	// before any command runs.
	caps := append(append([]string(nil), shellCaps...), lockdownCaps...)
	if t.Network.Egress == EgressDenyAll {
		entrypoint = append(entrypoint, "--egress=deny")
	}
	if t.User != "" {
		entrypoint = append(entrypoint, "--user="+t.User)
	}
	// The network: host_port with egress allowed joins the tenant's own
	// network, never the default bridge another tenant is on; deny_all
	// stays on the engine's default network, where it opens nothing and
	// admits nothing but the platform. network: the provider's network,
	// where the platform reaches it, and which every tenant shares; its
	// runtime then admits no peer at all.
	var netName string
	var admit peers
	switch {
	case b.cfg.Reachability.Kind == ReachNetwork:
		netName = b.cfg.Reachability.Network
	case b.joinsTenantNetwork(t):
		defer b.holdTenantNetwork(req.TenantID)()
		var err error
		if netName, admit, err = b.tenantNetwork(ctx, req.TenantID); err != nil {
			return backend.Handle{}, fmt.Errorf("workspace %s: %w", id, err)
		}
	}
	entrypoint = append(entrypoint, ingressArgs(admit)...)
	cfg := &dcontainer.Config{
		Image:        image,
		Hostname:     id,
		User:         "0:0",
		Env:          env,
		Entrypoint:   entrypoint,
		Cmd:          []string{},
		WorkingDir:   t.Workdir,
		Labels:       labels,
		ExposedPorts: nat.PortSet{runtimePort: {}},
		StopSignal:   "SIGTERM",
	}
	pids := t.PidsLimit
	hc := &dcontainer.HostConfig{
		Mounts:         mounts,
		CapDrop:        []string{"ALL"},
		CapAdd:         caps,
		SecurityOpt:    []string{"no-new-privileges"},
		RestartPolicy:  dcontainer.RestartPolicy{Name: dcontainer.RestartPolicyDisabled},
		ReadonlyRootfs: false,
		Resources: dcontainer.Resources{
			NanoCPUs:  int64(t.CPUCores * 1e9),
			PidsLimit: &pids,
			Ulimits: []*units.Ulimit{
				{Name: "nofile", Soft: ulimitNofile, Hard: ulimitNofile},
				{Name: "nproc", Soft: ulimitNproc, Hard: ulimitNproc},
			},
		},
	}
	if t.MemoryBytes > 0 {
		hc.Memory = t.MemoryBytes
		hc.MemorySwap = t.MemoryBytes // no swap: the limit is the limit
	}
	// host_port: createAndStart publishes the port; network: the platform
	// dials the container's address on the provider's network.
	var netCfg *dnetwork.NetworkingConfig
	if netName != "" {
		hc.NetworkMode = dcontainer.NetworkMode(netName)
		ep := &dnetwork.EndpointSettings{}
		if pin.ip != "" {
			// The engine refuses an address on a network without a
			// configured subnet: the restore fails and the workspace
			// is replaced.
			ep.IPAMConfig = &dnetwork.EndpointIPAMConfig{IPv4Address: pin.ip}
		}
		netCfg = &dnetwork.NetworkingConfig{EndpointsConfig: map[string]*dnetwork.EndpointSettings{netName: ep}}
	}

	created, err := b.createAndStart(ctx, id, cfg, hc, netCfg, refresh, pin.hostPort)
	if err != nil {
		return backend.Handle{}, err
	}
	info, err := b.cli.ContainerInspect(ctx, created.ID)
	if err != nil {
		return backend.Handle{}, b.engineErr(err, "workspace %s: inspect container", id)
	}
	h, err := b.handle(id, info)
	if err != nil {
		return backend.Handle{}, b.withLogs(ctx, created.ID, err)
	}
	if err := b.waitReady(ctx, id, h.RuntimeURL, req.Token); err != nil {
		return backend.Handle{}, b.withLogs(ctx, created.ID, err)
	}
	return h, nil
}

// createAndStart creates and starts the workspace container. A published
// port that turns out to be taken (another process, or on Podman another
// container created at the same moment) is picked again: up to three tries.
// A hostPort given (a container Restore makes again) is bound as it is,
// and a clash is an error.
func (b *Backend) createAndStart(ctx context.Context, id string, cfg *dcontainer.Config, hc *dcontainer.HostConfig, netCfg *dnetwork.NetworkingConfig, refresh bool, hostPort string) (dcontainer.CreateResponse, error) {
	for attempt := 1; ; attempt++ {
		if b.cfg.Reachability.Kind == ReachHostPort && hostPort != "" {
			hc.PortBindings = nat.PortMap{runtimePort: {{HostIP: b.cfg.Reachability.BindHost, HostPort: hostPort}}}
		} else if b.cfg.Reachability.Kind == ReachHostPort {
			hostPort, release, err := b.pickPort()
			if err != nil {
				return dcontainer.CreateResponse{}, err
			}
			defer release()
			hc.PortBindings = nat.PortMap{runtimePort: {{HostIP: b.cfg.Reachability.BindHost, HostPort: hostPort}}}
		}
		created, err := b.cli.ContainerCreate(ctx, cfg, hc, netCfg, nil, Name(id))
		if err != nil {
			return created, b.engineErr(err, "workspace %s: create container", id)
		}
		if refresh {
			tarball, err := b.opts.Runtime.Tar()
			if err != nil {
				return created, err
			}
			if err := b.cli.CopyToContainer(ctx, created.ID, "/", tarball, dcontainer.CopyToContainerOptions{}); err != nil {
				return created, b.engineErr(err, "workspace %s: copy primer-runtime into the container", id)
			}
		}
		err = b.cli.ContainerStart(ctx, created.ID, dcontainer.StartOptions{})
		if err == nil {
			return created, nil
		}
		if attempt < 3 && portTaken(err) && hostPort == "" {
			b.logger.Warn("published port taken; trying another", "workspace_id", id, "err", err)
			if rerr := b.removeContainer(ctx, id); rerr != nil {
				return created, rerr
			}
			continue
		}
		return created, b.engineErr(err, "workspace %s: start container", id)
	}
}

// handle builds the handle of a started container from its inspection.
func (b *Backend) handle(id string, info dcontainer.InspectResponse) (backend.Handle, error) {
	url, err := b.runtimeURL(id, info)
	if err != nil {
		return backend.Handle{}, err
	}
	return backend.Handle{
		Backend:     Type,
		WorkspaceID: id,
		Path:        Name(id),
		RuntimeURL:  url,
		Attrs: map[string]string{
			"container_id": info.ID,
			"container":    Name(id),
			"volume":       Name(id),
			"engine":       b.cfg.Runtime,
		},
	}, nil
}

func describeState(s *dcontainer.State) string {
	if s == nil {
		return "in an unknown state"
	}
	msg := s.Status
	if s.Status == "exited" || s.Status == "dead" {
		msg += fmt.Sprintf(" (exit code %d", s.ExitCode)
		if s.OOMKilled {
			msg += ", OOM killed"
		}
		if s.Error != "" {
			msg += ", " + s.Error
		}
		msg += ")"
	}
	return msg
}

// stoppedEvery is how often waitReady asks the engine whether the
// container stopped while its runtime does not answer yet.
const stoppedEvery = 250 * time.Millisecond

// waitReady dials the runtime until it answers a ping with token, or fails
// early when the container stops.
func (b *Backend) waitReady(ctx context.Context, id, url, token string) error {
	ctx, cancel := context.WithTimeout(ctx, b.opts.ReadyTimeout)
	defer cancel()
	var checked time.Time
	err := backend.AwaitRuntime(ctx, url, token, 2*time.Second, func(ctx context.Context) error {
		// An inspect per try would slow the tries down on a busy engine:
		// one each stoppedEvery is soon enough to stop waiting.
		if time.Since(checked) < stoppedEvery {
			return nil
		}
		checked = time.Now()
		if info, ierr := b.cli.ContainerInspect(ctx, Name(id)); ierr == nil && info.State != nil && !info.State.Running {
			return errs.E(errs.Unavailable, "workspace %s: container %s stopped while starting: %s", id, Name(id), describeState(info.State))
		}
		return nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, backend.ErrTokenRefused):
		return errs.E(errs.Conflict, "workspace %s: runtime at %s refused the workspace's token", id, url)
	case ctx.Err() != nil:
		return errs.E(errs.Unavailable, "workspace %s: runtime did not answer within %s: %v", id, b.opts.ReadyTimeout, err)
	}
	return err
}

// withLogs appends the tail of a container's output to err: the runtime
// says there why it could not start (a missing shell, a refused firewall).
func (b *Backend) withLogs(ctx context.Context, containerID string, err error) error {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	rc, lerr := b.cli.ContainerLogs(lctx, containerID, dcontainer.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "20"})
	if lerr != nil {
		return err
	}
	defer rc.Close()
	var out strings.Builder
	_, _ = stdcopy.StdCopy(&out, &out, io.LimitReader(rc, 8<<10))
	tail := strings.TrimSpace(out.String())
	if tail == "" {
		return err
	}
	return fmt.Errorf("%w; container output: %s", err, tail)
}

// Endpoint implements backend.Backend: it inspects the container and
// returns its runtime's URL, or an Unavailable error saying what state the
// container is in. The published port is read again each time, since an
// engine restart may publish it anew.
func (b *Backend) Endpoint(ctx context.Context, h backend.Handle, token string) (backend.Endpoint, error) {
	if err := b.checkHandle(h); err != nil {
		return backend.Endpoint{}, err
	}
	b.restoring.Wait(ctx, h.WorkspaceID)
	info, err := b.cli.ContainerInspect(ctx, Name(h.WorkspaceID))
	if err != nil {
		return backend.Endpoint{}, b.engineErr(err, "workspace %s: inspect container", h.WorkspaceID)
	}
	if !sameContainer(h, info) {
		return backend.Endpoint{}, errs.E(errs.NotFound, "workspace %s: container %s was replaced outside the platform", h.WorkspaceID, Name(h.WorkspaceID))
	}
	url, err := b.runtimeURL(h.WorkspaceID, info)
	if err != nil {
		return backend.Endpoint{}, err
	}
	return backend.Endpoint{URL: url}, nil
}

func (b *Backend) checkHandle(h backend.Handle) error {
	if err := h.Check(Type, nil); err != nil {
		return err
	}
	if h.Path != "" && h.Path != Name(h.WorkspaceID) {
		return errs.E(errs.Invalid, "workspace %s: handle names volume %q, not %q", h.WorkspaceID, h.Path, Name(h.WorkspaceID))
	}
	return nil
}

// Destroy implements backend.Backend: it removes the container (stopping
// it) and its volume, found by the workspace id, so it works for a handle
// that was never stored. Nothing named after the workspace is left.
func (b *Backend) Destroy(ctx context.Context, h backend.Handle) error {
	unlock, err := b.lockFor(h)
	if err != nil {
		return err
	}
	defer unlock()
	tenant := b.tenantOfSandbox(ctx, h.WorkspaceID)
	if err := b.remove(ctx, h.WorkspaceID); err != nil {
		return err
	}
	b.dropTenantNetwork(ctx, tenant)
	return nil
}

// Teardown implements backend.Keeper: it removes the container (stopping
// it and every process in it) and keeps the volume, so a following
// Provision of the workspace makes a new container on the same files. It
// works from the workspace id alone, like Destroy.
func (b *Backend) Teardown(ctx context.Context, h backend.Handle) error {
	unlock, err := b.lockFor(h)
	if err != nil {
		return err
	}
	defer unlock()
	tenant := b.tenantOfSandbox(ctx, h.WorkspaceID)
	if info, err := b.cli.ContainerInspect(ctx, Name(h.WorkspaceID)); err == nil && info.Config != nil && info.Config.Labels[LabelWorkspace] == h.WorkspaceID {
		if err := b.keepLayer(ctx, h.WorkspaceID, info); err != nil {
			return err
		}
	}
	if err := b.removeContainer(ctx, h.WorkspaceID); err != nil {
		return err
	}
	b.dropTenantNetwork(ctx, tenant)
	b.logger.Info("container removed, volume kept", "workspace_id", h.WorkspaceID, "container", Name(h.WorkspaceID))
	return nil
}

// lockFor checks a handle given to Destroy or Teardown, which work from the
// workspace id alone, and locks its workspace.
func (b *Backend) lockFor(h backend.Handle) (unlock func(), err error) {
	return b.locks.LockHandle(h, Type, nil)
}

// remove deletes the workspace's container and volume; missing ones are
// fine.
func (b *Backend) remove(ctx context.Context, id string) error {
	if err := b.removeContainer(ctx, id); err != nil {
		return err
	}
	if err := b.cli.VolumeRemove(ctx, Name(id), true); err != nil && !cerrdefs.IsNotFound(err) {
		return b.engineErr(err, "workspace %s: remove volume", id)
	}
	return b.dropKeptLayer(ctx, id)
}

func (b *Backend) removeContainer(ctx context.Context, id string) error {
	b.bases.forget(id)
	err := b.cli.ContainerRemove(ctx, Name(id), dcontainer.RemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return nil
	case cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress"):
		// Docker is removing it already; wait until it is gone.
		for range 50 {
			if _, ierr := b.cli.ContainerInspect(ctx, Name(id)); cerrdefs.IsNotFound(ierr) {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return b.engineErr(err, "workspace %s: remove container", id)
}
