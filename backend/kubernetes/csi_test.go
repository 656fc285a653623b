package kubernetes

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"

	"github.com/primerhq/primer/backend"
)

func snapshotClassObject(name, driver string, isDefault bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snapshotGroup + "/v1", "kind": "VolumeSnapshotClass",
		"metadata": map[string]any{"name": name}, "driver": driver, "deletionPolicy": "Delete",
	}}
	if isDefault {
		u.SetAnnotations(map[string]string{annotationDefaultSnapshotClass: "true"})
	}
	return u
}

// The CSI path, on fake clients: the test cluster has no CSI snapshot
// support (no snapshot API, no CSI driver), so what the backend asks of the
// snapshot API is checked here. A cluster with a VolumeSnapshotClass for
// the PVC's driver gets a VolumeSnapshot of the PVC, ready before Snapshot
// returns; a workspace made from it gets a PVC whose dataSource is the
// VolumeSnapshot, at least the snapshot's size; DeleteSnapshot deletes it.
// Without a class for the driver, or without the snapshot API, there is no
// class (the backend archives through the runtime instead).
func TestCSISnapshot(t *testing.T) {
	const ns, id, snapID = "ws-ns", "ws-1a2b", "snap-9f8e"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: Name(id), Namespace: ns, Labels: map[string]string{LabelWorkspace: id, LabelManaged: "true"}},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: ptr("csi-sc")},
	}
	cs := fake.NewClientset(pvc,
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "csi-sc"}, Provisioner: "hostpath.csi.k8s.io"},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Provisioner: "rancher.io/local-path"})
	lists := map[schema.GroupVersionResource]string{snapshotClassGVR: "VolumeSnapshotClassList", volumeSnapshotGVR: "VolumeSnapshotList"}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), lists,
		snapshotClassObject("other", "other.csi.k8s.io", true),
		snapshotClassObject("hostpath-plain", "hostpath.csi.k8s.io", false),
		snapshotClassObject("hostpath-default", "hostpath.csi.k8s.io", true))
	// The snapshot controller: a VolumeSnapshot is ready as it is made.
	dyn.PrependReactor("create", "volumesnapshots", func(a ktesting.Action) (bool, kruntime.Object, error) {
		u := a.(ktesting.CreateAction).GetObject().(*unstructured.Unstructured)
		_ = unstructured.SetNestedField(u.Object, map[string]any{"readyToUse": true, "restoreSize": "48Mi"}, "status")
		return false, nil, nil
	})
	b := &Backend{cfg: ProviderConfig{Namespace: ns}, cs: cs, dyn: dyn, logger: slog.New(slog.DiscardHandler), forwards: map[string]*forward{}}

	ref, err := b.Snapshot(ctx, b.handle(id), backend.SnapshotRequest{SnapshotID: snapID, TenantID: "t1", Mode: backend.SnapshotFilesystem})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if ref.Attrs["method"] != methodCSI || ref.Attrs["class"] != "hostpath-default" || ref.Attrs["storage_class"] != "csi-sc" || ref.Bytes != 48<<20 {
		t.Fatalf("ref = %+v, want a CSI snapshot of class hostpath-default, 48Mi", ref)
	}
	vs, err := dyn.Resource(volumeSnapshotGVR).Namespace(ns).Get(ctx, VolumeSnapshotName(snapID), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("VolumeSnapshot: %v", err)
	}
	if src, _, _ := unstructured.NestedString(vs.Object, "spec", "source", "persistentVolumeClaimName"); src != Name(id) {
		t.Errorf("VolumeSnapshot source = %q, want %s", src, Name(id))
	}
	if vs.GetLabels()[LabelSnapshot] != snapID || vs.GetLabels()[LabelTenant] != "t1" {
		t.Errorf("VolumeSnapshot labels = %v", vs.GetLabels())
	}
	if len(vs.GetOwnerReferences()) != 0 {
		t.Errorf("VolumeSnapshot has owners %v: it must outlive its workspace", vs.GetOwnerReferences())
	}
	// Idempotent: the second call finds the first's VolumeSnapshot.
	if again, err := b.Snapshot(ctx, b.handle(id), backend.SnapshotRequest{SnapshotID: snapID, TenantID: "t1"}); err != nil || again.Ref != ref.Ref {
		t.Errorf("snapshot again = %+v, %v", again, err)
	}

	m := &Manifests{PVC: &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
	}}}
	fromVolumeSnapshot(m, &ref)
	ds := m.PVC.Spec.DataSource
	if ds == nil || ds.Kind != "VolumeSnapshot" || ds.Name != VolumeSnapshotName(snapID) || ds.APIGroup == nil || *ds.APIGroup != snapshotGroup {
		t.Errorf("child PVC dataSource = %+v", ds)
	}
	if q := m.PVC.Spec.Resources.Requests[corev1.ResourceStorage]; q.Value() != 48<<20 {
		t.Errorf("child PVC size = %s, want the snapshot's 48Mi", q.String())
	}
	if sc := m.PVC.Spec.StorageClassName; sc == nil || *sc != "csi-sc" {
		t.Errorf("child PVC storage class = %v, want csi-sc", sc)
	}

	for range 2 {
		if err := b.DeleteSnapshot(ctx, ref); err != nil {
			t.Fatalf("delete snapshot: %v", err)
		}
	}
	if _, err := dyn.Resource(volumeSnapshotGVR).Namespace(ns).Get(ctx, VolumeSnapshotName(snapID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("VolumeSnapshot after delete: %v", err)
	}
	other := ref
	other.Attrs = map[string]string{"method": methodCSI, "namespace": "elsewhere"}
	if err := b.DeleteSnapshot(ctx, other); err == nil {
		t.Error("delete of a VolumeSnapshot in another namespace: no error")
	}

	// No class for the PVC's driver; no snapshot API at all.
	pvc.Spec.StorageClassName = ptr("plain")
	if c, err := b.snapshotClass(ctx, pvc); err != nil || c != "" {
		t.Errorf("class for local-path = %q, %v; want none", c, err)
	}
	pvc.Spec.StorageClassName = ptr("csi-sc")
	b.dyn = dynfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), lists)
	b.dyn.(*dynfake.FakeDynamicClient).PrependReactor("list", "volumesnapshotclasses", func(ktesting.Action) (bool, kruntime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: snapshotGroup, Resource: "volumesnapshotclasses"}, "")
	})
	if c, err := b.snapshotClass(ctx, pvc); err != nil || c != "" {
		t.Errorf("class without the snapshot API = %q, %v; want none", c, err)
	}
}
