package container

import (
	"context"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/primerhq/primer/errs"
)

// runtimeImage returns an image that is image plus primer-runtime at
// RuntimePath, making it on first use: a container of image is created (never
// started), the runtime copied in, and the result committed as
// primer-runtime/<image id>:<runtime digest>. Copying 7 MB into every
// workspace container cost 100-300 ms of each create; a commit per image and
// platform version costs it once, and an image that exists is complete, so a
// crash midway leaves nothing half made to trip over.
func (b *Backend) runtimeImage(ctx context.Context, image, imageID string) (string, error) {
	digest, err := b.opts.Runtime.Digest()
	if err != nil {
		return "", err
	}
	key := shortHex(imageID) + "-" + digest[:12]
	ref := "primer-runtime/" + shortHex(imageID) + ":" + digest[:12]
	if ok, err := b.hasImage(ctx, ref); err != nil || ok {
		return ref, err
	}
	unlock := b.builds.Lock(key)
	defer unlock()
	if ok, err := b.hasImage(ctx, ref); err != nil || ok {
		return ref, err
	}

	// The build container's name is fixed, so one left by a crash is
	// replaced, and two platform processes building at once meet here.
	name := "primer-build-" + key
	if err := b.cli.ContainerRemove(ctx, name, dcontainer.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return "", b.engineErr(err, "runtime image: remove stale build container")
	}
	created, err := b.cli.ContainerCreate(ctx,
		&dcontainer.Config{Image: image, Entrypoint: []string{RuntimePath}, Cmd: []string{}},
		&dcontainer.HostConfig{NetworkMode: "none"}, nil, nil, name)
	if cerrdefs.IsConflict(err) {
		return ref, b.awaitImage(ctx, ref)
	}
	if err != nil {
		return "", b.engineErr(err, "runtime image: create build container from %q", image)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = b.cli.ContainerRemove(rctx, created.ID, dcontainer.RemoveOptions{Force: true})
	}()
	tarball, err := b.opts.Runtime.Tar()
	if err != nil {
		return "", err
	}
	if err := b.cli.CopyToContainer(ctx, created.ID, "/", tarball, dcontainer.CopyToContainerOptions{}); err != nil {
		return "", b.engineErr(err, "runtime image: copy primer-runtime into %q", image)
	}
	if _, err := b.cli.ContainerCommit(ctx, created.ID, dcontainer.CommitOptions{
		Reference: ref,
		Comment:   "primer-runtime " + digest[:12] + " on " + image,
		// Podman's commit needs a body; the config only restates the
		// entrypoint every workspace container sets anyway.
		Config: &dcontainer.Config{Entrypoint: []string{RuntimePath}},
	}); err != nil {
		return "", b.engineErr(err, "runtime image: commit %s", ref)
	}
	b.logger.Info("runtime image made", "image", image, "runtime_image", ref)
	b.pruneRuntimeImages(ctx, "primer-runtime/"+shortHex(imageID), ref)
	return ref, nil
}

// pruneRuntimeImages removes the runtime images of repo other than keep:
// those of earlier platform versions. An image a container still uses is
// refused by the engine and stays until that workspace is gone.
func (b *Backend) pruneRuntimeImages(ctx context.Context, repo, keep string) {
	imgs, err := b.cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", repo))})
	if err != nil {
		return
	}
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			if tag == keep || strings.HasSuffix(tag, "/"+keep) || !strings.Contains(tag, repo+":") {
				continue
			}
			if _, err := b.cli.ImageRemove(ctx, tag, image.RemoveOptions{}); err == nil {
				b.logger.Info("old runtime image removed", "runtime_image", tag)
			}
		}
	}
}

func (b *Backend) hasImage(ctx context.Context, ref string) (bool, error) {
	_, err := b.cli.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	}
	return false, b.engineErr(err, "inspect image %s", ref)
}

// awaitImage waits for another process's build of ref.
func (b *Backend) awaitImage(ctx context.Context, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		if ok, err := b.hasImage(ctx, ref); err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return errs.E(errs.Unavailable, "runtime image %s: another build did not finish: %v", ref, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// shortHex is the first 12 hex digits of an image id (sha256:...).
func shortHex(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		id = id[:12]
	}
	return strings.ToLower(id)
}
