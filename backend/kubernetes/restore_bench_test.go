//go:build bench

package kubernetes_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/runtime/protocol"
)

// TestBenchRestore measures a Kubernetes reset (Restore) on the cluster
// of KUBECONFIG, against raw baselines taken in the same run on the same
// workspace, taking turns:
//
//   - remade (a file written in /tmp): Restore, which finds the change,
//     deletes the pod, waits for the StatefulSet's new pod and its runtime
//     and empties the volume, against the raw delete of the pod with
//     client-go and a watch until the new pod is Ready;
//   - unchanged (a file written in the workspace only): Restore, which
//     asks the pod's runtime for changes and keeps the pod, against one
//     exec of `true` through the runtime.
func TestBenchRestore(t *testing.T) {
	ns := kubernetestest.Namespace(t)
	b := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	id, token := backendtest.NewID(t), backendtest.NewToken(t)
	req := backend.ProvisionRequest{WorkspaceID: id, Template: kubernetestest.Template(kubernetestest.BusyboxImage, nil), Token: token}
	h, err := b.Provision(ctx, req)
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
	run := func(script string) {
		t.Helper()
		c := backendtest.Dial(ctx, t, b, h, token)
		defer c.Close()
		res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", script}}, nil, nil)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: %+v, %v", script, res, err)
		}
	}
	restore := func(wantRemade bool) time.Duration {
		t.Helper()
		start := time.Now()
		remade, err := b.Restore(ctx, h, req)
		took := time.Since(start)
		if err != nil || remade != wantRemade {
			t.Fatalf("restore = %v, %v; want remade %v", remade, err, wantRemade)
		}
		if err := b.RecordBase(ctx, h); err != nil {
			t.Fatalf("record base: %v", err)
		}
		return took
	}
	if err := b.RecordBase(ctx, h); err != nil {
		t.Fatalf("record base: %v", err)
	}
	const n = 7
	var remade, rawRestart, kept, rawExec []time.Duration
	for range n {
		run("touch /tmp/x")
		remade = append(remade, restore(true))
		rawRestart = append(rawRestart, restartPod(ctx, t, b, ns, id))
		// The raw restart made a pod the base is not of: recorded again.
		if err := b.RecordBase(ctx, h); err != nil {
			t.Fatal(err)
		}
		run("touch ws-only")
		kept = append(kept, restore(false))
		c := backendtest.Dial(ctx, t, b, h, token)
		start := time.Now()
		if _, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"true"}}, nil, nil); err != nil {
			t.Fatal(err)
		}
		rawExec = append(rawExec, time.Since(start))
		c.Close()
	}
	report := func(what string, ours, raw []time.Duration) {
		o, r := median(ours), median(raw)
		t.Logf("bench restore %-10s median %8s  raw %8s  ratio %.2f  (n=%d)", what, o.Round(time.Millisecond), r.Round(time.Millisecond), float64(o)/float64(r), n)
	}
	report("remade", remade, rawRestart)
	report("unchanged", kept, rawExec)
}

// restartPod deletes the workspace's pod with client-go, as Restore
// does, and waits on a watch until the pod the StatefulSet makes again is
// Ready: the raw cost of a pod made again.
func restartPod(ctx context.Context, t *testing.T, b *kubernetes.Backend, ns, id string) time.Duration {
	t.Helper()
	pods := b.Clientset().CoreV1().Pods(ns)
	old, err := pods.Get(ctx, kubernetes.PodName(id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := pods.Delete(ctx, kubernetes.PodName(id), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	byName := fields.OneTermEqualSelector("metadata.name", kubernetes.PodName(id)).String()
	for {
		l, err := pods.List(ctx, metav1.ListOptions{FieldSelector: byName})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) == 1 && l.Items[0].UID != old.UID && ready(&l.Items[0]) {
			return time.Since(start)
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: byName, ResourceVersion: l.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && p.UID != old.UID && ready(p) {
				w.Stop()
				return time.Since(start)
			}
		}
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
	}
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return p.DeletionTimestamp == nil
		}
	}
	return false
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
