package container

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/go-units"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// A snapshot is one local image, primer-snapshot/<snapshot id>:filesystem,
// holding the whole sandbox: the container's root filesystem as `commit`
// makes it, with the workspace volume's files (which commit leaves out)
// added at the workdir. A sandbox made from it is a container of that image
// with no workspace volume: its workspace files stay in the image's layers
// and what it writes goes to its own copy-on-write layer, as `docker run`
// of a committed image does, so a fork of N costs one capture and N
// container starts, and copies nothing (a volume per child, filled by the
// engine from the image, was a full copy of the workspace per child). Such
// a container is labelled labelLayer; a snapshot of it is a single commit.
//
// A layer sandbox's files are in its container, which Teardown removes: it
// commits the container first as primer-kept/<workspace id>:filesystem and
// makes the workspace's volume, empty, so the next Provision (stale
// recovery's replacement) starts from that image with the volume filled by
// the engine from it, and List sees the torn-down sandbox by its volume.
// The kept image stays until Destroy: its layers are the replacement's, so
// it costs no space, and Podman's forced image removal would remove the
// container too. The replacement has a volume, so a later Teardown commits
// nothing.
//
// The image is the snapshot's only object and the capture's last step (its
// tag appears atomically), so a tagged image is a complete snapshot; the
// staging image and container a crash leaves carry the snapshot's label and
// name, and a retry or DeleteSnapshot removes them. Nothing of a snapshot
// carries the workspace label or a workspace's name, so List, and the
// reconciler after it, never takes a snapshot for an orphan sandbox.

// Labels of snapshot images.
const (
	// LabelSnapshot names the snapshot an image (or a staging container)
	// belongs to.
	LabelSnapshot = labelPrefix + "snapshot"
	// labelWorkdir is the workdir the workspace files were captured at; a
	// sandbox from the snapshot must have the same one.
	labelWorkdir = labelPrefix + "snapshot.workdir"
	// labelRuntime is the digest of the primer-runtime inside the image; a
	// sandbox made from it by a platform of another version gets the
	// current one.
	labelRuntime = labelPrefix + "runtime"
	// labelBaseBytes is the size of the image the snapshot was taken on,
	// so the snapshot's own size is known.
	labelBaseBytes = labelPrefix + "snapshot.base_bytes"
	// labelFrom names the snapshot a workspace container was made from.
	labelFrom = labelPrefix + "snapshot.from"
	// labelLayer is the workdir of a container made from a snapshot
	// without a workspace volume: its workspace files are in its layer.
	labelLayer = labelPrefix + "snapshot.layer"
)

var (
	_ backend.Snapshotter = (*Backend)(nil)
	_ backend.Pauser      = (*Backend)(nil)
)

// snapshotIDPattern is the form of the snapshot ids the server mints.
var snapshotIDPattern = regexp.MustCompile(`^snap-[0-9a-f]{1,64}$`)

// SnapshotImage returns the image a snapshot is kept as.
func SnapshotImage(snapshotID string) string {
	return "primer-snapshot/" + snapshotID + ":" + backend.SnapshotFilesystem
}

// stagingName is the container a capture adds the workspace files in.
func stagingName(snapshotID string) string { return "primer-snapshot-" + snapshotID }

// Snapshot implements backend.Snapshotter: it commits the container (the
// engine pauses it meanwhile) with the workspace's env values blanked, adds
// the workspace volume's files at the workdir in a staging container of that
// commit, and commits that as the snapshot image. A snapshot image that
// exists already is returned as it is.
func (b *Backend) Snapshot(ctx context.Context, h backend.Handle, req backend.SnapshotRequest) (backend.SnapshotRef, error) {
	if err := b.checkHandle(h); err != nil {
		return backend.SnapshotRef{}, err
	}
	id, snapID := h.WorkspaceID, req.SnapshotID
	if !snapshotIDPattern.MatchString(snapID) {
		return backend.SnapshotRef{}, errs.E(errs.Invalid, "workspace %s: snapshot: invalid snapshot id %q", id, snapID)
	}
	if req.Mode != backend.SnapshotFilesystem {
		return backend.SnapshotRef{}, errs.E(errs.Invalid, "workspace %s: snapshot %s: mode %q is not offered: %s", id, snapID, req.Mode, b.snapshotsNote())
	}
	unlock := b.locks.Lock(id)
	defer unlock()
	ref := SnapshotImage(snapID)
	if img, err := b.cli.ImageInspect(ctx, ref); err == nil {
		if img.Config == nil || img.Config.Labels[LabelSnapshot] != snapID {
			return backend.SnapshotRef{}, errs.E(errs.Conflict, "workspace %s: snapshot %s: image %s exists and does not belong to it", id, snapID, ref)
		}
		// A try killed after its last commit left its staging container
		// (which mounts the workspace volume) and images behind.
		b.removeSnapshotObjects(ctx, snapID, false)
		return b.snapshotRef(snapID, img), nil
	} else if !cerrdefs.IsNotFound(err) {
		return backend.SnapshotRef{}, b.engineErr(err, "workspace %s: snapshot %s: inspect image", id, snapID)
	}

	info, err := b.cli.ContainerInspect(ctx, Name(id))
	if err != nil {
		return backend.SnapshotRef{}, b.engineErr(err, "workspace %s: snapshot %s: inspect container", id, snapID)
	}
	if info.Config == nil || info.Config.Labels[LabelWorkspace] != id {
		return backend.SnapshotRef{}, errs.E(errs.Conflict, "workspace %s: snapshot %s: container %s does not belong to it", id, snapID, Name(id))
	}
	if !sameContainer(h, info) {
		return backend.SnapshotRef{}, errs.E(errs.NotFound, "workspace %s: snapshot %s: container %s was replaced outside the platform", id, snapID, Name(id))
	}
	workdir, layer := "", false
	for _, m := range info.Mounts {
		if m.Name == Name(id) {
			workdir = m.Destination
		}
	}
	if workdir == "" {
		workdir = layerWorkdir(info)
		layer = workdir != ""
	}
	if workdir == "" || workdir == "/" {
		return backend.SnapshotRef{}, errs.E(errs.Conflict, "workspace %s: snapshot %s: container %s has no workspace volume mounted", id, snapID, Name(id))
	}
	base, err := b.cli.ImageInspect(ctx, info.Image)
	if err != nil {
		return backend.SnapshotRef{}, b.engineErr(err, "workspace %s: snapshot %s: inspect image %s", id, snapID, info.Image)
	}
	// What a crashed try left is made again.
	b.removeSnapshotObjects(ctx, snapID, false)

	start := time.Now()
	labels := map[string]string{
		LabelManaged:  "true",
		LabelSnapshot: snapID,
		LabelTenant:   orDefault(req.TenantID),
		labelWorkdir:  workdir,
		// Commit keeps the container's labels; blank the workspace's own
		// so nothing of the snapshot is taken for the workspace's.
		LabelWorkspace: "",
		labelLayer:     "",
	}
	labels[labelRuntime] = runtimeOf(info)
	labels[labelBaseBytes] = strconv.FormatInt(base.Size, 10)
	if b.opts.Installation != "" {
		labels[LabelInstallation] = b.opts.Installation
	}
	changes := commitChanges(info.Config.Env, baseEnv(base), labels, b.cfg.Runtime == EnginePodman)
	if layer {
		// The workspace files are in the container's layer: one commit,
		// tagged as it is made, is the whole snapshot.
		if _, err := b.cli.ContainerCommit(ctx, info.ID, dcontainer.CommitOptions{
			Reference: ref,
			Comment:   "primer snapshot " + snapID + " of " + id,
			Pause:     true,
			Changes:   changes,
			Config:    &dcontainer.Config{Entrypoint: []string{RuntimePath}},
		}); err != nil {
			return backend.SnapshotRef{}, b.engineErr(err, "workspace %s: snapshot %s: commit container", id, snapID)
		}
		return b.snapshotTaken(ctx, id, snapID, start)
	}
	// The staging container starts from the container's root filesystem:
	// a commit of it, or, when nothing changed outside the workspace (the
	// overlay upper directory, read on this host, says so in
	// microseconds), the image it runs, which spares a commit of nothing
	// (0.3 to 0.6 s on a loaded engine, a sixth of the capture). The env
	// values and labels a first commit would set are then set by the last.
	stageImage, lastChanges := "", []string(nil)
	if cs, ok := b.upperChanges(info, workdir); ok && len(cs) == 0 {
		stageImage, lastChanges = info.Image, changes
	} else {
		stage, err := b.cli.ContainerCommit(ctx, info.ID, dcontainer.CommitOptions{
			Comment: "primer snapshot " + snapID + " of " + id + " (root filesystem)",
			Pause:   true,
			Changes: changes,
			// Podman's commit needs a body.
			Config: &dcontainer.Config{Entrypoint: []string{RuntimePath}},
		})
		if err != nil {
			return backend.SnapshotRef{}, b.engineErr(err, "workspace %s: snapshot %s: commit container", id, snapID)
		}
		stageImage = stage.ID
	}
	committed := time.Now()

	// The staging container mounts the workspace volume: it must be gone
	// however this ends, or the workspace could not be destroyed. The
	// staging image goes too on failure; on success it is the snapshot
	// image's parent, which keeps it.
	taken := false
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if !taken {
			b.removeSnapshotObjects(rctx, snapID, false)
		} else if err := b.cli.ContainerRemove(rctx, stagingName(snapID), dcontainer.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			b.logger.Warn("snapshot staging container not removed", "snapshot_id", snapID, "err", err)
		}
	}()
	stageLabels := maps.Clone(info.Config.Labels)
	if stageLabels == nil {
		stageLabels = map[string]string{}
	}
	maps.Copy(stageLabels, labels)
	if err := b.stageWorkspace(ctx, id, snapID, stageImage, workdir, info.Config.WorkingDir, stageLabels); err != nil {
		return backend.SnapshotRef{}, err
	}
	copied := time.Now()
	if _, err := b.cli.ContainerCommit(ctx, stagingName(snapID), dcontainer.CommitOptions{
		Reference: ref,
		Comment:   "primer snapshot " + snapID + " of " + id,
		Changes:   lastChanges,
		Config:    &dcontainer.Config{Entrypoint: []string{RuntimePath}},
	}); err != nil {
		return backend.SnapshotRef{}, b.engineErr(err, "workspace %s: snapshot %s: commit snapshot image", id, snapID)
	}
	taken = true
	return b.snapshotTaken(ctx, id, snapID, start, committed, copied)
}

// snapshotTaken inspects the snapshot image a capture of workspace id made
// and logs the capture's steps' times (marks: started, root filesystem
// committed, workspace files copied).
func (b *Backend) snapshotTaken(ctx context.Context, id, snapID string, marks ...time.Time) (backend.SnapshotRef, error) {
	ref := SnapshotImage(snapID)
	img, err := b.cli.ImageInspect(ctx, ref)
	if err != nil {
		return backend.SnapshotRef{}, b.engineErr(err, "workspace %s: snapshot %s: inspect image", id, snapID)
	}
	out := b.snapshotRef(snapID, img)
	args := []any{"workspace_id", id, "snapshot_id", snapID, "image", ref, "bytes", out.Bytes, "total_ms", time.Since(marks[0]).Milliseconds()}
	if len(marks) == 3 {
		args = append(args, "commit_ms", marks[1].Sub(marks[0]).Milliseconds(), "copy_ms", marks[2].Sub(marks[1]).Milliseconds())
	}
	b.logger.Info("snapshot taken", args...)
	return out, nil
}

// snapshotRef describes the snapshot image img. Bytes is what the snapshot
// adds to the image it was taken on (the sandbox's changes and its
// workspace files), or the image's size when the engine does not say.
func (b *Backend) snapshotRef(snapID string, img image.InspectResponse) backend.SnapshotRef {
	var labels map[string]string
	if img.Config != nil {
		labels = img.Config.Labels
	}
	size := img.Size
	if base, err := strconv.ParseInt(labels[labelBaseBytes], 10, 64); err == nil && base > 0 && base < size {
		size -= base
	}
	return backend.SnapshotRef{
		Backend:    Type,
		SnapshotID: snapID,
		Mode:       backend.SnapshotFilesystem,
		Ref:        SnapshotImage(snapID),
		Bytes:      size,
		Attrs: map[string]string{
			"image_id": img.ID,
			"engine":   b.cfg.Runtime,
			"workdir":  labels[labelWorkdir],
		},
	}
}

// runtimeOf is the digest (12 hex digits) of the primer-runtime a workspace
// container runs: its label where it has one (a sandbox made from a
// snapshot), else its runtime image's tag.
func runtimeOf(info dcontainer.InspectResponse) string {
	if info.Config == nil {
		return ""
	}
	if v := info.Config.Labels[labelRuntime]; v != "" {
		return v
	}
	if strings.HasPrefix(info.Config.Image, "primer-runtime/") {
		if _, tag, ok := strings.Cut(info.Config.Image, ":"); ok {
			return tag
		}
	}
	return ""
}

// baseEnv is the env an image's containers start with.
func baseEnv(img image.InspectResponse) []string {
	if img.Config == nil {
		return nil
	}
	return img.Config.Env
}

// snapshotSource is where the staging container mounts the workspace
// volume it copies from.
const snapshotSource = "/.primer/snapshot-source"

// stageWorkspace copies the workspace volume's files into the root
// filesystem of a staging container of stageImage, at workdir (made when
// the image lacks it, as the engine made it for the volume's mount point),
// with `cp -a` run in it. The container has the workspace's labels and
// working directory, which its commit keeps, the workspace's hardening
// and no network; the volume is mounted read-only. The engine's archive
// API instead (the workdir's archive from the workspace container into a
// staging container never started) carries the files through the
// platform, and was slower on Docker than this start and copy (3.8 s
// against 3.2 s for 100 MiB at load 12); Podman's gives every file it
// writes the caller's owner.
func (b *Backend) stageWorkspace(ctx context.Context, id, snapID, stageImage, workdir, wd string, labels map[string]string) error {
	pids := int64(64)
	staging, err := b.cli.ContainerCreate(ctx,
		&dcontainer.Config{
			Image:      stageImage,
			User:       "0:0",
			Entrypoint: []string{"sh", "-c", `mkdir -p "$1" && cp -a "$0"/. "$1"/`, snapshotSource, workdir},
			Cmd:        []string{},
			WorkingDir: wd,
			Labels:     labels,
		},
		&dcontainer.HostConfig{
			NetworkMode: "none",
			Mounts:      []mount.Mount{{Type: mount.TypeVolume, Source: Name(id), Target: snapshotSource, ReadOnly: true}},
			CapDrop:     []string{"ALL"},
			CapAdd:      []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"},
			SecurityOpt: []string{"no-new-privileges"},
			Resources: dcontainer.Resources{
				PidsLimit: &pids,
				// Podman's default ulimits ask for more than some hosts
				// allow (see create).
				Ulimits: []*units.Ulimit{
					{Name: "nofile", Soft: ulimitNofile, Hard: ulimitNofile},
					{Name: "nproc", Soft: ulimitNproc, Hard: ulimitNproc},
				},
			},
		}, nil, nil, stagingName(snapID))
	if err != nil {
		return b.engineErr(err, "workspace %s: snapshot %s: create staging container", id, snapID)
	}
	waitC, errC := b.cli.ContainerWait(ctx, staging.ID, dcontainer.WaitConditionNextExit)
	if err := b.cli.ContainerStart(ctx, staging.ID, dcontainer.StartOptions{}); err != nil {
		return b.engineErr(err, "workspace %s: snapshot %s: start staging container", id, snapID)
	}
	select {
	case res := <-waitC:
		if res.StatusCode != 0 {
			return b.withLogs(ctx, staging.ID, errs.E(errs.Unavailable, "workspace %s: snapshot %s: copy workspace files: exit code %d", id, snapID, res.StatusCode))
		}
	case err := <-errC:
		return b.engineErr(err, "workspace %s: snapshot %s: wait for staging container", id, snapID)
	}
	return nil
}

// defaultPath is the PATH a snapshot's image gets when the image it was
// taken on sets none (the engine gave the workspace this one).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// commitChanges are the Dockerfile instructions a capture's commit applies:
// every variable of the workspace's env (its runtime token, the template's
// env, which may hold secrets) set back to the image's value, or blanked
// where the image has none, since a commit keeps the container's env and
// offers no way to drop a variable; and the snapshot's labels. One
// variable per instruction: Podman reads only one, and takes its value as
// written (Docker unquotes it).
func commitChanges(env, base []string, labels map[string]string, podman bool) []string {
	baseVals := map[string]string{}
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		baseVals[k] = v
	}
	value := func(v string) string {
		switch {
		case podman && strings.ContainsAny(v, "\n\r"):
			return ""
		case podman, v == "":
			return v
		}
		return strconv.Quote(v)
	}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "" || strings.ContainsAny(k, " \t\n\"'") {
			continue
		}
		v, ok := baseVals[k]
		if !ok && k == "PATH" {
			v = defaultPath
		}
		out = append(out, "ENV "+k+"="+value(v))
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, "LABEL "+k+"="+value(labels[k]))
	}
	return out
}

// DeleteSnapshot implements backend.Snapshotter: it removes the snapshot
// image and what a crashed capture left of it. An image a container still
// runs from (a sandbox made from the snapshot) is untagged, and the engine
// frees its layers with the last such container.
func (b *Backend) DeleteSnapshot(ctx context.Context, ref backend.SnapshotRef) error {
	if ref.Backend != "" && ref.Backend != Type {
		return errs.E(errs.Invalid, "snapshot %s: is a %s snapshot, not a %s one", ref.SnapshotID, ref.Backend, Type)
	}
	if !snapshotIDPattern.MatchString(ref.SnapshotID) {
		return errs.E(errs.Invalid, "snapshot %q: invalid snapshot id", ref.SnapshotID)
	}
	return b.removeSnapshotObjects(ctx, ref.SnapshotID, true)
}

// removeSnapshotObjects removes the staging container of a snapshot and
// its staging images, and with all its tagged image too. Errors are
// returned only for the tagged image, which a caller must know is gone.
func (b *Backend) removeSnapshotObjects(ctx context.Context, snapID string, all bool) error {
	if err := b.cli.ContainerRemove(ctx, stagingName(snapID), dcontainer.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		b.logger.Debug("snapshot staging container not removed", "snapshot_id", snapID, "err", err)
	}
	if all {
		// Docker's forced removal of an image a container runs from only
		// untags it; Podman's removes the containers too, which would end
		// every sandbox made from the snapshot. So on Podman an image in
		// use stays, and the delete is a Conflict the reconciler tries
		// again until the last such sandbox is gone.
		force := b.cfg.Runtime != EnginePodman
		_, err := b.cli.ImageRemove(ctx, SnapshotImage(snapID), image.RemoveOptions{Force: force, PruneChildren: true})
		switch {
		case err == nil, cerrdefs.IsNotFound(err):
		case !force && cerrdefs.IsConflict(err):
			return errs.E(errs.Conflict, "snapshot %s: in use by a sandbox made from it; removed once none is", snapID)
		default:
			return b.engineErr(err, "snapshot %s: remove image", snapID)
		}
	}
	// Staging images are untagged and labelled with the snapshot.
	imgs, err := b.cli.ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSnapshot+"="+snapID))})
	if err != nil {
		b.logger.Debug("snapshot staging images not listed", "snapshot_id", snapID, "err", err)
		return nil
	}
	for _, img := range imgs {
		if tagged(img.RepoTags) && !all {
			continue
		}
		if _, err := b.cli.ImageRemove(ctx, img.ID, image.RemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
			// The snapshot image is its child: it goes with it.
			b.logger.Debug("snapshot staging image not removed", "snapshot_id", snapID, "image", img.ID, "err", err)
		}
	}
	return nil
}

// tagged reports whether an image listed with tags has a real one: Docker
// (20.10 at least) lists an untagged image with the tag "<none>:<none>",
// and a staging image a killed capture left, taken for a tagged one,
// stayed for ever.
func tagged(tags []string) bool {
	for _, t := range tags {
		if t != "<none>:<none>" {
			return true
		}
	}
	return false
}

// snapshotImageFor checks the snapshot a sandbox is provisioned from and
// returns its image and whether that image's primer-runtime is another
// version than this platform's.
func (b *Backend) snapshotImageFor(ctx context.Context, req backend.ProvisionRequest, t Template) (string, bool, error) {
	s := req.Snapshot
	if s.Backend != Type {
		return "", false, errs.E(errs.Invalid, "workspace %s: snapshot %s is a %s snapshot, not a %s one", req.WorkspaceID, s.SnapshotID, s.Backend, Type)
	}
	if s.Mode != backend.SnapshotFilesystem {
		return "", false, errs.E(errs.Invalid, "workspace %s: snapshot %s: mode %q is not offered: %s", req.WorkspaceID, s.SnapshotID, s.Mode, b.snapshotsNote())
	}
	ref := SnapshotImage(s.SnapshotID)
	img, err := b.cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", false, b.engineErr(err, "workspace %s: snapshot %s: image %s", req.WorkspaceID, s.SnapshotID, ref)
	}
	var labels map[string]string
	if img.Config != nil {
		labels = img.Config.Labels
	}
	switch {
	case labels[LabelSnapshot] != s.SnapshotID:
		return "", false, errs.E(errs.Conflict, "workspace %s: snapshot %s: image %s does not belong to it", req.WorkspaceID, s.SnapshotID, ref)
	case labels[LabelTenant] != tenantOf(req):
		return "", false, errs.E(errs.Forbidden, "workspace %s: snapshot %s belongs to another tenant", req.WorkspaceID, s.SnapshotID)
	case labels[labelWorkdir] != t.Workdir:
		return "", false, errs.Field("workdir", "workspace %s: snapshot %s was taken with workdir %s; the template's is %s", req.WorkspaceID, s.SnapshotID, labels[labelWorkdir], t.Workdir)
	}
	digest, err := b.opts.Runtime.Digest()
	if err != nil {
		return "", false, err
	}
	return ref, labels[labelRuntime] != digest[:12], nil
}

// snapshotsNote says why full mode is missing.
func (b *Backend) snapshotsNote() string {
	if b.cfg.Runtime != EnginePodman {
		return "full: memory snapshots (CRIU checkpoint) are offered on Podman only"
	}
	return "full: " + criuNote()
}
