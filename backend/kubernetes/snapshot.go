package kubernetes

import (
	"context"
	"os"
	"path/filepath"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	rtclient "github.com/primerhq/primer/runtime/client"
)

// How a snapshot was taken (SnapshotRef.Attrs["method"]).
const (
	// methodCSI is a VolumeSnapshot of the workspace's PVC, taken by the
	// cluster's CSI driver; a workspace made from it gets a PVC whose
	// dataSource is the VolumeSnapshot.
	methodCSI = "csi"
	// methodArchive is a tar archive of the workspace volume, streamed
	// through the runtime into the platform's snapshot store; a workspace
	// made from it has the archive extracted into its volume through its
	// runtime before Provision returns.
	methodArchive = "archive"

	// annotationRestored, on a PVC, names the snapshot whose archive was
	// extracted into it: a Provision of the same workspace later (a
	// replacement after Teardown) keeps the files the workspace has since
	// instead of extracting the archive over them.
	annotationRestored = labelPrefix + "restored-from"
	// LabelSnapshot names the snapshot a VolumeSnapshot is.
	LabelSnapshot = labelPrefix + "snapshot"
)

// SnapshotsNote is what Capabilities says of snapshots on Kubernetes.
const SnapshotsNote = "filesystem: captures the workspace volume (" + Workdir + ") only, as a CSI VolumeSnapshot where the cluster " +
	"has a VolumeSnapshotClass for the volume's driver, otherwise as a tar archive streamed through the runtime into the " +
	"platform's snapshot store (the image needs tar); the container's root filesystem is the image's and is not captured. " +
	"full: not available, a pod's processes cannot be checkpointed."

var (
	_ backend.Snapshotter = (*Backend)(nil)

	snapshotIDPattern = regexp.MustCompile(`^snap-[a-z0-9]{1,40}$`)
)

// Snapshot implements backend.Snapshotter. It captures the workspace
// volume: with a CSI VolumeSnapshot where the cluster can take one of the
// workspace's PVC, otherwise as an archive in the platform's snapshot
// store. It is idempotent on req.SnapshotID: a complete capture of that id
// is returned as it is; a partial one is replaced.
func (b *Backend) Snapshot(ctx context.Context, h backend.Handle, req backend.SnapshotRequest) (backend.SnapshotRef, error) {
	if err := b.checkHandle(h); err != nil {
		return backend.SnapshotRef{}, err
	}
	id := h.WorkspaceID
	if req.Mode != "" && req.Mode != backend.SnapshotFilesystem {
		return backend.SnapshotRef{}, errs.E(errs.Invalid, "workspace %s: snapshot: mode %q is not available on Kubernetes: %s", id, req.Mode, SnapshotsNote)
	}
	if !snapshotIDPattern.MatchString(req.SnapshotID) {
		return backend.SnapshotRef{}, errs.E(errs.Invalid, "workspace %s: snapshot: invalid snapshot id %q", id, req.SnapshotID)
	}
	unlock, err := b.lockFor(h)
	if err != nil {
		return backend.SnapshotRef{}, err
	}
	defer unlock()
	pvc, err := b.cs.CoreV1().PersistentVolumeClaims(b.cfg.Namespace).Get(ctx, Name(id), metav1.GetOptions{})
	if err != nil {
		return backend.SnapshotRef{}, b.apiErr(err, "workspace %s: snapshot: get PVC", id)
	}
	if !b.owns(pvc.Labels, id) {
		return backend.SnapshotRef{}, errs.E(errs.Conflict, "workspace %s: snapshot: PVC %s/%s does not belong to it", id, b.cfg.Namespace, pvc.Name)
	}
	class, err := b.snapshotClass(ctx, pvc)
	if err != nil {
		return backend.SnapshotRef{}, err
	}
	var ref backend.SnapshotRef
	if class != "" {
		ref, err = b.csiSnapshot(ctx, id, req, class, *pvc.Spec.StorageClassName)
	} else {
		ref, err = b.archiveSnapshot(ctx, id, req)
	}
	if err != nil {
		return backend.SnapshotRef{}, err
	}
	b.logger.Info("snapshot taken", "workspace_id", id, "snapshot_id", req.SnapshotID, "method", ref.Attrs["method"], "bytes", ref.Bytes)
	return ref, nil
}

// DeleteSnapshot implements backend.Snapshotter: it deletes the
// VolumeSnapshot or the archive (and any partial archive of the same id).
// One already gone is not an error.
func (b *Backend) DeleteSnapshot(ctx context.Context, ref backend.SnapshotRef) error {
	if err := b.checkRef(ref); err != nil {
		return err
	}
	if ref.Attrs["method"] == methodCSI {
		return b.deleteVolumeSnapshot(ctx, ref)
	}
	return b.deleteArchive(ref.SnapshotID)
}

// checkRef checks a ref given back by the platform: it is this backend's,
// and names a snapshot id and a method this backend makes.
func (b *Backend) checkRef(ref backend.SnapshotRef) error {
	if ref.Backend != Type {
		return errs.E(errs.Invalid, "snapshot %s: taken by backend %q, not %s", ref.SnapshotID, ref.Backend, Type)
	}
	if !snapshotIDPattern.MatchString(ref.SnapshotID) {
		return errs.E(errs.Invalid, "snapshot %q: invalid snapshot id", ref.SnapshotID)
	}
	switch ref.Attrs["method"] {
	case methodCSI:
		if ns := ref.Attrs["namespace"]; ns != b.cfg.Namespace {
			return errs.E(errs.Invalid, "snapshot %s: its VolumeSnapshot is in namespace %q, the provider's is %q", ref.SnapshotID, ns, b.cfg.Namespace)
		}
	case methodArchive:
	default:
		return errs.E(errs.Invalid, "snapshot %s: unknown method %q", ref.SnapshotID, ref.Attrs["method"])
	}
	return nil
}

// restoreArchive fills a new workspace's volume from its snapshot's
// archive, through the runtime at url, once: the PVC is annotated with the
// snapshot afterwards, and one already annotated is left as it is.
func (b *Backend) restoreArchive(ctx context.Context, id, url, token string, ref *backend.SnapshotRef) error {
	pvcs := b.cs.CoreV1().PersistentVolumeClaims(b.cfg.Namespace)
	pvc, err := pvcs.Get(ctx, Name(id), metav1.GetOptions{})
	if err != nil {
		return b.apiErr(err, "workspace %s: get PVC", id)
	}
	if pvc.Annotations[annotationRestored] != "" {
		return nil
	}
	c, err := rtclient.Dial(ctx, url, token)
	if err != nil {
		return errs.E(errs.Unavailable, "workspace %s: restore snapshot %s: connect to the runtime: %w", id, ref.SnapshotID, err)
	}
	defer c.Close()
	if err := b.extractArchive(ctx, c, id, ref); err != nil {
		return err
	}
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[annotationRestored] = ref.SnapshotID
	if _, err := pvcs.Update(ctx, pvc, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return b.apiErr(err, "workspace %s: annotate PVC restored", id)
	}
	return nil
}

// snapshotDir is the platform's snapshot store of this backend: the
// Options' SnapshotDir, or the platform's default data directory's.
func (b *Backend) snapshotDir() string {
	if b.opts.SnapshotDir != "" {
		return b.opts.SnapshotDir
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "primer", "snapshots", Type)
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "primer", "snapshots", Type)
	}
	return filepath.Join(os.TempDir(), "primer-data", "snapshots", Type)
}
