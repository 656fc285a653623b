package kubernetes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
)

// TestRestoreEndpointWaits: a caller that asks for the runtime's endpoint
// while Restore makes the pod again (a probe, an exec through the API)
// gets the new pod's, which answers, rather than an error about the old
// pod's deletion; on every reachability (the port-forward is made again to
// the new pod). The new pod has none of the old one's /tmp.
func TestRestoreEndpointWaits(t *testing.T) {
	ns := kubernetestest.Namespace(t)
	for _, reach := range []string{kubernetes.ReachPodIP, kubernetes.ReachService, kubernetes.ReachPortForward} {
		t.Run(reach, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			b := kubernetestest.Backend(t, ns, reach, "")
			tmpl := kubernetestest.Template(kubernetestest.BusyboxImage, nil)
			h, token := provision(t, ctx, b, tmpl, nil)
			execOut(t, ctx, b, h, token, "touch", "/tmp/mark")
			pods := b.Clientset().CoreV1().Pods(ns)
			old, err := pods.Get(ctx, kubernetes.PodName(h.WorkspaceID), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}

			type result struct {
				remade bool
				err    error
			}
			done := make(chan result, 1)
			go func() {
				remade, err := b.Restore(ctx, h, backend.ProvisionRequest{WorkspaceID: h.WorkspaceID, Template: tmpl, Token: token})
				done <- result{remade, err}
			}()
			awaitDeleting(t, ctx, b, ns, old)
			out := execOut(t, ctx, b, h, token, "sh", "-c", "test -e /tmp/mark && echo kept || echo gone")
			if strings.TrimSpace(out) != "gone" {
				t.Errorf("/tmp/mark after the restore: %s; want gone", out)
			}
			if r := <-done; r.err != nil || !r.remade {
				t.Fatalf("restore = %v, %v; want remade", r.remade, r.err)
			}
			now, err := pods.Get(ctx, kubernetes.PodName(h.WorkspaceID), metav1.GetOptions{})
			if err != nil || now.UID == old.UID {
				t.Errorf("pod after restore = %v, %v; want another than %s", now.UID, err, old.UID)
			}
		})
	}
}

// awaitDeleting returns once pod is being deleted or gone.
func awaitDeleting(t *testing.T, ctx context.Context, b *kubernetes.Backend, ns string, pod *corev1.Pod) {
	t.Helper()
	pods := b.Clientset().CoreV1().Pods(ns)
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String(), ResourceVersion: pod.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if ev.Type == watch.Deleted || ok && (p.UID != pod.UID || p.DeletionTimestamp != nil) {
			return
		}
	}
	t.Fatalf("pod %s: the watch ended before its deletion: %v", pod.Name, ctx.Err())
}
