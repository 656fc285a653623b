//go:build bench

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/wire"
)

// interruptRuns is how many workspaces each row deletes.
const interruptRuns = 10

// TestBenchInterrupt times a delete during a stuck provision, from the
// delete call to nothing left (GET 404, then no object on the engine),
// beside the delete of a running workspace of the same template family:
// on containers (init `sleep 600`; Docker and Podman) and on Kubernetes (a
// pod no node can take), where a cluster is up. The target is the issue's:
// within the destroy time plus 5 s.
func TestBenchInterrupt(t *testing.T) {
	requireBench(t)
	t.Run("container", func(t *testing.T) {
		containertest.Each(t, func(t *testing.T, e containertest.Engine) {
			r := newFaultRig(t, e)
			r.template("quick", nil)
			r.template("stuck", map[string]any{"init": []string{"sleep 600"}})
			left := func(id string) func() []string {
				return func() []string { return containertest.Objects(t, r.eng, id) }
			}
			var destroy, stuck []time.Duration
			for range interruptRuns {
				ws := r.running(t, "quick")
				destroy = append(destroy, deleteToGone(t, r.p.api, ws.ID, left(ws.ID)))

				ctx := ctxT(t, 2*time.Minute)
				sw, err := r.p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "stuck"})
				if err != nil {
					t.Fatal(err)
				}
				r.runningContainer(t, sw.ID, "")
				stuck = append(stuck, deleteToGone(t, r.p.api, sw.ID, left(sw.ID)))
			}
			printInterrupt(t, "container on "+e.Name, "init `sleep 600`", stuck, destroy)
		})
	})
	t.Run("kubernetes", func(t *testing.T) {
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
		pods := k.b.Clientset().CoreV1().Pods(k.ns)
		var destroy, stuck []time.Duration
		for range interruptRuns / 2 {
			ws := createRunning(t, p, "bb")
			destroy = append(destroy, deleteToGone(t, p.api, ws.ID, left(ws.ID)))

			ctx := ctxT(t, 2*time.Minute)
			sw, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "nowhere"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = k.b.Destroy(context.Background(), backend.Handle{Backend: kubernetes.Type, WorkspaceID: sw.ID})
			})
			eventually(t, time.Minute, "the pod made and pending", func() bool {
				pod, err := pods.Get(ctx, kubernetes.PodName(sw.ID), metav1.GetOptions{})
				return err == nil && pod.Status.Phase == "Pending"
			})
			stuck = append(stuck, deleteToGone(t, p.api, sw.ID, left(sw.ID)))
		}
		printInterrupt(t, "Kubernetes", "pod never scheduled", stuck, destroy)
	})
}

// printInterrupt prints the row of one backend: the interrupted deletes
// against the deletes of running workspaces, the p50 limited to theirs
// plus interruptSlack.
func printInterrupt(t *testing.T, where, how string, stuck, destroy []time.Duration) {
	t.Helper()
	printTable(t, "Delete during a stuck provision: "+where, []row{{
		name:     fmt.Sprintf("delete during a stuck provision (%s) to nothing left", how),
		target:   fmt.Sprintf("p50 < destroy + %s", interruptSlack),
		samples:  stuck,
		baseName: "delete of a running workspace to nothing left",
		baseline: destroy,
		limit:    pct(destroy, .5) + interruptSlack,
	}})
}
