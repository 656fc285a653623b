package kubernetes

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

var _ backend.Pauser = (*Backend)(nil)

// Pause implements backend.Pauser: it scales the workspace's StatefulSet
// to 0 replicas and waits until its pod is gone. The PVC, the Secret, the
// Service and the NetworkPolicy stay, so the workspace holds storage but
// no CPU or memory, and Resume brings the pod back on the same volume.
// Only SnapshotFilesystem (or no mode) is taken: a pod's processes cannot
// be checkpointed here.
func (b *Backend) Pause(ctx context.Context, h backend.Handle, mode string) (backend.Handle, error) {
	if mode != "" && mode != backend.SnapshotFilesystem {
		return backend.Handle{}, errs.E(errs.Invalid, "workspace %s: pause: mode %q: Kubernetes pauses the filesystem only (its pods' processes cannot be checkpointed)", h.WorkspaceID, mode)
	}
	if err := b.checkHandle(h); err != nil {
		return backend.Handle{}, err
	}
	unlock, err := b.lockFor(h)
	if err != nil {
		return backend.Handle{}, err
	}
	defer unlock()
	if err := b.pause(ctx, h.WorkspaceID); err != nil {
		return backend.Handle{}, err
	}
	return b.handle(h.WorkspaceID), nil
}

// pause scales the workspace to 0 and waits for its pod to be gone; the
// caller holds the workspace's lock.
func (b *Backend) pause(ctx context.Context, id string) error {
	// The runtime is asked to stop, as Destroy does, so the pod is gone as
	// soon as it has stopped rather than when the kubelet confirms it.
	rt := b.connectRuntime(ctx, id)
	if rt != nil {
		defer rt.c.Close()
	}
	if err := b.scale(ctx, id, 0); err != nil {
		return err
	}
	b.stopForward(id)
	ns := b.cfg.Namespace
	if err := b.cs.CoreV1().Pods(ns).Delete(ctx, PodName(id), metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(podGracePeriod))}); err != nil && !apierrors.IsNotFound(err) {
		return b.apiErr(err, "workspace %s: delete pod", id)
	}
	if rt != nil {
		rt.shutdown(ctx, b.logger, id)
		if rt.stopped(ctx, (podGracePeriod+2)*time.Second) {
			err := b.cs.CoreV1().Pods(ns).Delete(ctx, PodName(id), metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0)), Preconditions: &metav1.Preconditions{UID: &rt.pod}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return b.apiErr(err, "workspace %s: delete stopped pod", id)
			}
		}
	}
	if err := b.waitPodGone(ctx, id); err != nil {
		return err
	}
	b.logger.Info("workspace paused: StatefulSet scaled to 0, volume kept", "workspace_id", id, "pvc", Name(id))
	return nil
}

// Resume implements backend.Pauser: it scales the workspace's StatefulSet
// back to one replica, waits for the pod to run and its runtime to answer
// with token, and returns the workspace's handle. Resuming a running
// workspace only checks that it answers.
func (b *Backend) Resume(ctx context.Context, h backend.Handle, token string, _ backend.EnvFunc) (backend.Handle, error) {
	if err := b.checkHandle(h); err != nil {
		return backend.Handle{}, err
	}
	if token == "" {
		return backend.Handle{}, errs.E(errs.Invalid, "workspace %s: resume: no runtime token", h.WorkspaceID)
	}
	unlock, err := b.lockFor(h)
	if err != nil {
		return backend.Handle{}, err
	}
	defer unlock()
	if err := b.resume(ctx, h.WorkspaceID, token); err != nil {
		return backend.Handle{}, err
	}
	return b.handle(h.WorkspaceID), nil
}

// resume scales the workspace to 1 and waits for its runtime to answer
// with token; the caller holds the workspace's lock.
func (b *Backend) resume(ctx context.Context, id, token string) error {
	if err := b.scale(ctx, id, 1); err != nil {
		return err
	}
	if err := b.awaitRuntime(ctx, id, token); err != nil {
		return err
	}
	b.logger.Info("workspace resumed", "workspace_id", id, "pod", PodName(id))
	return nil
}

// scale sets the replicas of the workspace's StatefulSet (0 paused, 1
// running). A merge patch needs no read first and cannot conflict with the
// controller's status writes.
func (b *Backend) scale(ctx context.Context, id string, replicas int32) error {
	sets := b.cs.AppsV1().StatefulSets(b.cfg.Namespace)
	cur, err := sets.Get(ctx, Name(id), metav1.GetOptions{})
	if err != nil {
		return b.apiErr(err, "workspace %s: get StatefulSet", id)
	}
	if !b.owns(cur.Labels, id) {
		return errs.E(errs.Conflict, "workspace %s: StatefulSet %s/%s does not belong to it", id, b.cfg.Namespace, cur.Name)
	}
	if cur.Spec.Replicas != nil && *cur.Spec.Replicas == replicas {
		return nil
	}
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	if _, err := sets.Patch(ctx, Name(id), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return b.apiErr(err, "workspace %s: scale StatefulSet to %d", id, replicas)
	}
	return nil
}

// paused reports whether the workspace's StatefulSet is scaled to 0.
func (b *Backend) paused(ctx context.Context, id string) bool {
	sts, err := b.cs.AppsV1().StatefulSets(b.cfg.Namespace).Get(ctx, Name(id), metav1.GetOptions{})
	return err == nil && sts.Spec.Replicas != nil && *sts.Spec.Replicas == 0
}

// waitPodGone waits until the workspace's pod no longer exists.
func (b *Backend) waitPodGone(ctx context.Context, id string) error {
	for {
		_, err := b.cs.CoreV1().Pods(b.cfg.Namespace).Get(ctx, PodName(id), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return b.apiErr(err, "workspace %s: get pod", id)
		}
		b.awaitPodGone(ctx, id)
		if ctx.Err() != nil {
			return errs.E(errs.Timeout, "workspace %s: pod %s still there after scaling to 0", id, PodName(id))
		}
	}
}
