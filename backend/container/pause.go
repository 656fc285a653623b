package container

import (
	"context"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// pauseStopTimeout is how long Pause lets the runtime and the workspace's
// processes end on SIGTERM before the engine kills them.
const pauseStopTimeout = 10 // seconds

// Pause implements backend.Pauser: it stops the container, which ends every
// process in it and frees its CPU and memory, and keeps the container (its
// root filesystem) and the workspace volume. Stopping a stopped container
// is not an error. Only filesystem mode is offered (see snapshotsNote).
func (b *Backend) Pause(ctx context.Context, h backend.Handle, mode string) (backend.Handle, error) {
	if err := b.checkHandle(h); err != nil {
		return backend.Handle{}, err
	}
	if mode != "" && mode != backend.SnapshotFilesystem {
		return backend.Handle{}, errs.E(errs.Invalid, "workspace %s: pause: mode %q is not offered: %s", h.WorkspaceID, mode, b.snapshotsNote())
	}
	unlock := b.locks.Lock(h.WorkspaceID)
	defer unlock()
	info, err := b.container(ctx, h, "pause")
	if err != nil {
		return backend.Handle{}, err
	}
	if info.State != nil && (info.State.Running || info.State.Paused || info.State.Restarting) {
		timeout := pauseStopTimeout
		if err := b.cli.ContainerStop(ctx, info.ID, dcontainer.StopOptions{Timeout: &timeout}); err != nil && !cerrdefs.IsNotFound(err) {
			return backend.Handle{}, b.engineErr(err, "workspace %s: pause: stop container", h.WorkspaceID)
		}
		b.logger.Info("container stopped (paused)", "workspace_id", h.WorkspaceID, "container", Name(h.WorkspaceID))
	}
	return h, nil
}

// Resume implements backend.Pauser: it starts the stopped container again
// and waits for its runtime, which answers to the token it was made with.
// The handle it returns has the runtime's URL as it is now: a port the
// engine publishes anew may have changed. Resuming a running container
// returns its handle.
func (b *Backend) Resume(ctx context.Context, h backend.Handle, token string, _ backend.EnvFunc) (backend.Handle, error) {
	if err := b.checkHandle(h); err != nil {
		return backend.Handle{}, err
	}
	unlock := b.locks.Lock(h.WorkspaceID)
	defer unlock()
	id := h.WorkspaceID
	info, err := b.container(ctx, h, "resume")
	if err != nil {
		return backend.Handle{}, err
	}
	if info.State == nil || !info.State.Running {
		if tenant := info.Config.Labels[LabelTenant]; tenant != "" {
			// Keep the tenant's network from being removed by a
			// concurrent delete while the container joins it again.
			defer b.holdTenantNetwork(tenant)()
		}
		if err := b.cli.ContainerStart(ctx, info.ID, dcontainer.StartOptions{}); err != nil {
			return backend.Handle{}, b.engineErr(err, "workspace %s: resume: start container", id)
		}
		if info, err = b.cli.ContainerInspect(ctx, info.ID); err != nil {
			return backend.Handle{}, b.engineErr(err, "workspace %s: resume: inspect container", id)
		}
		b.logger.Info("container started (resumed)", "workspace_id", id, "container", Name(id))
	}
	rh, err := b.handle(id, info)
	if err != nil {
		return backend.Handle{}, b.withLogs(ctx, info.ID, err)
	}
	if err := b.waitReady(ctx, id, rh.RuntimeURL, token); err != nil {
		return backend.Handle{}, b.withLogs(ctx, info.ID, err)
	}
	return rh, nil
}

// container inspects the workspace's container for op, checking it is the
// one the handle names.
func (b *Backend) container(ctx context.Context, h backend.Handle, op string) (dcontainer.InspectResponse, error) {
	info, err := b.cli.ContainerInspect(ctx, Name(h.WorkspaceID))
	if err != nil {
		return info, b.engineErr(err, "workspace %s: %s: inspect container", h.WorkspaceID, op)
	}
	if info.Config == nil || info.Config.Labels[LabelWorkspace] != h.WorkspaceID {
		return info, errs.E(errs.Conflict, "workspace %s: %s: container %s does not belong to it", h.WorkspaceID, op, Name(h.WorkspaceID))
	}
	if !sameContainer(h, info) {
		return info, errs.E(errs.NotFound, "workspace %s: %s: container %s was replaced outside the platform", h.WorkspaceID, op, Name(h.WorkspaceID))
	}
	return info, nil
}
