package kubernetes_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/errs"
)

// TestPauseResume: a paused workspace has its StatefulSet at 0 replicas,
// no pod, and keeps its PVC and Secret; resumed, it answers with its files.
// Both are idempotent.
func TestPauseResume(t *testing.T) {
	ns := kubernetestest.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	b := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
	if c := b.Capabilities(); !c.Pause {
		t.Fatalf("capabilities %+v: Pause false", c)
	}
	h, token := provision(t, ctx, b, kubernetestest.Template(kubernetestest.BusyboxImage, nil), nil)
	execOut(t, ctx, b, h, token, "sh", "-c", "echo kept > /workspace/f")
	cs, id := b.Clientset(), h.WorkspaceID

	for range 2 {
		if _, err := b.Pause(ctx, h, backend.SnapshotFilesystem); err != nil {
			t.Fatalf("pause: %v", err)
		}
	}
	sts, err := cs.AppsV1().StatefulSets(ns).Get(ctx, kubernetes.Name(id), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("paused: StatefulSet: %v", err)
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 0 {
		t.Errorf("paused: StatefulSet replicas = %v, want 0", sts.Spec.Replicas)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelWorkspace + "=" + id})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("paused: %d pods of the workspace, want 0", len(pods.Items))
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, kubernetes.Name(id), metav1.GetOptions{}); err != nil {
		t.Errorf("paused: PVC: %v", err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Get(ctx, kubernetes.Name(id), metav1.GetOptions{}); err != nil {
		t.Errorf("paused: Secret: %v", err)
	}
	if _, err := b.Endpoint(ctx, h, token); !errs.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "paused") {
		t.Errorf("paused: endpoint err = %v, want Unavailable saying paused", err)
	}
	if _, err := b.Pause(ctx, h, backend.SnapshotFull); !errs.Is(err, errs.Invalid) {
		t.Errorf("pause full: err = %v, want Invalid", err)
	}

	for range 2 {
		h2, err := b.Resume(ctx, h, token, nil)
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		if h2.WorkspaceID != id {
			t.Fatalf("resume: handle %+v", h2)
		}
	}
	if out := execOut(t, ctx, b, h, token, "cat", "/workspace/f"); out != "kept\n" {
		t.Errorf("resumed: cat f = %q, want kept", out)
	}
	// A paused workspace provisioned again (a replacement) runs again.
	if _, err := b.Pause(ctx, h, ""); err != nil {
		t.Fatalf("pause: %v", err)
	}
	if _, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: kubernetestest.Template(kubernetestest.BusyboxImage, nil), Token: token}); err != nil {
		t.Fatalf("provision a paused workspace: %v", err)
	}
	if out := execOut(t, ctx, b, h, token, "cat", "/workspace/f"); out != "kept\n" {
		t.Errorf("provisioned again after pause: cat f = %q, want kept", out)
	}
}

// TestSnapshotArchive: on a cluster without CSI snapshots (the test
// cluster) a snapshot is an archive in the snapshot store; a workspace made
// from it has the files with their modes, owners and links, and is
// independent of its parent. Snapshot is idempotent; DeleteSnapshot
// removes the archive.
func TestSnapshotArchive(t *testing.T) {
	ns := kubernetestest.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
	tmpl := kubernetestest.Template(kubernetestest.BusyboxImage, nil)
	h, token := provision(t, ctx, b, tmpl, nil)
	execOut(t, ctx, b, h, token, "sh", "-c",
		"mkdir -p /workspace/d && echo one > /workspace/d/f && chmod 0640 /workspace/d/f && chown 1234:2345 /workspace/d/f && ln -s d/f /workspace/link && chmod 0710 /workspace/d")

	req := backend.SnapshotRequest{SnapshotID: "snap-" + strings.TrimPrefix(backendtest.NewID(t), "ws-"), TenantID: "t1", Mode: backend.SnapshotFilesystem}
	ref, err := b.Snapshot(ctx, h, req)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	t.Cleanup(func() { _ = b.DeleteSnapshot(context.Background(), ref) })
	if ref.Backend != kubernetes.Type || ref.SnapshotID != req.SnapshotID || ref.Attrs["method"] != "archive" || ref.Bytes <= 0 {
		t.Fatalf("ref = %+v, want an archive of %s with its size", ref, req.SnapshotID)
	}
	dir := kubernetestest.SnapshotDir(t)
	if fi, err := os.Stat(filepath.Join(dir, req.SnapshotID+".tar")); err != nil || fi.Size() != ref.Bytes {
		t.Fatalf("archive: %v (size %v, ref %d)", err, fi, ref.Bytes)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "."+req.SnapshotID+"*")); len(left) != 0 {
		t.Errorf("partial archives left: %v", left)
	}
	// A change after the snapshot is not in it; a second call returns the
	// first capture.
	execOut(t, ctx, b, h, token, "sh", "-c", "echo later > /workspace/later")
	again, err := b.Snapshot(ctx, h, req)
	if err != nil || again.Ref != ref.Ref || again.Bytes != ref.Bytes {
		t.Fatalf("snapshot again = %+v, %v; want %+v", again, err, ref)
	}

	childID, childToken := backendtest.NewID(t), backendtest.NewToken(t)
	ch, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: childID, Template: tmpl, Token: childToken, Snapshot: &ref})
	if err != nil {
		t.Fatalf("provision from snapshot: %v", err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), ch) })
	got := execOut(t, ctx, b, ch, childToken, "sh", "-c",
		"cat /workspace/d/f; stat -c '%a %u %g' /workspace/d/f /workspace/d; readlink /workspace/link; test -e /workspace/later && echo later-leaked || true")
	want := "one\n640 1234 2345\n710 0 0\nd/f\n"
	if got != want {
		t.Errorf("child from snapshot:\n%s\nwant:\n%s", got, want)
	}
	// Children are independent of their parent, both ways.
	execOut(t, ctx, b, ch, childToken, "sh", "-c", "echo child > /workspace/d/f")
	if out := execOut(t, ctx, b, h, token, "cat", "/workspace/d/f"); out != "one\n" {
		t.Errorf("parent after the child's write: %q, want one", out)
	}
	// A replacement of the child (Teardown, then Provision again with the
	// same snapshot) keeps what the child wrote: the archive is extracted
	// into a volume once.
	if err := b.Teardown(ctx, ch); err != nil {
		t.Fatalf("teardown: %v", err)
	}
	if _, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: childID, Template: tmpl, Token: childToken, Snapshot: &ref}); err != nil {
		t.Fatalf("provision again: %v", err)
	}
	if out := execOut(t, ctx, b, ch, childToken, "cat", "/workspace/d/f"); out != "child\n" {
		t.Errorf("child replaced: %q, want child", out)
	}

	for range 2 {
		if err := b.DeleteSnapshot(ctx, ref); err != nil {
			t.Fatalf("delete snapshot: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, req.SnapshotID+".tar")); !os.IsNotExist(err) {
		t.Errorf("archive after delete: %v", err)
	}
	_, err = b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: backendtest.NewID(t), Template: tmpl, Token: backendtest.NewToken(t), Snapshot: &ref})
	if !errs.Is(err, errs.NotFound) {
		t.Errorf("provision from a deleted snapshot: err = %v, want NotFound", err)
	}
	if _, err := b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: req.SnapshotID + "f", Mode: backend.SnapshotFull}); !errs.Is(err, errs.Invalid) {
		t.Errorf("snapshot full: err = %v, want Invalid", err)
	}
}

// TestSnapshotPaused: a paused workspace's volume is archived by running
// it for the capture; it is paused again afterwards (no pod), and a
// workspace made from the snapshot has its files.
func TestSnapshotPaused(t *testing.T) {
	ns := kubernetestest.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	b := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
	tmpl := kubernetestest.Template(kubernetestest.BusyboxImage, nil)
	h, token := provision(t, ctx, b, tmpl, nil)
	execOut(t, ctx, b, h, token, "sh", "-c", "echo paused-file > /workspace/p")
	if _, err := b.Pause(ctx, h, ""); err != nil {
		t.Fatalf("pause: %v", err)
	}
	ref, err := b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: backendtest.NewSnapshotID(t), Mode: backend.SnapshotFilesystem})
	if err != nil {
		t.Fatalf("snapshot of a paused workspace: %v", err)
	}
	t.Cleanup(func() { _ = b.DeleteSnapshot(context.Background(), ref) })
	pods, err := b.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelWorkspace + "=" + h.WorkspaceID})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("after the snapshot of a paused workspace: %d pods, want 0 (paused again)", len(pods.Items))
	}
	childToken := backendtest.NewToken(t)
	ch, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: backendtest.NewID(t), Template: tmpl, Token: childToken, Snapshot: &ref})
	if err != nil {
		t.Fatalf("provision from the snapshot: %v", err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), ch) })
	if out := execOut(t, ctx, b, ch, childToken, "cat", "/workspace/p"); out != "paused-file\n" {
		t.Errorf("child: cat p = %q, want paused-file", out)
	}
}
