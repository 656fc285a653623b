package kubernetes

import (
	"context"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// CSI snapshots are the snapshot.storage.k8s.io API of the external
// snapshotter, whose types client-go does not have: they are used through
// the dynamic client, which needs no other module.
const snapshotGroup = "snapshot.storage.k8s.io"

var (
	snapshotClassGVR  = schema.GroupVersionResource{Group: snapshotGroup, Version: "v1", Resource: "volumesnapshotclasses"}
	volumeSnapshotGVR = schema.GroupVersionResource{Group: snapshotGroup, Version: "v1", Resource: "volumesnapshots"}
)

// annotationDefaultSnapshotClass marks a cluster's default
// VolumeSnapshotClass (of its driver).
const annotationDefaultSnapshotClass = "snapshot.storage.kubernetes.io/is-default-class"

// VolumeSnapshotName is the name of snapshot snapID's VolumeSnapshot.
func VolumeSnapshotName(snapID string) string { return "primer-" + snapID }

// snapshotClass returns the VolumeSnapshotClass that can snapshot pvc: one
// whose driver provisions the PVC's StorageClass, the driver's default
// first. "" means none (no snapshot API on the cluster, no class for the
// driver, no right to list classes): the backend then archives the volume
// through the runtime instead.
func (b *Backend) snapshotClass(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, error) {
	if b.dyn == nil || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return "", nil
	}
	sc, err := b.cs.StorageV1().StorageClasses().Get(ctx, *pvc.Spec.StorageClassName, metav1.GetOptions{})
	if err != nil {
		b.logger.Debug("no StorageClass to match a VolumeSnapshotClass with; archiving", "pvc", pvc.Name, "err", err)
		return "", nil
	}
	l, err := b.dyn.Resource(snapshotClassGVR).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err), apierrors.IsMethodNotSupported(err):
		return "", nil
	case err != nil:
		return "", b.apiErr(err, "list VolumeSnapshotClasses")
	}
	return pickSnapshotClass(l.Items, sc.Provisioner), nil
}

// pickSnapshotClass returns the class of classes for driver, the one
// marked default first; "" when there is none.
func pickSnapshotClass(classes []unstructured.Unstructured, driver string) string {
	found := ""
	for _, c := range classes {
		if d, _, _ := unstructured.NestedString(c.Object, "driver"); d != driver {
			continue
		}
		if c.GetAnnotations()[annotationDefaultSnapshotClass] == "true" {
			return c.GetName()
		}
		if found == "" {
			found = c.GetName()
		}
	}
	return found
}

// csiSnapshot takes (or, on a retry, finds) a VolumeSnapshot of the
// workspace's PVC with class and waits until it is ready to use. One that
// fails is deleted, so no VolumeSnapshot of a snapshot that failed is
// left for a later call to take as complete.
func (b *Backend) csiSnapshot(ctx context.Context, id string, req backend.SnapshotRequest, class, storageClass string) (backend.SnapshotRef, error) {
	vs := b.dyn.Resource(volumeSnapshotGVR).Namespace(b.cfg.Namespace)
	name := VolumeSnapshotName(req.SnapshotID)
	labels := map[string]string{LabelManaged: "true", LabelSnapshot: req.SnapshotID, LabelTenant: req.TenantID, "app.kubernetes.io/managed-by": "primer"}
	if b.opts.Installation != "" {
		labels[LabelInstallation] = b.opts.Installation
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snapshotGroup + "/v1",
		"kind":       "VolumeSnapshot",
		"metadata":   map[string]any{"name": name, "namespace": b.cfg.Namespace},
		"spec": map[string]any{
			"volumeSnapshotClassName": class,
			"source":                  map[string]any{"persistentVolumeClaimName": Name(id)},
		},
	}}
	obj.SetLabels(labels)
	if _, err := vs.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return backend.SnapshotRef{}, b.apiErr(err, "workspace %s: snapshot %s: create VolumeSnapshot", id, req.SnapshotID)
	}
	delay := 200 * time.Millisecond
	for {
		cur, err := vs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return backend.SnapshotRef{}, b.apiErr(err, "workspace %s: snapshot %s: get VolumeSnapshot", id, req.SnapshotID)
		}
		if cur.GetLabels()[LabelSnapshot] != req.SnapshotID {
			return backend.SnapshotRef{}, errs.E(errs.Conflict, "workspace %s: snapshot %s: VolumeSnapshot %s/%s exists and is not this snapshot's", id, req.SnapshotID, b.cfg.Namespace, name)
		}
		if src, _, _ := unstructured.NestedString(cur.Object, "spec", "source", "persistentVolumeClaimName"); src != Name(id) {
			return backend.SnapshotRef{}, errs.E(errs.Conflict, "workspace %s: snapshot %s: VolumeSnapshot %s/%s is of PVC %q", id, req.SnapshotID, b.cfg.Namespace, name, src)
		}
		if msg, ok, _ := unstructured.NestedString(cur.Object, "status", "error", "message"); ok && msg != "" {
			_ = vs.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
			return backend.SnapshotRef{}, errs.E(errs.Unavailable, "workspace %s: snapshot %s: VolumeSnapshot %s failed: %s", id, req.SnapshotID, name, msg)
		}
		if ready, _, _ := unstructured.NestedBool(cur.Object, "status", "readyToUse"); ready {
			size, _, _ := unstructured.NestedString(cur.Object, "status", "restoreSize")
			var bytes int64
			if q, err := resource.ParseQuantity(size); err == nil {
				bytes = q.Value()
			}
			return backend.SnapshotRef{
				Backend: Type, SnapshotID: req.SnapshotID, Mode: backend.SnapshotFilesystem,
				Ref: b.cfg.Namespace + "/" + name, Bytes: bytes,
				Attrs: map[string]string{
					"method": methodCSI, "namespace": b.cfg.Namespace, "volumesnapshot": name,
					"class": class, "storage_class": storageClass, "restore_size": strconv.FormatInt(bytes, 10),
				},
			}, nil
		}
		select {
		case <-ctx.Done():
			return backend.SnapshotRef{}, errs.E(errs.Timeout, "workspace %s: snapshot %s: VolumeSnapshot %s not ready to use: %v", id, req.SnapshotID, name, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// deleteVolumeSnapshot deletes the snapshot's VolumeSnapshot.
func (b *Backend) deleteVolumeSnapshot(ctx context.Context, ref backend.SnapshotRef) error {
	if b.dyn == nil {
		return errs.E(errs.Unavailable, "snapshot %s: no dynamic client", ref.SnapshotID)
	}
	err := b.dyn.Resource(volumeSnapshotGVR).Namespace(b.cfg.Namespace).Delete(ctx, VolumeSnapshotName(ref.SnapshotID), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return b.apiErr(err, "snapshot %s: delete VolumeSnapshot", ref.SnapshotID)
	}
	return nil
}

// fromVolumeSnapshot makes the workspace's PVC of m a copy of ref's
// VolumeSnapshot: its dataSource, and at least the snapshot's size.
func fromVolumeSnapshot(m *Manifests, ref *backend.SnapshotRef) {
	m.PVC.Spec.DataSource = &corev1.TypedLocalObjectReference{
		APIGroup: ptr(snapshotGroup), Kind: "VolumeSnapshot", Name: VolumeSnapshotName(ref.SnapshotID),
	}
	if n, err := strconv.ParseInt(ref.Attrs["restore_size"], 10, 64); err == nil && n > 0 {
		want := *resource.NewQuantity(n, resource.BinarySI)
		if cur := m.PVC.Spec.Resources.Requests[corev1.ResourceStorage]; cur.Cmp(want) < 0 {
			m.PVC.Spec.Resources.Requests[corev1.ResourceStorage] = want
		}
	}
	if c := ref.Attrs["storage_class"]; c != "" && m.PVC.Spec.StorageClassName == nil {
		m.PVC.Spec.StorageClassName = ptr(c)
	}
}
