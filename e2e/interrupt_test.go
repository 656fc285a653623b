package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker"
)

// This file proves that a delete interrupts the step in flight (workflow
// change "interrupt"): a workspace stuck provisioning (an init that runs
// `sleep 600`, a pod no node can take), stuck being replaced or stuck
// being reset (a pool return) is gone, with nothing left on the engine,
// within the time a delete of a running workspace takes plus
// interruptSlack, measured from the delete call.

// interruptSlack is what an interrupted delete may take beyond an
// ordinary one: the cancellation reaching the step (a heartbeat, about a
// second) and the step stopping.
const interruptSlack = 5 * time.Second

// deleteToGone deletes workspace id and returns how long it took from the
// delete call until GET answers 404 (the row goes only after the backend
// destroyed the sandbox); then nothing of it may be left on the engine.
func deleteToGone(t *testing.T, api *client.Client, id string, left func() []string) time.Duration {
	t.Helper()
	ctx := ctxT(t, 2*time.Minute)
	start := time.Now()
	if _, err := api.DeleteWorkspace(ctx, id); err != nil {
		t.Fatalf("delete %s: %v", id, err)
	}
	if err := api.WaitGone(ctx, id, nil); err != nil {
		t.Fatalf("delete %s: %v", id, err)
	}
	took := time.Since(start)
	if objs := left(); len(objs) > 0 {
		t.Errorf("engine objects left after deleting %s: %v", id, objs)
	}
	return took
}

// withinBound fails the test when an interrupted delete took longer than
// an ordinary one (destroy) plus interruptSlack.
//
// On a loaded machine every step is slower alike, so the slack grows with
// the measured destroy (twice it, when that is more than interruptSlack):
// a delete that waited for the stuck step instead (minutes) still fails.
func withinBound(t *testing.T, what string, took, destroy time.Duration) {
	t.Helper()
	slack := max(interruptSlack, 2*destroy)
	t.Logf("%s: delete to gone %s (a running workspace's: %s)", what, took.Round(time.Millisecond), destroy.Round(time.Millisecond))
	if took > destroy+slack {
		t.Errorf("%s: delete to gone took %s, want within %s (destroy) + %s", what, took.Round(time.Millisecond), destroy.Round(time.Millisecond), slack.Round(time.Millisecond))
	}
}

// runningContainer waits until workspace id has a running container other
// than not, and returns its id.
func (r *faultRig) runningContainer(t *testing.T, id, not string) string {
	t.Helper()
	var got string
	eventually(t, 2*time.Minute, "a running container of "+id, func() bool {
		for _, c := range r.containers(t, id) {
			if c.State == "running" && c.ID != not {
				got = c.ID
				return true
			}
		}
		return false
	})
	return got
}

// stuckInit is an init command that hangs once the workspace holds the
// file stall: the first provisioning runs, a replacement hangs.
const stuckInit = "if [ -e stall ]; then sleep 600; fi"

// stuckResetInit is an init command that hangs once /tmp/stuck exists:
// the first provisioning, before any lessee, runs. A reset restores the
// whole sandbox on containers and pods (the marker the lessee leaves in
// /tmp goes with it, and makes the reset remake the sandbox), so the
// tests change the template's init to hang instead (see returnStuck).
const stuckResetInit = "test -e /tmp/stuck && exec sleep 600 || true"

// hangCmd is what stuckInit and stuckResetInit hang in, as ps shows it.
const hangCmd = "sleep 600"

// returnStuck leases a warm member of pool, leaves the marker of
// stuckResetInit in it and returns it, then waits until its reset is in
// flight: the member is returning and runs (says runs) the init's sleep.
// It returns the member's id.
//
// beforeReturn, when given, runs on the leased member before it is
// returned: a backend whose reset makes the whole sandbox again
// (containers, pods) loses the marker with it, so the test makes the
// template's init hang there instead (a reset applies the template as it
// is then).
func returnStuck(t *testing.T, api *client.Client, pool string, runs func(id string) bool, beforeReturn ...func(id string)) string {
	t.Helper()
	ctx := ctxT(t, 3*time.Minute)
	eventually(t, 2*time.Minute, "an idle running member of "+pool, func() bool {
		p, err := api.GetPool(ctx, pool)
		return err == nil && p.Status.Idle >= 1 && p.Status.Starting == 0
	})
	l, err := api.LeasePool(ctx, pool, wire.LeaseRequest{})
	if err != nil {
		t.Fatalf("lease %s: %v", pool, err)
	}
	if l.Source != client.LeaseWarm {
		t.Fatalf("lease of %s = %s %+v; want warm", pool, l.Source, l.Workspace)
	}
	id := l.Workspace.ID
	res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"touch", "/tmp/stuck"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("touch /tmp/stuck in %s = %+v, %v", id, res, err)
	}
	for _, f := range beforeReturn {
		f(id)
	}
	if _, err := api.ReturnWorkspace(ctx, id); err != nil {
		t.Fatalf("return %s: %v", id, err)
	}
	eventually(t, time.Minute, "the reset of "+id+" hanging in its init", func() bool {
		ws, err := api.GetWorkspace(ctx, id)
		return err == nil && ws.PoolState == wire.PoolReturning && runs(id)
	})
	return id
}

// runs reports whether a process of workspace id's container has what in
// its command line, as the engine lists them (docker top).
func (r *faultRig) runs(t *testing.T, id, what string) bool {
	t.Helper()
	top, err := r.eng.Client().ContainerTop(ctxT(t, 30*time.Second), container.Name(id), nil)
	if err != nil {
		t.Logf("top of %s: %v", id, err)
		return false
	}
	for _, proc := range top.Processes {
		if strings.Contains(strings.Join(proc, " "), what) {
			return true
		}
	}
	return false
}

// TestDeleteInterruptsContainer deletes a workspace while its init runs
// `sleep 600`, one while its replacement's init does, and a pool member
// while the init of its reset (a return) does: each is gone within an
// ordinary delete's time plus interruptSlack, and the engine holds nothing
// of it. Docker and Podman.
func TestDeleteInterruptsContainer(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e, func(c *worker.Config) { c.PoolInterval = time.Second })
		r.template("quick", nil)
		r.template("stuck", map[string]any{"init": []string{"sleep 600"}})
		r.template("stuckrepl", map[string]any{
			"init":     []string{stuckInit},
			"recovery": map[string]any{"max_attempts": 3, "after": "0s"},
		})
		r.template("stuckreset", map[string]any{"init": []string{stuckResetInit}})
		left := func(id string) func() []string {
			return func() []string { return containertest.Objects(t, r.eng, id) }
		}

		ws := r.running(t, "quick")
		destroy := deleteToGone(t, r.p.api, ws.ID, left(ws.ID))

		t.Run("Provision", func(t *testing.T) {
			ctx := ctxT(t, 2*time.Minute)
			ws, err := r.p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "stuck"})
			if err != nil {
				t.Fatal(err)
			}
			r.runningContainer(t, ws.ID, "")
			if got, err := r.p.api.GetWorkspace(ctx, ws.ID); err != nil || got.Phase != wire.PhasePending {
				t.Fatalf("workspace = %+v, %v; want pending while init sleeps", got, err)
			}
			withinBound(t, "provision", deleteToGone(t, r.p.api, ws.ID, left(ws.ID)), destroy)
		})

		t.Run("Replace", func(t *testing.T) {
			ctx := ctxT(t, 3*time.Minute)
			ws := r.running(t, "stuckrepl")
			if _, err := r.p.api.WriteFile(ctx, ws.ID, "stall", strings.NewReader("")); err != nil {
				t.Fatal(err)
			}
			old := r.runningContainer(t, ws.ID, "")
			if err := r.eng.Client().ContainerKill(ctx, old, "KILL"); err != nil {
				t.Fatalf("kill container: %v", err)
			}
			// The replacement runs, its init sleeping in it.
			r.runningContainer(t, ws.ID, old)
			got, err := r.p.api.GetWorkspace(ctx, ws.ID)
			if err != nil || got.Phase != wire.PhasePending || !strings.Contains(got.Reason, "recovering") {
				t.Fatalf("workspace = %+v, %v; want pending, recovering", got, err)
			}
			withinBound(t, "replace", deleteToGone(t, r.p.api, ws.ID, left(ws.ID)), destroy)
		})

		t.Run("Reset", func(t *testing.T) {
			ctx := ctxT(t, time.Minute)
			if _, err := r.p.api.CreatePool(ctx, wire.PoolSpec{ID: "stuckreset", TemplateID: "stuckreset", Size: 1}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, _ = r.p.api.DeletePool(ctx, "stuckreset")
			})
			id := returnStuck(t, r.p.api, "stuckreset", func(id string) bool { return r.runs(t, id, hangCmd) }, func(string) {
				// The reset remakes the container (/tmp/stuck is a change
				// outside the workspace), so the marker goes with it: the
				// init it runs again is made to hang instead.
				spec := wire.TemplateSpec{ID: "stuckreset", ProviderID: r.provider(), Backend: r.doc(map[string]any{"init": []string{hangCmd}})}
				if _, err := r.p.api.UpdateTemplate(ctx, "stuckreset", spec); err != nil {
					t.Fatalf("update template stuckreset: %v", err)
				}
			})
			withinBound(t, "reset", deleteToGone(t, r.p.api, id, left(id)), destroy)
		})
	})
}

// unschedulable is a node selector no node of the test cluster has.
const unschedulable = `"node_selector":{"primer.dev/e2e-no-such-node":"true"}`

// TestDeleteInterruptsKubernetes deletes Kubernetes workspaces stuck in
// each step: one whose pod can never be scheduled (a node selector no node
// has; the provisioning would wait the 10-minute start timeout), one whose
// replacement's init runs `sleep 600` (its pod deleted from outside, a
// replacement forced by recovery after 0s), and a pool member whose
// reset's init does (the template's init changed to it before the return). Each is gone within an ordinary delete's time plus
// interruptSlack, and nothing of it is left in the namespace.
func TestDeleteInterruptsKubernetes(t *testing.T) {
	p := startPrimer(t, withContainers(t), withProbeInterval(500*time.Millisecond), func(c *worker.Config) { c.PoolInterval = time.Second })
	k := kubeProvider(t, p, "k8s", kubernetes.ReachPodIP)
	doc := func(extra string) string {
		return `{"kind":"kubernetes","image":"` + kubernetestest.BusyboxImage + `","memory_limit":"128Mi","pvc_size":"16Mi"` + extra + `}`
	}
	k.template(t, p, "bb", doc(""))
	k.template(t, p, "nowhere", doc(","+unschedulable))
	k.template(t, p, "stuckrepl", doc(fmt.Sprintf(`,"init":[%q],"recovery":{"max_attempts":3,"after":"0s"}`, stuckInit)))
	k.template(t, p, "stuckreset", doc(fmt.Sprintf(`,"init":[%q]`, stuckResetInit)))
	left := func(id string) func() []string {
		return func() []string {
			objs, err := k.b.Objects(ctxT(t, 30*time.Second), id)
			if err != nil {
				t.Fatalf("objects of %s: %v", id, err)
			}
			return objs
		}
	}
	// The platform's delete removes everything; this is for a test that
	// failed before it.
	destroyLater := func(id string) {
		t.Cleanup(func() {
			_ = k.b.Destroy(context.Background(), backend.Handle{Backend: kubernetes.Type, WorkspaceID: id})
		})
	}
	pods := k.b.Clientset().CoreV1().Pods(k.ns)

	ws := createRunning(t, p, "bb")
	destroy := deleteToGone(t, p.api, ws.ID, left(ws.ID))

	t.Run("Provision", func(t *testing.T) {
		ctx := ctxT(t, 2*time.Minute)
		ws, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "nowhere"})
		if err != nil {
			t.Fatal(err)
		}
		destroyLater(ws.ID)
		eventually(t, time.Minute, "the pod made and pending", func() bool {
			pod, err := pods.Get(ctx, kubernetes.PodName(ws.ID), metav1.GetOptions{})
			return err == nil && pod.Status.Phase == "Pending"
		})
		withinBound(t, "unschedulable pod", deleteToGone(t, p.api, ws.ID, left(ws.ID)), destroy)
	})

	t.Run("Replace", func(t *testing.T) {
		ctx := ctxT(t, 3*time.Minute)
		ws := createRunning(t, p, "stuckrepl")
		destroyLater(ws.ID)
		if _, err := p.api.WriteFile(ctx, ws.ID, "stall", strings.NewReader("")); err != nil {
			t.Fatal(err)
		}
		// The StatefulSet makes the pod again by itself, but the runtime
		// misses three probes meanwhile: the workspace fails and, with
		// recovery after 0s, is replaced at once (a new StatefulSet on the
		// kept volume), whose init finds stall and sleeps. Only a
		// provisioning runs the init, so the sleep is the replacement's.
		k.deletePod(t, ws.ID)
		eventually(t, 2*time.Minute, "the replacement's init sleeping in its pod", func() bool {
			got, err := p.api.GetWorkspace(ctx, ws.ID)
			return err == nil && got.Phase == wire.PhasePending && strings.Contains(got.Reason, "recovering") &&
				k.podRuns(t, ws.ID, hangCmd)
		})
		withinBound(t, "replace", deleteToGone(t, p.api, ws.ID, left(ws.ID)), destroy)
	})

	t.Run("Reset", func(t *testing.T) {
		ctx := ctxT(t, time.Minute)
		if _, err := p.api.CreatePool(ctx, wire.PoolSpec{ID: "stuckreset", TemplateID: "stuckreset", Size: 1}); err != nil {
			t.Fatal(err)
		}
		// The pool refills after the delete; its new member goes with the
		// pool, or with the namespace.
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _ = p.api.DeletePool(ctx, "stuckreset")
		})
		id := returnStuck(t, p.api, "stuckreset", func(id string) bool { return k.podRuns(t, id, hangCmd) }, func(id string) {
			// The reset makes the pod again (/tmp/stuck is a change
			// outside the workspace), so the marker goes with it: the init
			// it runs again is made to hang instead.
			destroyLater(id)
			spec := wire.TemplateSpec{ID: "stuckreset", ProviderID: k.provider, Backend: raw(doc(fmt.Sprintf(`,"init":[%q]`, hangCmd)))}
			if _, err := p.api.UpdateTemplate(ctx, "stuckreset", spec); err != nil {
				t.Fatalf("update template stuckreset: %v", err)
			}
		})
		withinBound(t, "reset", deleteToGone(t, p.api, id, left(id)), destroy)
	})
}

// podRuns reports whether a process of workspace id's pod has what in its
// command line: ps in the pod's workspace container, through the API
// server's exec as `kubectl exec` does it. A pod that is not there or not
// running yet (the StatefulSet making it again) runs nothing.
func (k *kubeEnv) podRuns(t *testing.T, id, what string) bool {
	t.Helper()
	pod, err := k.b.Clientset().CoreV1().Pods(k.ns).Get(ctxT(t, 30*time.Second), kubernetes.PodName(id), metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubernetestest.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	req := k.b.Clientset().CoreV1().RESTClient().Post().Resource("pods").Namespace(k.ns).Name(kubernetes.PodName(id)).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{Command: []string{"ps", "-o", "args"}, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(rc, "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctxT(t, 30*time.Second), remotecommand.StreamOptions{Stdout: &out, Stderr: &stderr}); err != nil {
		t.Logf("ps in the pod of %s: %v %s", id, err, stderr.String())
		return false
	}
	return strings.Contains(out.String(), what)
}
