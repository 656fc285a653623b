package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	rtclient "github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/wire"
)

// kubeRecipeManifest is the acceptance recipe's provider and template on
// the Kubernetes backend.
func kubeRecipeManifest(t *testing.T, ns string) string {
	return fmt.Sprintf(`kind: workspace_provider
spec:
  id: k8s
  provider: kubernetes
  config:
    kind: kubernetes
    connection: {kind: kubeconfig, path: %s}
    namespace: %s
    reachability: {kind: pod_ip}
    runtime_image: %s
---
kind: workspace_template
spec:
  id: code-sandbox
  provider_id: k8s
  backend:
    kind: kubernetes
    image: %s
    cpu_limit: "1"
    memory_limit: 512Mi
    pvc_size: 64Mi
    network: {egress: deny_all}
    config_toml: %s
`, kubernetestest.Kubeconfig(t), ns, kubernetestest.RuntimeImage(t), kubernetestest.PythonImage, recipeConfigJSON)
}

// TestKubernetesRecipe is the code-interpreter recipe on the Kubernetes
// backend, through primectl and the REST API: a deny_all python pod runs a
// snippet, its hostname is its own, it sees no host socket, it cannot open
// a connection to the host, and deleting the workspace leaves no object.
func TestKubernetesRecipe(t *testing.T) {
	p := startPrimer(t, withContainers(t))
	ns := kubernetestest.Namespace(t)
	ctx := ctxT(t, 5*time.Minute)
	kb := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, p.srv.Installation())

	id := runRecipe(t, p, ctx, kubeRecipeManifest(t, ns), func(id string) {
		_ = kb.Destroy(context.Background(), backend.Handle{Backend: kubernetes.Type, WorkspaceID: id})
	})

	// Egress is denied: a listener on the host is reached through none of
	// the host's addresses, the node's bridge address included.
	checkEgressBlocked(t, p, ctx, id, hostAddrs(t))

	// The runtime refuses a connection without the workspace's token.
	h := storedHandle(t, p, ctx, id)
	ep, err := kb.Endpoint(ctx, h, "")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := rtclient.Dial(ctx, ep.URL, "not-the-token"); err == nil {
		err = c.Ping(ctx)
		c.Close()
		if !errs.Is(err, errs.Forbidden) {
			t.Errorf("runtime with a wrong token: ping err = %v, want forbidden", err)
		}
	} else if !errs.Is(err, errs.Forbidden) {
		t.Errorf("runtime with a wrong token: dial err = %v, want forbidden", err)
	}

	// Delete: 404, and nothing of the workspace is left in the namespace.
	if _, _, code := p.primectl("", "delete", "workspace", id, "--wait"); code != 0 {
		t.Fatalf("delete workspace --wait: code %d", code)
	}
	if _, err := p.api.GetWorkspace(ctx, id); !errs.Is(err, errs.NotFound) {
		t.Errorf("GET after delete: %v, want not found", err)
	}
	if objs, err := kb.Objects(ctx, id); err != nil || len(objs) != 0 {
		t.Errorf("objects left after delete: %v, %v", objs, err)
	}
}

// kubeWorkspace is a running workspace with what a fault must not lose: a
// file and a session with a recorded tool call.
type kubeWorkspace struct {
	ws      *wire.Workspace
	session string
	pod     *corev1.Pod
}

func (k *kubeEnv) prepare(t *testing.T, p *primer, template string) *kubeWorkspace {
	t.Helper()
	ctx := ctxT(t, 3*time.Minute)
	ws := createRunning(t, p, template)
	t.Cleanup(func() {
		_ = k.b.Destroy(context.Background(), backend.Handle{Backend: kubernetes.Type, WorkspaceID: ws.ID})
	})
	if _, err := p.api.WriteFile(ctx, ws.ID, "notes.txt", strings.NewReader(notes)); err != nil {
		t.Fatalf("write notes.txt: %v", err)
	}
	ses, err := p.api.CreateSession(ctx, wire.CreateSessionRequest{WorkspaceID: ws.ID, Agent: "agent-1"})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	if wr, err := p.api.ToolWrite(ctx, ses.ID, "agent.txt", []byte("written by the agent\n"), 0); err != nil || len(wr.Commit) != 40 {
		t.Fatalf("tool write = %+v, %v; want a commit", wr, err)
	}
	return &kubeWorkspace{ws: ws, session: ses.ID, pod: k.pod(t, ws.ID)}
}

func (k *kubeEnv) pod(t *testing.T, id string) *corev1.Pod {
	t.Helper()
	pod, err := k.b.Clientset().CoreV1().Pods(k.ns).Get(ctxT(t, 30*time.Second), kubernetes.PodName(id), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pod of %s: %v", id, err)
	}
	return pod
}

// deletePod deletes the workspace's pod as `kubectl delete pod` does, with
// its grace period: the runtime is told to stop, and the StatefulSet makes
// the pod again once the old one is gone.
func (k *kubeEnv) deletePod(t *testing.T, id string) {
	t.Helper()
	if err := k.b.Clientset().CoreV1().Pods(k.ns).Delete(ctxT(t, 30*time.Second), kubernetes.PodName(id), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod of %s: %v", id, err)
	}
}

// setUnschedulable cordons (or uncordons) the node the workspace runs on.
func (k *kubeEnv) setUnschedulable(t *testing.T, node string, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := k.b.Clientset().CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("cordon %s = %t: %v", node, on, err)
	}
}

// checkResumed asserts the session lost while the workspace was failed
// ended workspace_lost and an open session resumes it, with the file kept.
func checkResumed(t *testing.T, p *primer, kw *kubeWorkspace) {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	id := kw.ws.ID
	waitEvent(t, p.api, id, wire.EventRecovered, 90*time.Second)
	resumed := resumedSession(t, p.api, ctx, id, kw.session)
	res, err := p.api.ToolExec(ctx, resumed.ID, client.ToolExecRequest{Command: "cat agent.txt notes.txt"})
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, "written by the agent") || !strings.Contains(res.Stdout, "must survive") {
		t.Errorf("tool exec on the resumed session = %+v, %v", res, err)
	}
}

// TestKubernetesFaults breaks Kubernetes workspaces from outside: a pod
// deleted (the StatefulSet brings it back on the same volume), the node
// cordoned and the pod deleted (pending with the scheduler's reason,
// recovery escalates), the kubelet stopped for longer than three probes
// (the pod keeps running and answering), the platform restarted (it
// re-attaches, taking the token back from the Secret, nothing re-made).
func TestKubernetesFaults(t *testing.T) {
	kubernetestest.Disruptive(t)
	p := startPrimer(t, withContainers(t), withProbeInterval(500*time.Millisecond))
	k := kubeProvider(t, p, "k8s", kubernetes.ReachPodIP)
	k.template(t, p, "bb", `{"kind":"kubernetes","image":"`+kubernetestest.BusyboxImage+`","memory_limit":"128Mi","pvc_size":"16Mi","env":{"API_KEY":"s3cret-env-value"},"recovery":{"after":"10m"}}`)
	k.template(t, p, "bb-escalate", `{"kind":"kubernetes","image":"`+kubernetestest.BusyboxImage+`","memory_limit":"128Mi","pvc_size":"16Mi","start_timeout":"15s","recovery":{"max_attempts":1,"after":"1s"}}`)

	t.Run("PodDeleted", func(t *testing.T) {
		ctx := ctxT(t, 3*time.Minute)
		kw := k.prepare(t, p, "bb")
		k.deletePod(t, kw.ws.ID)
		// The StatefulSet makes the pod again; the workspace is running
		// on it with its volume.
		pods := k.b.Clientset().CoreV1().Pods(k.ns)
		for {
			pod, err := pods.Get(ctx, kubernetes.PodName(kw.ws.ID), metav1.GetOptions{})
			if err == nil && pod.UID != kw.pod.UID {
				if ws, err := p.api.GetWorkspace(ctx, kw.ws.ID); err == nil && ws.Phase == wire.PhaseRunning {
					if _, err := p.api.ReadFile(ctx, kw.ws.ID, "notes.txt"); err == nil {
						break
					}
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("workspace %s not running on a new pod: %v", kw.ws.ID, ctx.Err())
			}
			time.Sleep(200 * time.Millisecond)
		}
		got, err := p.api.ReadFile(ctx, kw.ws.ID, "notes.txt")
		if err != nil || string(got) != notes {
			t.Errorf("notes.txt on the new pod = %q, %v; want %q", got, err, notes)
		}
		evs, err := p.api.Events(ctx, kw.ws.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		// With probes every 500 ms, three missed while the old pod stopped
		// and the new one started: the session ended, and was resumed when
		// the workspace came back running.
		if _, failed := lastChangeTo(t, evs, wire.PhaseFailed); !failed {
			t.Errorf("events %v: want the workspace failed while its pod was made again", eventKeys(t, evs))
		}
		checkResumed(t, p, kw)
		if _, err := p.api.DeleteWorkspace(ctx, kw.ws.ID); err != nil {
			t.Fatal(err)
		}
		if err := p.api.WaitGone(ctx, kw.ws.ID, nil); err != nil {
			t.Fatal(err)
		}
		if objs, err := k.b.Objects(ctx, kw.ws.ID); err != nil || len(objs) != 0 {
			t.Errorf("objects left after delete: %v, %v", objs, err)
		}
	})

	t.Run("CordonedAndPodDeleted", func(t *testing.T) {
		ctx := ctxT(t, 4*time.Minute)
		kw := k.prepare(t, p, "bb-escalate")
		node := kw.pod.Spec.NodeName
		k.setUnschedulable(t, node, true)
		uncordoned := false
		t.Cleanup(func() {
			if !uncordoned {
				k.setUnschedulable(t, node, false)
			}
		})
		k.deletePod(t, kw.ws.ID)

		failed := waitPhase(t, p.api, kw.ws.ID, wire.PhaseFailed, time.Minute)
		if !strings.Contains(failed.Reason, "unschedulable") {
			t.Errorf("failed reason %q does not give the scheduler's reason", failed.Reason)
		}
		// One replacement, which cannot be scheduled either, then
		// escalated, with the scheduler's reason.
		esc := waitPhase(t, p.api, kw.ws.ID, wire.PhaseEscalated, 2*time.Minute)
		evs := waitEvent(t, p.api, kw.ws.ID, wire.EventEscalated, 30*time.Second)
		want := []string{"running>failed", wire.EventRecoveryStarted, "failed>pending", wire.EventRecoveryFailed, "pending>failed", "failed>escalated", wire.EventEscalated}
		if got := eventKeys(t, evs); !subsequence(got, want) {
			t.Errorf("events = %v; want in order %v", got, want)
		}
		var rf struct {
			Error string `json:"error"`
		}
		for _, ev := range evs {
			if ev.Type == wire.EventRecoveryFailed {
				_ = json.Unmarshal(ev.Data, &rf)
			}
		}
		if !strings.Contains(rf.Error, "unschedulable") {
			t.Errorf("recovery_failed error %q does not give the scheduler's reason (escalated: %s)", rf.Error, esc.Reason)
		}

		// Uncordoned, a recover brings it back on its volume.
		k.setUnschedulable(t, node, false)
		uncordoned = true
		if _, err := p.api.RecoverWorkspace(ctx, kw.ws.ID); err != nil {
			t.Fatalf("recover: %v", err)
		}
		// The signal is taken in a moment: pending, then running.
		waitPhase(t, p.api, kw.ws.ID, wire.PhasePending, time.Minute)
		waitPhase(t, p.api, kw.ws.ID, wire.PhaseRunning, 2*time.Minute)
		if got, err := p.api.ReadFile(ctx, kw.ws.ID, "notes.txt"); err != nil || string(got) != notes {
			t.Errorf("notes.txt after recover = %q, %v; want %q", got, err, notes)
		}
		checkResumed(t, p, kw)
	})

	t.Run("KubeletStopped", func(t *testing.T) {
		ctx := ctxT(t, 3*time.Minute)
		kw := k.prepare(t, p, "bb")
		kubernetestest.Kubelet(t, "stop")
		started := false
		t.Cleanup(func() {
			if !started {
				kubernetestest.Kubelet(t, "start")
			}
		})
		// Longer than three probes: the pod's containers keep running
		// without their kubelet, and the platform reaches the runtime by
		// the pod's address, so the workspace stays running and usable.
		outage := time.Now()
		for time.Since(outage) < 8*time.Second {
			res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: kw.ws.ID, Command: []string{"cat", "notes.txt"}})
			if err != nil || res.Stdout != notes {
				t.Fatalf("exec with the kubelet stopped = %+v, %v", res, err)
			}
			time.Sleep(time.Second)
		}
		kubernetestest.Kubelet(t, "start")
		started = true
		evs, err := p.api.Events(ctx, kw.ws.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, failed := lastChangeTo(t, evs, wire.PhaseFailed); failed {
			t.Errorf("the workspace went failed while only the kubelet was stopped: %v", eventKeys(t, evs))
		}
		after := k.pod(t, kw.ws.ID)
		if after.UID != kw.pod.UID || restarts(after) != restarts(kw.pod) {
			t.Errorf("pod after the kubelet restart: uid %s restarts %d; want the same pod %s, restarts %d", after.UID, restarts(after), kw.pod.UID, restarts(kw.pod))
		}
		res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: kw.ws.ID, Command: []string{"cat", "notes.txt"}})
		if err != nil || res.Stdout != notes {
			t.Errorf("exec after the kubelet restart = %+v, %v", res, err)
		}
	})

	t.Run("RestartReattaches", func(t *testing.T) {
		ctx := ctxT(t, 3*time.Minute)
		kw := k.prepare(t, p, "bb")
		id := kw.ws.ID
		sts, err := k.b.Clientset().AppsV1().StatefulSets(k.ns).Get(ctx, kubernetes.Name(id), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored, err := p.srv.Store().GetWorkspace(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		// The platform loses its copy of the token (a database restored
		// from an older backup): it takes the Secret's back.
		if err := p.srv.Store().SetWorkspaceRuntime(ctx, id, stored.Handle, stored.Path, models.NewToken()); err != nil {
			t.Fatal(err)
		}
		p.restart()
		ws, err := p.api.GetWorkspace(ctx, id)
		if err != nil || ws.Phase != wire.PhaseRunning {
			t.Fatalf("after restart: %+v, %v; want running", ws, err)
		}
		res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"sh", "-c", `cat notes.txt; echo "$API_KEY"`}})
		if err != nil || res.Stdout != notes+"s3cret-env-value\n" {
			t.Errorf("exec after restart = %+v, %v", res, err)
		}
		now, err := p.srv.Store().GetWorkspace(ctx, id)
		if err != nil || now.RuntimeToken != stored.RuntimeToken {
			t.Errorf("stored token after re-attach is not the Secret's again (%v)", err)
		}
		stsAfter, err := k.b.Clientset().AppsV1().StatefulSets(k.ns).Get(ctx, kubernetes.Name(id), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		podAfter := k.pod(t, id)
		if stsAfter.UID != sts.UID || stsAfter.Generation != sts.Generation || podAfter.UID != kw.pod.UID || restarts(podAfter) != restarts(kw.pod) {
			t.Errorf("after restart: StatefulSet %s gen %d, pod %s; want the same %s gen %d, pod %s (nothing re-made)",
				stsAfter.UID, stsAfter.Generation, podAfter.UID, sts.UID, sts.Generation, kw.pod.UID)
		}
		evs, err := p.api.Events(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, failed := lastChangeTo(t, evs, wire.PhaseFailed); failed {
			t.Errorf("the workspace went failed across the restart: %v", eventKeys(t, evs))
		}
	})
}

func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, cs := range pod.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}
