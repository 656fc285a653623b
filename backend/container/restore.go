package container

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// labelHandle is set on a container Restore made again in place of the one
// a workspace's handle names: it carries the handle's container_id, so the
// handle the workflow and the probes hold keeps naming the workspace's
// container (see sameContainer).
const labelHandle = labelPrefix + "handle"

// resetNote is what Capabilities says a container's reset restores.
const resetNote = "sandbox: the container is made again from its image (the template's, with files and init applied again, or the snapshot's) with a fresh workspace volume, same name and runtime port, when anything outside the workspace changed since the base; otherwise the workspace is emptied and the template's files and init applied again"

var _ backend.Restorer = (*Backend)(nil)

// sameContainer reports whether info is the container h names: the one it
// was made as, or one Restore made in its place (labelHandle).
func sameContainer(h backend.Handle, info dcontainer.InspectResponse) bool {
	cid := h.Attrs["container_id"]
	if cid == "" || cid == info.ID {
		return true
	}
	return info.Config != nil && info.Config.Labels[labelHandle] == cid
}

// pinned is what a container made again by Restore keeps of the one it
// replaces, so the handle stays valid: the published host port (host_port
// reachability), the address on the provider's network (network), and
// the container id the handle names.
type pinned struct {
	hostPort string
	ip       string
	handleID string
}

// base is a container's filesystem changes outside its workspace, as
// recorded by RecordBase once the template's files and init ran.
type base struct {
	containerID string
	paths       []string
}

// baseSet keeps each workspace's base in memory: a platform restart
// forgets them, and a Restore that finds none remakes the container.
type baseSet struct {
	mu sync.Mutex
	m  map[string]base // workspace id
}

func (s *baseSet) set(id string, b base) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]base{}
	}
	s.m[id] = b
}

func (s *baseSet) get(id, containerID string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[id]
	if !ok || b.containerID != containerID {
		return nil, false
	}
	return b.paths, true
}

func (s *baseSet) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// RecordBase implements backend.Restorer: it asks the engine which paths
// outside the workspace volume the container changed (what the template's
// init wrote there) and keeps them as the container's base.
func (b *Backend) RecordBase(ctx context.Context, h backend.Handle) error {
	if err := b.checkHandle(h); err != nil {
		return err
	}
	unlock := b.locks.Lock(h.WorkspaceID)
	defer unlock()
	info, err := b.container(ctx, h, "record base")
	if err != nil {
		return err
	}
	paths, err := b.changes(ctx, info)
	if err != nil {
		return err
	}
	b.bases.set(h.WorkspaceID, base{containerID: info.ID, paths: paths})
	return nil
}

// Restore implements backend.Restorer. The container is made again, with
// the same name, a fresh workspace volume and the same runtime port (or
// address), when anything outside the workspace may differ from its base:
// see restoreReason. The new container carries the handle's container id
// (labelHandle), so h stays valid. A port another process took in the
// meantime fails the restore: the caller replaces the workspace.
func (b *Backend) Restore(ctx context.Context, h backend.Handle, req backend.ProvisionRequest) (bool, error) {
	if err := b.checkHandle(h); err != nil {
		return false, err
	}
	if err := backend.CheckRestore(h, req); err != nil {
		return false, err
	}
	id := h.WorkspaceID
	t, err := ParseTemplate(req.Template)
	if err != nil {
		return false, fmt.Errorf("workspace %s: restore: %w", id, err)
	}
	unlock := b.locks.Lock(id)
	defer unlock()
	info, err := b.container(ctx, h, "restore")
	if err != nil {
		return false, err
	}
	why, err := b.restoreReason(ctx, info, req)
	if err != nil || why == "" {
		return false, err
	}
	pin, err := b.pinOf(h, info)
	if err != nil {
		return false, err
	}
	var ref string
	var refresh bool
	if req.Snapshot != nil {
		if ref, refresh, err = b.snapshotImageFor(ctx, req, t); err != nil {
			return false, err
		}
	} else {
		img, err := b.cli.ImageInspect(ctx, t.Image)
		if err != nil {
			return false, b.engineErr(err, "workspace %s: restore: image %q", id, t.Image)
		}
		if ref, err = b.runtimeImage(ctx, t.Image, img.ID); err != nil {
			return false, fmt.Errorf("workspace %s: restore: %w", id, err)
		}
	}
	b.bases.forget(id)
	defer b.restoring.Begin(id)()
	// Once the old container is being removed, the new one is made even
	// when the caller gives up (an activity's heartbeat timing out on a
	// loaded machine, a retry already under way): a restore cut between
	// the removal and the start would leave the workspace with no
	// container, and its handle, held by the workflow, with nothing to
	// find.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.opts.ReadyTimeout+2*time.Minute)
	defer cancel()
	// The tenant's network outlives the old container while the new one
	// joins it.
	if tenant := info.Config.Labels[LabelTenant]; tenant != "" {
		defer b.holdTenantNetwork(tenant)()
	}
	if err := b.remove(ctx, id); err != nil {
		return false, fmt.Errorf("workspace %s: restore: %w", id, err)
	}
	nh, err := b.create(ctx, req, t, ref, refresh, pin)
	if err != nil {
		return false, fmt.Errorf("workspace %s: restore: %w", id, err)
	}
	if h.RuntimeURL != "" && nh.RuntimeURL != h.RuntimeURL {
		return false, errs.E(errs.Unavailable, "workspace %s: restore: the runtime moved from %s to %s", id, h.RuntimeURL, nh.RuntimeURL)
	}
	b.logger.Info("container made again (reset)", "workspace_id", id, "container", Name(id), "reason", why)
	return true, nil
}

// restoreReason says why the container must be made again, or "" when
// the runtime's reset of the workspace restores it all. The engine's
// changes (GET /containers/{id}/changes) list what the container's layer
// holds beyond its image; the workspace volume is not in them.
//
//   - A sandbox made from a snapshot is always made again: its workspace's
//     base is the capture's files, which the runtime's reset (it empties
//     the workspace) cannot bring back.
//   - No base recorded (a platform restart, a RecordBase that never ran):
//     made again, the safe answer.
//   - A non-empty base (init wrote outside the workspace) is always made
//     again: a case that changes a base path again (rewrites a file init
//     installed) shows the same change as the base, so the changes cannot
//     tell it apart.
//   - Otherwise only when something changed outside the workspace.
func (b *Backend) restoreReason(ctx context.Context, info dcontainer.InspectResponse, req backend.ProvisionRequest) (string, error) {
	if req.Snapshot != nil {
		return "made from snapshot " + req.Snapshot.SnapshotID, nil
	}
	based, ok := b.bases.get(req.WorkspaceID, info.ID)
	switch {
	case !ok:
		return "no base recorded", nil
	case len(based) > 0:
		return fmt.Sprintf("the base has %d paths outside the workspace (%s)", len(based), sample(based)), nil
	}
	paths, err := b.changes(ctx, info)
	if err != nil {
		return "", err
	}
	if len(paths) > 0 {
		return fmt.Sprintf("%d paths changed outside the workspace (%s)", len(paths), sample(paths)), nil
	}
	return "", nil
}

// sample is the first few of paths, for a log line.
func sample(paths []string) string {
	if len(paths) > 3 {
		return strings.Join(paths[:3], ", ") + ", ..."
	}
	return strings.Join(paths, ", ")
}

// engineDirs are directories the engine itself changes in every
// container: Podman makes its mount points for /etc/hosts, /etc/hostname
// and /etc/resolv.conf in the container's /etc (a fresh container's changes
// are "C /etc"; Docker's are empty). Only the directory's own change is
// ignored: a file a case adds, changes or removes in it is listed apart.
var engineDirs = map[string]bool{"/etc": true}

// changes lists the container's filesystem changes outside its workspace,
// each as "<kind> <path>" (A, C or D, as docker diff prints them). The
// workdir and what lies under it are the volume's (or, in a layer
// sandbox, the runtime's reset's to undo); a directory above the
// workdir shows as changed because the engine made the mount point in it,
// which is not a change a case made (a file a case adds or removes beside
// it still shows, as its own A or D).
func (b *Backend) changes(ctx context.Context, info dcontainer.InspectResponse) ([]string, error) {
	workdir := volumeWorkdir(info)
	if workdir == "" {
		workdir = layerWorkdir(info)
	}
	if out, ok := b.upperChanges(info, workdir); ok {
		return out, nil
	}
	cs, err := b.cli.ContainerDiff(ctx, info.ID)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, errs.E(errs.NotFound, "workspace %s: container %s is gone", info.Config.Labels[LabelWorkspace], Name(info.Config.Labels[LabelWorkspace]))
		}
		return nil, b.engineErr(err, "workspace %s: changes of container", info.Config.Labels[LabelWorkspace])
	}
	var out []string
	for _, c := range cs {
		p := path.Clean(c.Path)
		if workdir != "" && (p == workdir || strings.HasPrefix(p, workdir+"/")) {
			continue
		}
		if c.Kind == dcontainer.ChangeModify && (engineDirs[p] || workdir != "" && strings.HasPrefix(workdir, strings.TrimSuffix(p, "/")+"/")) {
			continue
		}
		out = append(out, c.Kind.String()+" "+p)
	}
	return out, nil
}

// volumeWorkdir is where the container mounts its workspace volume, ""
// when it has none (a sandbox made from a snapshot keeps its files in its
// layer).
func volumeWorkdir(info dcontainer.InspectResponse) string {
	for _, m := range info.Mounts {
		if m.Name == Name(info.Config.Labels[LabelWorkspace]) {
			return path.Clean(m.Destination)
		}
	}
	return ""
}

// pinOf is what the remade container keeps of info, the container h names.
func (b *Backend) pinOf(h backend.Handle, info dcontainer.InspectResponse) (pinned, error) {
	p := pinned{handleID: h.Attrs["container_id"]}
	if p.handleID == "" {
		p.handleID = info.ID
	}
	if info.NetworkSettings == nil {
		return p, errs.E(errs.Unavailable, "workspace %s: restore: container %s has no network settings", h.WorkspaceID, Name(h.WorkspaceID))
	}
	switch b.cfg.Reachability.Kind {
	case ReachNetwork:
		if ep := info.NetworkSettings.Networks[b.cfg.Reachability.Network]; ep != nil {
			p.ip = ep.IPAddress
		}
		if p.ip == "" {
			return p, errs.E(errs.Unavailable, "workspace %s: restore: container %s has no address on network %q", h.WorkspaceID, Name(h.WorkspaceID), b.cfg.Reachability.Network)
		}
	default:
		for _, pb := range info.NetworkSettings.Ports[runtimePort] {
			if pb.HostPort != "" {
				p.hostPort = pb.HostPort
				break
			}
		}
		if p.hostPort == "" {
			return p, errs.E(errs.Unavailable, "workspace %s: restore: container %s publishes no port for %s", h.WorkspaceID, Name(h.WorkspaceID), runtimePort)
		}
	}
	return p, nil
}
