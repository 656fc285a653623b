package kubernetes_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/errs"
	rtclient "github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// TestConformance runs the backend suite on the cluster, reaching pods by
// their address.
func TestConformance(t *testing.T) {
	ns := kubernetestest.Namespace(t)
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backend.Backend {
			return kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
		},
		// The sandbox lives in the cluster: a new backend on the same
		// namespace is what a restarted platform builds.
		Restart: func(t *testing.T, old backend.Backend) backend.Backend {
			_ = old.(backend.Closer).Close()
			return kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
		},
		Template: kubernetestest.Template(kubernetestest.BusyboxImage, nil),
		Gone: func(t *testing.T, h backend.Handle) bool {
			b := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
			objs, err := b.Objects(context.Background(), h.WorkspaceID)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) > 0 {
				t.Logf("left of %s: %v", h.WorkspaceID, objs)
			}
			return len(objs) == 0
		},
		// WholeSandbox stays false: a pod's snapshot is its workspace
		// volume; the root filesystem is the image's.
		Stopped: func(t *testing.T, h backend.Handle) bool {
			b := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
			pods, err := b.Clientset().CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: kubernetes.LabelWorkspace + "=" + h.WorkspaceID})
			if err != nil {
				t.Fatal(err)
			}
			return len(pods.Items) == 0
		},
		SnapshotGone: func(t *testing.T, ref backend.SnapshotRef) bool {
			_, err := os.Stat(filepath.Join(kubernetestest.SnapshotDir(t), ref.SnapshotID+".tar"))
			left, _ := filepath.Glob(filepath.Join(kubernetestest.SnapshotDir(t), "."+ref.SnapshotID+"*"))
			return os.IsNotExist(err) && len(left) == 0
		},
		Timeout: 3 * time.Minute,
	})
}

// provision makes a workspace on b and registers its destruction.
func provision(t *testing.T, ctx context.Context, b *kubernetes.Backend, tmpl json.RawMessage, env map[string]string) (backend.Handle, string) {
	t.Helper()
	id, token := backendtest.NewID(t), backendtest.NewToken(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: tmpl, Env: env, Token: token})
	if err != nil {
		t.Fatalf("provision %s: %v", id, err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
	return h, token
}

// execOut runs argv in the workspace through its endpoint.
func execOut(t *testing.T, ctx context.Context, b backend.Backend, h backend.Handle, token string, argv ...string) string {
	t.Helper()
	ep, err := b.Endpoint(ctx, h, token)
	if err != nil {
		t.Fatalf("endpoint: %v", err)
	}
	c, err := rtclient.Dial(ctx, ep.URL, token)
	if err != nil {
		t.Fatalf("dial %s: %v", ep.URL, err)
	}
	defer c.Close()
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: argv}, nil, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec %v = %d %q %q, %v", argv, res.ExitCode, res.Stdout, res.Stderr, err)
	}
	return string(res.Stdout)
}

// TestReachability provisions and uses a workspace through a ClusterIP
// Service and through the API server's port-forward.
func TestReachability(t *testing.T) {
	ns := kubernetestest.Namespace(t)
	for _, reach := range []string{kubernetes.ReachService, kubernetes.ReachPortForward} {
		t.Run(reach, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			b := kubernetestest.Backend(t, ns, reach, "")
			h, token := provision(t, ctx, b, kubernetestest.Template(kubernetestest.BusyboxImage, nil), nil)
			ep, err := b.Endpoint(ctx, h, token)
			if err != nil {
				t.Fatal(err)
			}
			switch reach {
			case kubernetes.ReachService:
				svc, err := b.Clientset().CoreV1().Services(ns).Get(ctx, kubernetes.Name(h.WorkspaceID), metav1.GetOptions{})
				if err != nil {
					t.Fatalf("the workspace's Service: %v", err)
				}
				if !strings.Contains(ep.URL, svc.Spec.ClusterIP+":7777") {
					t.Errorf("endpoint %s is not the Service's cluster IP %s", ep.URL, svc.Spec.ClusterIP)
				}
			case kubernetes.ReachPortForward:
				if !strings.HasPrefix(ep.URL, "ws://127.0.0.1:") {
					t.Errorf("endpoint %s is not a local port-forward", ep.URL)
				}
			}
			if out := execOut(t, ctx, b, h, token, "sh", "-c", "echo hi > f && cat f"); out != "hi\n" {
				t.Errorf("exec = %q, want hi", out)
			}
			// A new pod (deleted from outside, made again by the
			// StatefulSet) is found again, with the file.
			pods := b.Clientset().CoreV1().Pods(ns)
			old, err := pods.Get(ctx, kubernetes.PodName(h.WorkspaceID), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := pods.Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
				t.Fatal(err)
			}
			var out string
			for ctx.Err() == nil {
				if pod, err := pods.Get(ctx, old.Name, metav1.GetOptions{}); err == nil && pod.UID != old.UID && pod.Status.Phase == corev1.PodRunning {
					if ep, err := b.Endpoint(ctx, h, token); err == nil {
						if c, err := rtclient.Dial(ctx, ep.URL, token); err == nil {
							res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"cat", "f"}}, nil, nil)
							c.Close()
							if err == nil {
								out = string(res.Stdout)
								break
							}
						}
					}
				}
				time.Sleep(200 * time.Millisecond)
			}
			if out != "hi\n" {
				t.Errorf("after the pod was recreated: cat f = %q, want hi (ctx %v)", out, ctx.Err())
			}
			if err := b.Destroy(ctx, h); err != nil {
				t.Fatal(err)
			}
			if objs, _ := b.Objects(ctx, h.WorkspaceID); len(objs) != 0 {
				t.Errorf("left after destroy: %v", objs)
			}
		})
	}
}

// TestProvisionFailures: a missing image and an unschedulable pod fail
// provisioning with the cluster's reason, and leave nothing.
func TestProvisionFailures(t *testing.T) {
	ns := kubernetestest.Namespace(t)
	b := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
	cases := []struct {
		name    string
		tmpl    json.RawMessage
		timeout time.Duration
		kind    errs.Kind
		want    []string
	}{
		{"MissingImage", kubernetestest.Template("primer/no-such-image:0.0", nil), 2 * time.Minute, errs.NotFound,
			[]string{"primer/no-such-image:0.0", "ErrImagePull", "event"}},
		{"Unschedulable", kubernetestest.Template(kubernetestest.BusyboxImage, map[string]any{"node_selector": map[string]string{"primer.dev/no-such-node": "x"}}), 10 * time.Second, errs.Timeout,
			[]string{"Unschedulable", "didn't match Pod's node affinity/selector"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
			defer cancel()
			id := backendtest.NewID(t)
			start := time.Now()
			_, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: c.tmpl, Token: backendtest.NewToken(t)})
			if err == nil {
				t.Fatal("provision succeeded")
			}
			if errs.KindOf(err) != c.kind {
				t.Errorf("error kind %v, want %v: %v", errs.KindOf(err), c.kind, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if d := time.Since(start); d > c.timeout {
				t.Errorf("provision took %s, past its context's %s", d, c.timeout)
			}
			if objs, err := b.Objects(context.Background(), id); err != nil || len(objs) != 0 {
				t.Errorf("left after a failed provision: %v, %v", objs, err)
			}
		})
	}
}

// TestObjects checks what a deny_all workspace is made of: the Secret owns
// everything and holds the env values and the token, which appear nowhere
// in the StatefulSet; the pod is hardened; deleting the Secret removes
// everything.
func TestObjects(t *testing.T) {
	ns := kubernetestest.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := kubernetestest.Backend(t, ns, kubernetes.ReachService, "inst-1")
	tmpl := kubernetestest.Template(kubernetestest.BusyboxImage, map[string]any{
		"network": map[string]string{"egress": "deny_all"},
		"labels":  map[string]string{"team": "evals"},
	})
	const secretValue = "s3cret-env-value"
	h, token := provision(t, ctx, b, tmpl, map[string]string{"API_KEY": secretValue, "weird name.x": "v"})
	id, name := h.WorkspaceID, kubernetes.Name(h.WorkspaceID)
	cs := b.Clientset()

	if out := execOut(t, ctx, b, h, token, "sh", "-c", `echo "$API_KEY|$weird name.x|${PRIMER_RUNTIME_TOKEN:-none}"`); !strings.HasPrefix(out, secretValue+"|") || !strings.HasSuffix(out, "|none\n") {
		t.Errorf("env in the workspace = %q, want the API_KEY value and no token", out)
	}
	if got, err := b.RuntimeToken(ctx, h); err != nil || got != token {
		t.Errorf("RuntimeToken = %q, %v; want the provisioned token", got, err)
	}

	secret, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sts, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(sts)
	if strings.Contains(string(raw), secretValue) || strings.Contains(string(raw), token) {
		t.Error("the StatefulSet holds the env value or the token in clear")
	}
	if sts.Labels[kubernetes.LabelInstallation] != "inst-1" || sts.Labels["team"] != "evals" || sts.Labels[kubernetes.LabelWorkspace] != id {
		t.Errorf("StatefulSet labels %v", sts.Labels)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, kubernetes.PodName(id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := pod.Spec
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token")
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil || v.Projected != nil {
			t.Errorf("the pod mounts %s from the host or a projection", v.Name)
		}
	}
	sc := spec.Containers[0].SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || (sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("workspace container security context %+v", sc)
	}
	if lim := spec.Containers[0].Resources.Limits; lim.Memory().String() != "256Mi" || lim.Cpu().String() != "1" {
		t.Errorf("limits %v, want memory 256Mi cpu 1", lim)
	}
	np, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("deny_all NetworkPolicy: %v", err)
	}
	if len(np.Spec.Egress) != 0 || !slices.Contains(np.Spec.PolicyTypes, "Egress") {
		t.Errorf("NetworkPolicy %+v does not deny all egress", np.Spec)
	}
	// deny_all holds without a policy-enforcing network plugin too: the
	// runtime's firewall drops what the workspace opens (here, to the
	// API server's service address).
	res := execOut(t, ctx, b, h, token, "sh", "-c", "nc -w 2 10.96.0.1 443 </dev/null >/dev/null 2>&1 && echo open || echo closed")
	if res != "closed\n" {
		t.Errorf("connection from a deny_all workspace to 10.96.0.1:443: %q, want closed", res)
	}

	// Everything but the pod (the StatefulSet's) is owned by the Secret.
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := 0
	for _, o := range []metav1.Object{sts, pvc, svc, np} {
		for _, r := range o.GetOwnerReferences() {
			if r.UID == secret.UID {
				owned++
			}
		}
	}
	if owned != 4 {
		t.Errorf("%d of the StatefulSet, PVC, Service and NetworkPolicy are owned by the Secret, want 4", owned)
	}

	// Deleting the owner removes the workspace whole.
	fg := metav1.DeletePropagationForeground
	if err := cs.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	var left []string
	for ctx.Err() == nil {
		if left, err = b.Objects(ctx, id); err == nil && len(left) == 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(left) != 0 {
		t.Errorf("after deleting the Secret, left: %v", left)
	}
	if _, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("secret after delete: %v", err)
	}
}

// TestConfig checks the provider and template documents' errors.
func TestConfig(t *testing.T) {
	bad := map[string]string{
		`{"kind":"kubernetes","connection":{"kind":"ssh"},"reachability":{"kind":"pod_ip"}}`:                             "spec.config.connection.kind",
		`{"kind":"kubernetes","connection":{"kind":"kubeconfig","path":"rel"},"reachability":{"kind":"pod_ip"}}`:         "spec.config.connection.path",
		`{"kind":"kubernetes","connection":{"kind":"in_cluster"},"reachability":{"kind":"node_port"}}`:                   "spec.config.reachability.kind",
		`{"kind":"kubernetes","connection":{"kind":"in_cluster"},"namespace":"Bad_NS","reachability":{"kind":"pod_ip"}}`: "spec.config.namespace",
		`{"kind":"kubernetes","connection":{"kind":"in_cluster"},"reachability":{"kind":"pod_ip"},"extra":1}`:            "spec.config.extra",
	}
	for doc, field := range bad {
		_, err := kubernetes.ParseProviderConfig(json.RawMessage(doc))
		if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("provider %s: err %v, want invalid naming %s", doc, err, field)
		}
	}
	badTmpl := map[string]string{
		`{"kind":"kubernetes"}`:                                                              "spec.backend.image",
		`{"kind":"kubernetes","image":"x:1","cpu_limit":"lots"}`:                             "spec.backend.cpu_limit",
		`{"kind":"kubernetes","image":"x:1","memory_limit":"1Mi"}`:                           "spec.backend.memory_limit",
		`{"kind":"kubernetes","image":"x:1","memory_limit":"64Mi","memory_request":"128Mi"}`: "spec.backend.memory_request",
		`{"kind":"kubernetes","image":"x:1","pvc_size":"-1Gi"}`:                              "spec.backend.pvc_size",
		`{"kind":"kubernetes","image":"x:1","network":{"egress":"some"}}`:                    "spec.backend.network.egress",
		`{"kind":"kubernetes","image":"x:1","labels":{"primer.dev/workspace":"x"}}`:          "spec.backend.labels",
		`{"kind":"kubernetes","image":"x:1","tolerations":[{"operator":"Equal"}]}`:           "spec.backend.tolerations[0]",
		`{"kind":"kubernetes","image":"x:1","runtime_class":"Not A Class"}`:                  "spec.backend.runtime_class",
		`{"kind":"container","image":"x:1"}`:                                                 "spec.backend.kind",
		`{"kind":"kubernetes","image":"x:1","user":"a b"}`:                                   "spec.backend.user",
	}
	for doc, field := range badTmpl {
		_, err := kubernetes.ParseTemplate(json.RawMessage(doc))
		if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("template %s: err %v, want invalid naming %s", doc, err, field)
		}
	}
	tm, err := kubernetes.ParseTemplate(json.RawMessage(`{"kind":"kubernetes","image":"x:1","tolerations":[{"key":"sandbox","operator":"Exists","effect":"NoSchedule"}],"node_selector":{"pool":"sandboxes"}}`))
	if err != nil || tm.PVCSize != kubernetes.DefaultPVCSize || tm.Network.Egress != kubernetes.EgressAllow || len(tm.Tolerations) != 1 {
		t.Errorf("good template = %+v, %v", tm, err)
	}
}

// TestDestroyStopsThePod: Destroy deletes the pod at once (grace period
// 0) instead of waiting for the kubelet's confirmation, so it returns with
// no object left while the kubelet may still be stopping the container.
// The workspace's runtime must still stop soon after: its address stops
// answering.
func TestDestroyStopsThePod(t *testing.T) {
	ns := kubernetestest.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
	h, token := provision(t, ctx, b, kubernetestest.Template(kubernetestest.BusyboxImage, nil), nil)
	ep, err := b.Endpoint(ctx, h, token)
	if err != nil {
		t.Fatal(err)
	}
	if out := execOut(t, ctx, b, h, token, "echo", "up"); out != "up\n" {
		t.Fatalf("exec = %q", out)
	}
	if err := b.Destroy(ctx, h); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if objs, err := b.Objects(ctx, h.WorkspaceID); err != nil || len(objs) > 0 {
		t.Fatalf("after destroy: %v left (%v)", objs, err)
	}
	// The kubelet stops the container within its minimum grace period (2 s)
	// of seeing the pod gone; 30 s is room for a loaded node.
	deadline := time.Now().Add(30 * time.Second)
	for {
		dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := rtclient.Dial(dctx, ep.URL, token)
		dcancel()
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the runtime at %s still answers 30 s after Destroy", ep.URL)
		}
		time.Sleep(200 * time.Millisecond) // poll cadence until the deadline
	}
}
