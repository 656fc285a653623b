package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/primerhq/primer/activities/backend"
	"github.com/primerhq/primer/activities/backend/container/containertest"
	"github.com/primerhq/primer/activities/backend/kubernetes"
	"github.com/primerhq/primer/activities/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/models"
)

// This file proves that a delete interrupts the step in flight (workflow
// change "interrupt"): a workspace stuck provisioning (an init that runs
// `sleep 600`, a pod no node can take) or stuck being replaced is gone,
// with nothing left on the engine, within the time a delete of a running
// workspace takes plus interruptSlack, measured from the delete call.

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
func withinBound(t *testing.T, what string, took, destroy time.Duration) {
	t.Helper()
	t.Logf("%s: delete to gone %s (a running workspace's: %s)", what, took.Round(time.Millisecond), destroy.Round(time.Millisecond))
	if took > destroy+interruptSlack {
		t.Errorf("%s: delete to gone took %s, want within %s (destroy) + %s", what, took.Round(time.Millisecond), destroy.Round(time.Millisecond), interruptSlack)
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

// TestDeleteInterruptsContainer deletes a workspace while its init runs
// `sleep 600`, and one while its replacement's init does: each is gone
// within an ordinary delete's time plus interruptSlack, and the engine
// holds nothing of it. Docker and Podman.
func TestDeleteInterruptsContainer(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e)
		r.template("quick", nil)
		r.template("stuck", map[string]any{"init": []string{"sleep 600"}})
		r.template("stuckrepl", map[string]any{
			"init":     []string{stuckInit},
			"recovery": map[string]any{"max_attempts": 3, "after": "0s"},
		})
		left := func(id string) func() []string {
			return func() []string { return containertest.Objects(t, r.eng, id) }
		}

		ws := r.running(t, "quick")
		destroy := deleteToGone(t, r.p.api, ws.ID, left(ws.ID))

		t.Run("Provision", func(t *testing.T) {
			ctx := ctxT(t, 2*time.Minute)
			ws, err := r.p.api.CreateWorkspace(ctx, client.CreateWorkspaceRequest{TemplateID: "stuck"})
			if err != nil {
				t.Fatal(err)
			}
			r.runningContainer(t, ws.ID, "")
			if got, err := r.p.api.GetWorkspace(ctx, ws.ID); err != nil || got.Phase != models.PhasePending {
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
			if err != nil || got.Phase != models.PhasePending || !strings.Contains(got.Reason, "recovering") {
				t.Fatalf("workspace = %+v, %v; want pending, recovering", got, err)
			}
			withinBound(t, "replace", deleteToGone(t, r.p.api, ws.ID, left(ws.ID)), destroy)
		})
	})
}

// unschedulable is a node selector no node of the test cluster has.
const unschedulable = `"node_selector":{"primer.dev/e2e-no-such-node":"true"}`

// TestDeleteInterruptsKubernetes deletes a workspace whose pod can never
// be scheduled (a node selector no node has; the provisioning would wait
// the 10-minute start timeout): it is gone within an ordinary delete's
// time plus interruptSlack, and nothing of it is left in the namespace.
func TestDeleteInterruptsKubernetes(t *testing.T) {
	p := startPrimer(t, withContainers(t), withProbeInterval(500*time.Millisecond))
	k := kubeProvider(t, p, "k8s", kubernetes.ReachPodIP)
	k.template(t, p, "bb", `{"kind":"kubernetes","image":"`+kubernetestest.BusyboxImage+`","memory_limit":"128Mi","pvc_size":"16Mi"}`)
	k.template(t, p, "nowhere", `{"kind":"kubernetes","image":"`+kubernetestest.BusyboxImage+`","memory_limit":"128Mi","pvc_size":"16Mi",`+unschedulable+`}`)
	left := func(id string) func() []string {
		return func() []string {
			objs, err := k.b.Objects(ctxT(t, 30*time.Second), id)
			if err != nil {
				t.Fatalf("objects of %s: %v", id, err)
			}
			return objs
		}
	}

	ws := createRunning(t, p, "bb")
	destroy := deleteToGone(t, p.api, ws.ID, left(ws.ID))

	ctx := ctxT(t, 2*time.Minute)
	ws, err := p.api.CreateWorkspace(ctx, client.CreateWorkspaceRequest{TemplateID: "nowhere"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k.b.Destroy(context.Background(), backend.Handle{Backend: kubernetes.Type, WorkspaceID: ws.ID})
	})
	pods := k.b.Clientset().CoreV1().Pods(k.ns)
	eventually(t, time.Minute, "the pod made and pending", func() bool {
		pod, err := pods.Get(ctx, kubernetes.PodName(ws.ID), metav1.GetOptions{})
		return err == nil && pod.Status.Phase == "Pending"
	})
	withinBound(t, "unschedulable pod", deleteToGone(t, p.api, ws.ID, left(ws.ID)), destroy)
}
