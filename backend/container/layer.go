package container

import (
	"context"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"

	"github.com/primerhq/primer/backend"
)

// Layer sandboxes: a container made from a snapshot, or from a template
// whose storage is StorageLayer, keeps its workspace files in its own
// layer, with no workspace volume (see snapshot.go). What
// assumes the volume is here: whether a new container is one, and how its
// files survive Teardown and a Provision that replaces a stopped one.

// keptImage is the image Teardown keeps a layer sandbox's filesystem as.
func keptImage(id string) string { return "primer-kept/" + id + ":" + backend.SnapshotFilesystem }

// layerWorkdir is the workdir of a layer sandbox's container, "" for a
// container whose workspace is on its volume.
func layerWorkdir(info dcontainer.InspectResponse) string {
	if info.Config == nil {
		return ""
	}
	w := info.Config.Labels[labelLayer]
	if w == "" {
		return ""
	}
	for _, m := range info.Mounts {
		if m.Destination == w {
			return ""
		}
	}
	return w
}

// inLayer reports whether a container provisioned for req from template t
// keeps its workspace files in its layer: one made from a snapshot or from
// a layer template, unless the workspace has a volume already (kept by
// Teardown), whose files it mounts.
func (b *Backend) inLayer(ctx context.Context, req backend.ProvisionRequest, t Template) (bool, error) {
	if req.Snapshot == nil && t.Storage != StorageLayer {
		return false, nil
	}
	kept, err := b.keptVolume(ctx, req.WorkspaceID)
	return !kept, err
}

// keepLayer keeps the files of a layer sandbox's container before it is
// removed (Teardown, or a Provision replacing a stopped one): it commits
// the container as keptImage, with the workspace's env values blanked as a
// snapshot's are, and makes the workspace's volume, empty, which the next
// Provision mounts on that image and the engine fills from it. A
// container with a workspace volume is left as it is.
func (b *Backend) keepLayer(ctx context.Context, id string, info dcontainer.InspectResponse) error {
	workdir := layerWorkdir(info)
	if workdir == "" {
		return nil
	}
	base, err := b.cli.ImageInspect(ctx, info.Image)
	if err != nil {
		return b.engineErr(err, "workspace %s: keep files: inspect image %s", id, info.Image)
	}
	labels := map[string]string{labelLayer: ""}
	if _, err := b.cli.ContainerCommit(ctx, info.ID, dcontainer.CommitOptions{
		Reference: keptImage(id),
		Comment:   "primer: files of workspace " + id + " kept by a teardown",
		Pause:     true,
		Changes:   commitChanges(info.Config.Env, baseEnv(base), labels, b.cfg.Runtime == EnginePodman),
		Config:    &dcontainer.Config{Entrypoint: []string{RuntimePath}},
	}); err != nil {
		return b.engineErr(err, "workspace %s: keep files: commit container", id)
	}
	volLabels := map[string]string{}
	for _, k := range []string{LabelWorkspace, LabelManaged, LabelTenant, LabelInstallation} {
		if v, ok := info.Config.Labels[k]; ok {
			volLabels[k] = v
		}
	}
	if _, err := b.cli.VolumeCreate(ctx, volume.CreateOptions{Name: Name(id), Labels: volLabels}); err != nil {
		return b.engineErr(err, "workspace %s: keep files: create volume", id)
	}
	b.logger.Info("layer sandbox's files kept", "workspace_id", id, "image", keptImage(id))
	return nil
}

// keptLayer returns keptImage of the workspace when it exists.
func (b *Backend) keptLayer(ctx context.Context, id string) (string, bool, error) {
	_, err := b.cli.ImageInspect(ctx, keptImage(id))
	switch {
	case err == nil:
		return keptImage(id), true, nil
	case cerrdefs.IsNotFound(err):
		return "", false, nil
	}
	return "", false, b.engineErr(err, "workspace %s: inspect image %s", id, keptImage(id))
}

// dropKeptLayer removes keptImage of the workspace, once its container is
// gone (Podman's forced removal would remove the container too).
func (b *Backend) dropKeptLayer(ctx context.Context, id string) error {
	_, err := b.cli.ImageRemove(ctx, keptImage(id), image.RemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return b.engineErr(err, "workspace %s: remove image %s", id, keptImage(id))
	}
	return nil
}
