//go:build bench

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	kclient "k8s.io/client-go/kubernetes"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/workflows"
)

// TestBenchKubernetes measures the kubernetes backend's targets on the
// cluster of KUBECONFIG against the same objects applied directly with
// client-go in the same run and namespace: create to first exec, and 20
// workspaces created at once.
//
// The raw baseline makes what the backend makes for a workspace (its
// Manifests: the Secret, the PVC of the same size and class, the
// StatefulSet of one replica with the same pod spec, init container and
// runtime included), and stops its clock when the pod is Ready: the pod
// has no readiness probe, so that is when the runtime process has started.
// Ours stops when an exec of `true` through the API has completed, which
// adds the platform's check that the runtime answers, the workflow's first
// probe and the exec itself.
func TestBenchKubernetes(t *testing.T) {
	requireBench(t)
	kubernetestest.Kubeconfig(t) // skips (fails in CI) without a cluster, before the platform starts
	p := startPrimer(t, withContainers(t), withProbeInterval(workflows.DefaultProbeInterval))
	ctx := ctxT(t, 25*time.Minute)
	k := kubeProvider(t, p, "k8s-bench", kubernetes.ReachPodIP)
	tmpl := kubernetestest.Template(kubernetestest.BusyboxImage, nil)
	k.template(t, p, "bb", string(tmpl))
	b := &kubeBench{
		bench: &bench{t: t, p: p},
		env:   k,
		cs:    k.b.Clientset(),
		tmpl:  tmpl,
		run:   randomHex(3),
		// The raw objects are built by a backend of no installation, so
		// the platform's reconciler never takes them for its own.
		raw: kubernetestest.Backend(t, k.ns, kubernetes.ReachPodIP, ""),
	}
	t.Cleanup(b.cleanup)
	tr := traceNamespace(t, b.cs, k.ns)

	// 1. Create to first exec (ours) and to pod Ready (raw), taking turns
	// so both see the same noise; removal is not timed. Each run's stages
	// are kept for the breakdown.
	var created, createdRaw []time.Duration
	var runs, runsRaw []traced
	for i := range 10 {
		start := time.Now()
		created = append(created, timeOwn(t, 1, func() (time.Duration, error) { return b.createToExec(ctx) })...)
		id := b.lastID()
		runs = append(runs, traced{id: id, start: start, end: created[i], platform: workflowStages(t, ctx, p, id)})
		createdRaw = append(createdRaw, timeOwn(t, 1, func() (time.Duration, error) {
			id := b.rawID(fmt.Sprint(i))
			defer b.rawRemove(id)
			start := time.Now()
			err := b.rawCreateReady(ctx, id)
			runsRaw = append(runsRaw, traced{id: id, start: start, end: time.Since(start)})
			return time.Since(start), err
		})...)
	}

	// 2. Delete of a running workspace to nothing left, taking turns: ours
	// from the API's delete until GET answers 404 and the backend finds no
	// object; raw, the same objects deleted with client-go as `kubectl
	// delete` does (the pod with its grace period, 3 s) until the pod and
	// the PVC are gone.
	var deleted, deletedRaw []time.Duration
	for i := range 5 {
		ws := createRunning(t, p, "bb")
		b.track(ws.ID)
		deleted = append(deleted, deleteToGone(t, p.api, ws.ID, func() []string {
			objs, err := k.b.Objects(ctx, ws.ID)
			if err != nil {
				t.Fatalf("objects of %s: %v", ws.ID, err)
			}
			return objs
		}))
		id := b.rawID(fmt.Sprint("d", i))
		if err := b.rawCreateReady(ctx, id); err != nil {
			t.Fatalf("raw %s: %v", id, err)
		}
		start := time.Now()
		if err := b.rawDelete(ctx, id); err != nil {
			t.Fatalf("raw %s: %v", id, err)
		}
		deletedRaw = append(deletedRaw, time.Since(start))
	}

	// 3. 20 workspaces at once, ours (then deleted) and raw.
	const burst = 20
	wall, running := b.createBurst(ctx, burst)
	wallRaw := b.rawBurst(ctx, burst)
	if running != burst {
		t.Errorf("%d of %d workspaces created at once reached running", running, burst)
	}

	rows := []row{
		{name: "create to first exec (API, pod_ip)", target: "p50 <= 1.5x raw", samples: created, baseName: "Secret+PVC+StatefulSet to pod Ready", baseline: createdRaw},
		{name: "delete of a running workspace to nothing left (API)", target: "p50 < 1 s", samples: deleted, baseName: "client-go delete (pod grace 3 s) to pod and PVC gone", baseline: deletedRaw, limit: time.Second},
		{name: fmt.Sprintf("%d created at once to all running (wall)", burst), target: fmt.Sprintf("all %d running", burst), samples: []time.Duration{wall}, baseName: fmt.Sprintf("%d x Secret+PVC+StatefulSet to all Ready", burst), baseline: []time.Duration{wallRaw}},
	}
	printTable(t, fmt.Sprintf("Kubernetes backend on the cluster of KUBECONFIG, namespace %s (probe interval %s)", k.ns, workflows.DefaultProbeInterval), rows)
	printSpeedups(rows)
	tr.print(runs, runsRaw)
	ratioAtMost(t, rows[0], 1.5)
	b.checkGone(ctx)
}

// kubeBench is a run on one cluster namespace: the platform's workspaces
// (through the embedded bench) and the raw baseline's objects beside them.
type kubeBench struct {
	*bench
	env  *kubeEnv
	cs   kclient.Interface
	raw  *kubernetes.Backend
	tmpl []byte
	run  string // random, in every raw name of this run

	rawIDs []string // under bench.mu
}

// rawID returns a workspace id whose objects are named rawPrefix+suffix
// (the backend names them "primer-" + id).
func (b *kubeBench) rawID(suffix string) string {
	id := strings.TrimPrefix(rawPrefix, kubernetes.Name("")) + b.run + "-" + suffix
	b.mu.Lock()
	b.rawIDs = append(b.rawIDs, id)
	b.mu.Unlock()
	return id
}

// rawCreateReady applies the objects the backend would make for workspace
// id, as Provision does (the Secret, then the others owned by it), and
// waits until the pod is Ready, watching it from before its creation.
func (b *kubeBench) rawCreateReady(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	m, err := b.raw.Manifests(backend.ProvisionRequest{WorkspaceID: id, Template: b.tmpl, Token: "bench-raw-token"})
	if err != nil {
		return err
	}
	ns := b.env.ns
	pods := b.cs.CoreV1().Pods(ns)
	pod := kubernetes.PodName(id)
	// List, then watch from the list's version, as an informer does: a
	// watch of no version waits one to three seconds for the API server's
	// cache to be fresh.
	byName := fields.OneTermEqualSelector("metadata.name", pod).String()
	l, err := pods.List(ctx, metav1.ListOptions{FieldSelector: byName})
	if err != nil {
		return fmt.Errorf("raw %s: list pod: %w", id, err)
	}
	rv := l.ResourceVersion
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: byName, ResourceVersion: rv})
	if err != nil {
		return fmt.Errorf("raw %s: watch pod: %w", id, err)
	}
	defer func() { w.Stop() }()

	secret, err := b.cs.CoreV1().Secrets(ns).Create(ctx, m.Secret, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("raw %s: create Secret: %w", id, err)
	}
	m.Own(secret)
	if _, err := b.cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, m.PVC, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("raw %s: create PVC: %w", id, err)
	}
	if _, err := b.cs.AppsV1().StatefulSets(ns).Create(ctx, m.StatefulSet, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("raw %s: create StatefulSet: %w", id, err)
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("raw %s: pod %s not Ready: %w", id, pod, ctx.Err())
		case ev, ok := <-w.ResultChan():
			if ok && ev.Type == watch.Error {
				return fmt.Errorf("raw %s: watch pod: %v", id, apierrors.FromObject(ev.Object))
			}
			if !ok {
				// The server ended the watch: go on from the last
				// version seen.
				w.Stop()
				if w, err = pods.Watch(ctx, metav1.ListOptions{FieldSelector: byName, ResourceVersion: rv}); err != nil {
					return fmt.Errorf("raw %s: watch pod: %w", id, err)
				}
				continue
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			if podReady(p) {
				return nil
			}
			rv = p.ResourceVersion
		}
	}
}

// podReady reports whether p's Ready condition is true.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// rawBurst makes n raw workspaces at once and returns the wall time until
// every pod is Ready; it removes them afterwards, untimed.
func (b *kubeBench) rawBurst(ctx context.Context, n int) time.Duration {
	ids := make([]string, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		ids[i] = b.rawID(fmt.Sprintf("burst-%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.rawCreateReady(ctx, ids[i]); err != nil {
				b.t.Errorf("raw burst: %v", err)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	b.rawRemove(ids...)
	return wall
}

// rawRemove deletes the raw workspaces' objects as Destroy does and waits
// until they are gone, on a context of its own so it also runs after a
// failure.
func (b *kubeBench) rawRemove(ids ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.rawDelete(ctx, id); err != nil {
				b.t.Errorf("raw %s: %v", id, err)
			}
		}()
	}
	wg.Wait()
}

// rawDelete deletes one raw workspace's objects and waits until its pod
// and PVC are gone.
func (b *kubeBench) rawDelete(ctx context.Context, id string) error {
	ns, name, pod := b.env.ns, kubernetes.Name(id), kubernetes.PodName(id)
	bg := metav1.DeletePropagationBackground
	grace := int64(3)
	dels := []func() error{
		func() error {
			return b.cs.AppsV1().StatefulSets(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
		},
		func() error {
			return b.cs.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		},
		func() error {
			return b.cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, metav1.DeleteOptions{})
		},
		func() error { return b.cs.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{}) },
	}
	for _, del := range dels {
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete: %w", err)
		}
	}
	for {
		_, perr := b.cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		_, verr := b.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(perr) && apierrors.IsNotFound(verr) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still there after delete (pod: %v, PVC: %v)", perr, verr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkGone fails the test if the namespace still holds anything of a
// workspace the platform made and deleted, or of the raw baseline.
func (b *kubeBench) checkGone(ctx context.Context) {
	b.mu.Lock()
	ids := slices.Clone(b.ids)
	b.mu.Unlock()
	for _, id := range ids {
		objs, err := b.env.b.Objects(ctx, id)
		if err != nil {
			b.t.Fatal(err)
		}
		if len(objs) > 0 {
			b.t.Errorf("objects left after deleting workspace %s: %v", id, objs)
		}
	}
	b.mu.Lock()
	raws := slices.Clone(b.rawIDs)
	b.mu.Unlock()
	for _, id := range raws {
		objs, err := b.raw.Objects(ctx, id)
		if err != nil {
			b.t.Fatal(err)
		}
		if len(objs) > 0 {
			b.t.Errorf("raw baseline objects left of %s: %v", id, objs)
		}
	}
}

// cleanup deletes the workspaces the platform still has and every raw
// baseline object, so a failed run leaves nothing in the namespace (which
// is deleted after).
func (b *kubeBench) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if list, err := b.p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{}); err == nil {
		ids := make([]string, 0, len(list))
		for _, w := range list {
			ids = append(ids, w.ID)
		}
		b.delete(ids...)
	}
	b.mu.Lock()
	ids := slices.Clone(b.rawIDs)
	b.mu.Unlock()
	b.rawRemove(ids...)
}

// lastID is the id of the workspace made last.
func (b *kubeBench) lastID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ids[len(b.ids)-1]
}

// Stages of a workspace's objects as a test client watching the namespace
// sees them first (so with the watch's delay, the same for both).
const (
	stagePVCBound    = "PVC bound"
	stagePodCreated  = "pod created"
	stageScheduled   = "pod scheduled"
	stageInitialized = "init container done"
	stageRunning     = "workspace container running"
	stageReady       = "pod Ready"
)

var podStages = []string{stagePVCBound, stagePodCreated, stageScheduled, stageInitialized, stageRunning, stageReady}

// traced is one timed run: the workspace id, when the clock started and
// how long it ran, and (ours) the workflow's stages.
type traced struct {
	id       string
	start    time.Time
	end      time.Duration
	platform map[string]time.Time
}

// tracer notes, per object name, when each stage was first seen.
type tracer struct {
	mu   sync.Mutex
	seen map[string]map[string]time.Time
}

// traceNamespace watches the pods and PVCs of ns until the test ends. The
// watches are open when it returns, from the versions of a first list (a
// watch of no version would only start after one to three seconds).
func traceNamespace(t *testing.T, cs kclient.Interface, ns string) *tracer {
	t.Helper()
	tr := &tracer{seen: map[string]map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	follow := func(list func() (string, error), watchFrom func(rv string) (watch.Interface, error), note func(runtime.Object)) {
		rv, err := list()
		if err != nil {
			t.Fatal(err)
		}
		w, err := watchFrom(rv)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				for ev := range w.ResultChan() {
					if ev.Type == watch.Error {
						rv = "" // too old: list again
						break
					}
					note(ev.Object)
					if m, err := meta.Accessor(ev.Object); err == nil {
						rv = m.GetResourceVersion()
					}
				}
				w.Stop()
				for {
					if ctx.Err() != nil {
						return
					}
					if rv == "" {
						rv, _ = list()
					}
					if w, err = watchFrom(rv); err == nil {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	pods, pvcs := cs.CoreV1().Pods(ns), cs.CoreV1().PersistentVolumeClaims(ns)
	follow(func() (string, error) {
		l, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		return l.ResourceVersion, nil
	}, func(rv string) (watch.Interface, error) {
		return pods.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	}, func(o runtime.Object) {
		pod, ok := o.(*corev1.Pod)
		if !ok {
			return
		}
		name := strings.TrimSuffix(pod.Name, "-0")
		tr.note(name, stagePodCreated)
		for _, c := range pod.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case corev1.PodScheduled:
				tr.note(name, stageScheduled)
			case corev1.PodInitialized:
				tr.note(name, stageInitialized)
			case corev1.PodReady:
				tr.note(name, stageReady)
			}
		}
		for _, c := range pod.Status.ContainerStatuses {
			if c.State.Running != nil {
				tr.note(name, stageRunning)
			}
		}
	})
	follow(func() (string, error) {
		l, err := pvcs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		return l.ResourceVersion, nil
	}, func(rv string) (watch.Interface, error) {
		return pvcs.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	}, func(o runtime.Object) {
		if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok && pvc.Status.Phase == corev1.ClaimBound {
			tr.note(pvc.Name, stagePVCBound)
		}
	})
	return tr
}

// note records now as when name reached stage, unless it had before.
func (tr *tracer) note(name, stage string) {
	now := time.Now()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	m := tr.seen[name]
	if m == nil {
		m = map[string]time.Time{}
		tr.seen[name] = m
	}
	if _, ok := m[stage]; !ok {
		m[stage] = now
	}
}

// print prints the p50 of each stage after the start of the clock, ours
// beside raw: where the time of a create goes.
func (tr *tracer) print(ours, raw []traced) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	at := func(runs []traced, stage string) string {
		var d []time.Duration
		for _, r := range runs {
			t, ok := tr.seen[kubernetes.Name(r.id)][stage]
			if r.platform != nil && !ok {
				t, ok = r.platform[stage]
			}
			if ok {
				d = append(d, t.Sub(r.start))
			}
		}
		if len(d) == 0 {
			return "-"
		}
		return fmt.Sprintf("%s (%d)", ms(pct(d, .5)), len(d))
	}
	var b strings.Builder
	fmt.Fprintln(&b, "| stage after the clock started (p50, runs seen) | ours | raw |")
	fmt.Fprintln(&b, "|---|---|---|")
	for _, st := range slices.Concat([]string{stageWorkflowStarted, stageProvisionStarted}, podStages, []string{stageProvisionCompleted, stageProbed}) {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", st, at(ours, st), at(raw, st))
	}
	ends := func(runs []traced) string {
		d := make([]time.Duration, 0, len(runs))
		for _, r := range runs {
			d = append(d, r.end)
		}
		return ms(pct(d, .5))
	}
	fmt.Fprintf(&b, "| clock stopped (ours: exec done; raw: pod Ready seen) | %s | %s |\n", ends(ours), ends(raw))
	fmt.Println(b.String())
}

// Stages of the workspace workflow, from its history.
const (
	stageWorkflowStarted    = "workflow started"
	stageProvisionStarted   = "Provision activity started"
	stageProvisionCompleted = "Provision activity completed"
	stageProbed             = "first probe recorded (workflow task completed)"
)

// workflowStages reads when the workspace's workflow started, its
// Provision activity started and completed, and the workflow task after
// (the first probe and the phase running are local activities in it)
// completed.
func workflowStages(t *testing.T, ctx context.Context, p *primer, id string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	it := p.srv.TemporalClient().GetWorkflowHistory(ctx, workflows.WorkflowID(id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]string{}
	first := func(stage string, at time.Time) {
		if _, ok := out[stage]; !ok {
			out[stage] = at
		}
	}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		at := ev.GetEventTime().AsTime()
		switch {
		case ev.GetWorkflowExecutionStartedEventAttributes() != nil:
			first(stageWorkflowStarted, at)
		case ev.GetActivityTaskScheduledEventAttributes() != nil:
			scheduled[ev.GetEventId()] = ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		case ev.GetActivityTaskStartedEventAttributes() != nil:
			if scheduled[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()] == "Provision" {
				first(stageProvisionStarted, at)
			}
		case ev.GetActivityTaskCompletedEventAttributes() != nil:
			if scheduled[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()] == "Provision" {
				first(stageProvisionCompleted, at)
			}
		case ev.GetWorkflowTaskCompletedEventAttributes() != nil:
			if _, ok := out[stageProvisionCompleted]; ok {
				first(stageProbed, at)
			}
		}
	}
	return out
}
