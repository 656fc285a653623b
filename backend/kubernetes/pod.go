package kubernetes

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/primerhq/primer/errs"
)

// state is what a pod's status says about a workspace.
type state struct {
	running bool
	// fatal is set when waiting longer cannot help: the image is missing,
	// the container cannot be made, the pod failed.
	fatal errs.Kind
	// reason says why the pod does not run (for errors and phase reasons).
	reason string
}

// Container waiting reasons that end a provision at once.
var (
	imageErrors  = []string{"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "ImageInspectError", "RegistryUnavailable"}
	configErrors = []string{"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreCreateHookError", "PreStartHookError"}
)

// podState reads a pod's status. tokenSum, when set, is the token hash the
// pod must have been made for: an older pod is one being replaced.
func podState(pod *corev1.Pod, tokenSum string) state {
	if pod.DeletionTimestamp != nil {
		return state{reason: "is being deleted"}
	}
	if tokenSum != "" && pod.Annotations[annotationToken] != tokenSum {
		return state{reason: "is being replaced (started with an older token)"}
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return state{fatal: errs.Unavailable, reason: fmt.Sprintf("has ended (%s): %s %s", pod.Status.Phase, pod.Status.Reason, pod.Status.Message)}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return state{reason: fmt.Sprintf("is pending: %s: %s", c.Reason, c.Message)}
		}
	}
	check := func(kind string, statuses []corev1.ContainerStatus) (state, bool) {
		for _, cs := range statuses {
			if w := cs.State.Waiting; w != nil {
				msg := fmt.Sprintf("%s container %s (image %s) is waiting: %s", kind, cs.Name, cs.Image, w.Reason)
				if w.Message != "" {
					msg += ": " + w.Message
				}
				switch {
				case slices.Contains(imageErrors, w.Reason):
					return state{fatal: errs.NotFound, reason: msg}, true
				case slices.Contains(configErrors, w.Reason):
					return state{fatal: errs.Invalid, reason: msg}, true
				case w.Reason == "CrashLoopBackOff":
					return state{fatal: errs.Unavailable, reason: msg + lastTermination(cs)}, true
				}
				return state{reason: msg}, true
			}
			// The runtime never exits by itself; an init container that
			// exits 0 has done its job.
			if term := cs.State.Terminated; term != nil && (kind == "the workspace" || term.ExitCode != 0) {
				return state{fatal: errs.Unavailable, reason: fmt.Sprintf("%s container %s exited with code %d (%s) %s", kind, cs.Name, term.ExitCode, term.Reason, term.Message)}, true
			}
		}
		return state{}, false
	}
	if st, ok := check("the runtime's init", pod.Status.InitContainerStatuses); ok {
		return st
	}
	if st, ok := check("the workspace", pod.Status.ContainerStatuses); ok {
		return st
	}
	if pod.Status.Phase != corev1.PodRunning {
		return state{reason: fmt.Sprintf("is %s", strings.ToLower(string(pod.Status.Phase)))}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == containerName && cs.State.Running != nil {
			return state{running: true}
		}
	}
	return state{reason: "is starting"}
}

func lastTermination(cs corev1.ContainerStatus) string {
	if t := cs.LastTerminationState.Terminated; t != nil {
		return fmt.Sprintf(" (last exit code %d, %s %s)", t.ExitCode, t.Reason, strings.TrimSpace(t.Message))
	}
	return ""
}

// waitPod waits until the workspace's pod, made for tokenSum, runs its
// workspace container. It ends early on a fatal state, and before the
// context's deadline with the pod's last reason (so the error says why, not
// only that time ran out); without a deadline it waits ReadyTimeout.
func (b *Backend) waitPod(ctx context.Context, id, tokenSum string) (*corev1.Pod, error) {
	start := time.Now()
	limit := b.opts.ReadyTimeout
	if dl, ok := ctx.Deadline(); ok {
		// Leave time to clean up and to say why before the deadline.
		limit = time.Until(dl) - min(5*time.Second, time.Until(dl)/4)
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	pods := b.cs.CoreV1().Pods(b.cfg.Namespace)
	name := PodName(id)
	// The pod is listed rather than got, for a resource version to watch
	// from even while it does not exist: a watch of none waits until the
	// API server's cache is fresh, one to three seconds, as long as a pod
	// takes to start.
	byName := fields.OneTermEqualSelector("metadata.name", name).String()
	reason := "does not exist yet"
	var lastMountCheck time.Time
	for {
		l, err := pods.List(wctx, metav1.ListOptions{FieldSelector: byName})
		rv := ""
		switch {
		case err != nil:
			if wctx.Err() != nil {
				return nil, b.notReady(ctx, id, start, reason)
			}
			return nil, b.apiErr(err, "workspace %s: list pod", id)
		case len(l.Items) == 0:
			rv = l.ResourceVersion
			reason = "does not exist yet" + b.setWarning(wctx, id)
		default:
			pod := &l.Items[0]
			rv = l.ResourceVersion
			st := podState(pod, tokenSum)
			if st.running {
				return pod, nil
			}
			reason = st.reason
			if st.fatal != errs.Other {
				return nil, errs.E(st.fatal, "workspace %s: pod %s/%s %s%s", id, b.cfg.Namespace, name, st.reason, b.podWarning(ctx, pod))
			}
			if time.Since(lastMountCheck) > 5*time.Second && pod.Spec.NodeName != "" && time.Since(start) > 5*time.Second {
				lastMountCheck = time.Now()
				b.unstickMount(wctx, id, pod)
			}
		}
		// Wait for the next change of the pod (or a few seconds, to look
		// at the StatefulSet's events when there is no pod yet).
		w, err := pods.Watch(wctx, metav1.ListOptions{
			FieldSelector:   byName,
			ResourceVersion: rv,
			TimeoutSeconds:  ptr(int64(5)),
		})
		if err != nil {
			if wctx.Err() != nil {
				return nil, b.notReady(ctx, id, start, reason)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		b.nextEvent(wctx, w)
		if wctx.Err() != nil {
			return nil, b.notReady(ctx, id, start, reason)
		}
	}
}

// unstickMount deletes a pod the kubelet failed to mount the workspace's
// PVC for because it read the claim in the moment between its binding's
// two writes ("PVC is not bound"): the kubelet may not look again for two
// minutes, while a new pod, which the StatefulSet makes at once, mounts the
// bound claim in a second. It does nothing unless the pod's newest warning
// says so and the claim is bound now.
func (b *Backend) unstickMount(ctx context.Context, id string, pod *corev1.Pod) {
	if pod.Status.Phase != corev1.PodPending {
		return
	}
	w := b.podWarning(ctx, pod)
	if !strings.Contains(w, "FailedMount") || !strings.Contains(w, "not bound") {
		return
	}
	pvc, err := b.cs.CoreV1().PersistentVolumeClaims(b.cfg.Namespace).Get(ctx, Name(id), metav1.GetOptions{})
	if err != nil || pvc.Status.Phase != corev1.ClaimBound {
		return
	}
	b.logger.Info("pod stuck on a claim that is bound now: deleting it for the StatefulSet to make again", "workspace_id", id, "pod", pod.Name, "warning", w)
	_ = b.cs.CoreV1().Pods(b.cfg.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
}

// nextEvent returns after the watch's first event (or its end).
func (b *Backend) nextEvent(ctx context.Context, w watch.Interface) {
	defer w.Stop()
	select {
	case <-ctx.Done():
	case <-w.ResultChan():
	}
}

func (b *Backend) notReady(ctx context.Context, id string, start time.Time, reason string) error {
	if ctx.Err() != nil && ctx.Err() != context.DeadlineExceeded {
		return errs.E(errs.Canceled, "workspace %s: waiting for pod %s: %v", id, PodName(id), ctx.Err())
	}
	return errs.E(errs.Timeout, "workspace %s: pod %s/%s did not run within %s: it %s", id, b.cfg.Namespace, PodName(id), time.Since(start).Round(time.Second), reason)
}

// podWarning returns the newest warning event of the pod (the kubelet's
// "Failed to pull image ...: not found"), as "; event: ...".
func (b *Backend) podWarning(ctx context.Context, pod *corev1.Pod) string {
	return b.warning(ctx, "Pod", pod.Name, string(pod.UID))
}

// setWarning returns the newest warning event of the workspace's
// StatefulSet (a pod it could not create: a quota, a missing RuntimeClass).
func (b *Backend) setWarning(ctx context.Context, id string) string {
	return b.warning(ctx, "StatefulSet", Name(id), "")
}

func (b *Backend) warning(ctx context.Context, kind, name, uid string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name, "type": corev1.EventTypeWarning}
	if uid != "" {
		sel["involvedObject.uid"] = uid
	}
	evs, err := b.cs.CoreV1().Events(b.cfg.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.AsSelector().String()})
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	last := evs.Items[0]
	for _, e := range evs.Items[1:] {
		if eventTime(e).After(eventTime(last)) {
			last = e
		}
	}
	return fmt.Sprintf("; event %s: %s", last.Reason, strings.TrimSpace(last.Message))
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// withLogs appends the tail of the workspace container's output to err:
// the runtime says there why it could not start.
func (b *Backend) withLogs(ctx context.Context, id string, err error) error {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	rc, lerr := b.cs.CoreV1().Pods(b.cfg.Namespace).GetLogs(PodName(id), &corev1.PodLogOptions{Container: containerName, TailLines: ptr(int64(20))}).Stream(lctx)
	if lerr != nil {
		return err
	}
	defer rc.Close()
	out, _ := io.ReadAll(io.LimitReader(rc, 8<<10))
	if tail := strings.TrimSpace(string(out)); tail != "" {
		return fmt.Errorf("%w; container output: %s", err, tail)
	}
	return err
}

// between reports whether pod is in a state that passes by itself: being
// deleted (the StatefulSet makes it again), or made and not yet placed by
// the scheduler (which places it or says why it cannot in a moment).
func between(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return true
	}
	if pod.Spec.NodeName != "" {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return false
		}
	}
	return true
}

// settledPod waits, within most of ctx's time, for the workspace's pod to
// leave the states that pass by themselves (see between) and returns it;
// nil when none settled in time (or the pod is gone with its StatefulSet).
// A probe that finds the pod deleted thus reports what the pod made again
// meets (the scheduler's reason when it cannot be placed, say) rather than
// the deletion, which is never why a workspace stays down: which of the
// two a probe reported depended on when it ran.
func (b *Backend) settledPod(ctx context.Context, id string) *corev1.Pod {
	limit := 3 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(dl)/2)
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	pods := b.cs.CoreV1().Pods(b.cfg.Namespace)
	byName := fields.OneTermEqualSelector("metadata.name", PodName(id)).String()
	for wctx.Err() == nil {
		l, err := pods.List(wctx, metav1.ListOptions{FieldSelector: byName})
		if err != nil {
			return nil
		}
		if len(l.Items) == 1 && !between(&l.Items[0]) {
			return &l.Items[0]
		}
		w, err := pods.Watch(wctx, metav1.ListOptions{FieldSelector: byName, ResourceVersion: l.ResourceVersion})
		if err != nil {
			return nil
		}
		b.nextEvent(wctx, w)
	}
	return nil
}
