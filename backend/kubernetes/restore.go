package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	rtclient "github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// resetNote is what Capabilities says a pod's reset restores.
const resetNote = "sandbox: when anything outside the workspace changed since the base (the template's files and init applied), the pod is deleted and its StatefulSet makes it again from the image (/tmp, /home, /usr/local as the image has them), the workspace volume (" + Workdir + ") is emptied (or filled again from the snapshot the workspace was made from) and the template's files and init are applied again; otherwise the workspace is emptied and the template's files and init applied again"

var _ backend.Restorer = (*Backend)(nil)

// podBase is what RecordBase noted of a pod: which pod (a pod made again
// since, by an eviction say, is not the one the base is of) and the pod's
// own clock when the base was taken (the runtime's `changes`, which
// compares files' ctimes with it on the same clock).
type podBase struct {
	pod   types.UID
	since int64 // unix nanoseconds, the pod's clock
}

// bases keeps each workspace's base in memory: a platform restart forgets
// them, and a Restore that finds none makes the pod again.
type bases struct {
	mu sync.Mutex
	m  map[string]podBase // workspace id
}

func (s *bases) set(id string, b podBase) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]podBase{}
	}
	s.m[id] = b
}

func (s *bases) get(id string) (podBase, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[id]
	return b, ok
}

func (s *bases) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// RecordBase implements backend.Restorer: it asks the runtime in the pod
// for the pod's clock (`primer-runtime changes`), the time a later Restore
// looks for changes from.
func (b *Backend) RecordBase(ctx context.Context, h backend.Handle) error {
	if err := b.checkHandle(h); err != nil {
		return err
	}
	id := h.WorkspaceID
	unlock := b.locks.Lock(id)
	defer unlock()
	c, pod, err := b.dialPod(ctx, id, "")
	if err != nil {
		return fmt.Errorf("workspace %s: record base: %w", id, err)
	}
	defer c.Close()
	since, _, err := podChanges(ctx, c, 0)
	if err != nil {
		return fmt.Errorf("workspace %s: record base: %w", id, err)
	}
	b.bases.set(id, podBase{pod: pod.UID, since: since})
	return nil
}

// Restore implements backend.Restorer. When anything outside the workspace
// may differ from its base (see restoreReason), the pod is deleted and the
// StatefulSet makes it again from the image, on the same volume, Secret and
// Service: the handle, which names them, stays valid. The volume is then
// emptied through the new pod's runtime and, for a workspace made from an
// archive snapshot, filled from the archive again; a workspace made from a
// VolumeSnapshot gets a new PVC made from it. Endpoint waits meanwhile.
func (b *Backend) Restore(ctx context.Context, h backend.Handle, req backend.ProvisionRequest) (bool, error) {
	if err := b.checkHandle(h); err != nil {
		return false, err
	}
	if err := backend.CheckRestore(h, req); err != nil {
		return false, err
	}
	id := h.WorkspaceID
	if req.Snapshot != nil {
		if err := b.checkRef(*req.Snapshot); err != nil {
			return false, fmt.Errorf("workspace %s: restore: %w", id, err)
		}
	}
	unlock := b.locks.Lock(id)
	defer unlock()
	why, err := b.restoreReason(ctx, id, req)
	if err != nil || why == "" {
		return false, err
	}
	b.bases.forget(id)
	defer b.restoring.Begin(id)()
	start := time.Now()
	if req.Snapshot != nil && req.Snapshot.Attrs["method"] == methodCSI {
		err = b.renewVolume(ctx, req)
	} else {
		err = b.restartPod(ctx, id, req.Token)
	}
	if err != nil {
		return false, fmt.Errorf("workspace %s: restore: %w", id, err)
	}
	if err := b.refill(ctx, id, req); err != nil {
		return false, fmt.Errorf("workspace %s: restore: %w", id, err)
	}
	b.logger.Info("pod made again (reset)", "workspace_id", id, "pod", PodName(id), "reason", why, "took", time.Since(start).Round(time.Millisecond))
	return true, nil
}

// restoreReason says why the pod must be made again, or "" when the
// runtime's reset of the workspace restores it all.
//
//   - A sandbox made from a snapshot is always made again: its workspace's
//     base is the capture's files, which the runtime's reset (it empties
//     the workspace) cannot bring back.
//   - No base recorded (a platform restart, a RecordBase that never ran),
//     or one of another pod: made again, the safe answer.
//   - Otherwise when a path of the pod's root filesystem changed since the
//     base, or when the runtime cannot say (a pod that does not answer).
func (b *Backend) restoreReason(ctx context.Context, id string, req backend.ProvisionRequest) (string, error) {
	if req.Snapshot != nil {
		return "made from snapshot " + req.Snapshot.SnapshotID, nil
	}
	base, ok := b.bases.get(id)
	if !ok {
		return "no base recorded", nil
	}
	c, pod, err := b.dialPod(ctx, id, req.Token)
	if err != nil {
		return "the runtime does not answer: " + err.Error(), nil
	}
	defer c.Close()
	if pod.UID != base.pod {
		return "the base is of another pod", nil
	}
	_, paths, err := podChanges(ctx, c, base.since)
	switch {
	case err != nil:
		return "the runtime cannot list changes: " + err.Error(), nil
	case len(paths) > 0:
		return fmt.Sprintf("paths changed outside the workspace (%s)", sample(paths)), nil
	}
	return "", nil
}

// sample is the first few of paths, for a log line.
func sample(paths []string) string {
	if len(paths) > 3 {
		return strings.Join(paths[:3], ", ") + ", ..."
	}
	return strings.Join(paths, ", ")
}

// podChanges runs `primer-runtime changes` in the pod: the pod's clock now
// and, with since, the paths of its root filesystem changed since then
// (the workspace volume and the runtime's own volume are other
// filesystems, which it does not look in).
func podChanges(ctx context.Context, c *rtclient.Client, since int64) (int64, []string, error) {
	args := []string{RuntimePath, "changes", "-max", "5", "-skip", Workdir}
	if since != 0 {
		args = append(args, "-since", strconv.FormatInt(since, 10))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// As root, as tar runs for a snapshot: every directory is read.
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: args, User: archiveUser}, nil, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("primer-runtime changes: %w", err)
	}
	if res.ExitCode != 0 {
		return 0, nil, fmt.Errorf("primer-runtime changes: exit %d: %s", res.ExitCode, bytes.TrimSpace(res.Stderr))
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	now, ok := strings.CutPrefix(lines[0], "now ")
	n, err := strconv.ParseInt(now, 10, 64)
	if !ok || err != nil {
		return 0, nil, fmt.Errorf("primer-runtime changes: unexpected output %q (a runtime that predates it?)", lines[0])
	}
	return n, lines[1:], nil
}

// dialPod connects to the runtime of the workspace's running pod with
// token (the Secret's when empty).
func (b *Backend) dialPod(ctx context.Context, id, token string) (*rtclient.Client, *corev1.Pod, error) {
	pod, err := b.cs.CoreV1().Pods(b.cfg.Namespace).Get(ctx, PodName(id), metav1.GetOptions{})
	if err != nil {
		return nil, nil, b.apiErr(err, "get pod")
	}
	if st := podState(pod, ""); !st.running || pod.DeletionTimestamp != nil {
		return nil, nil, errs.E(errs.Unavailable, "pod %s %s", pod.Name, st.reason)
	}
	if token == "" {
		if token, err = b.RuntimeToken(ctx, b.handle(id)); err != nil {
			return nil, nil, err
		}
	}
	url, err := b.runtimeURL(ctx, id, pod)
	if err != nil {
		return nil, nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := rtclient.Dial(dctx, url, token)
	if err != nil {
		return nil, nil, errs.E(errs.Unavailable, "connect to the runtime at %s: %w", url, err)
	}
	return c, pod, nil
}

// restartPod deletes the workspace's pod and waits until the one the
// StatefulSet makes in its place runs and its runtime answers. As Pause
// does, it asks the runtime to stop, so the pod is gone as soon as it has
// stopped rather than when the kubelet confirms it.
func (b *Backend) restartPod(ctx context.Context, id, token string) error {
	rt := b.connectRuntime(ctx, id)
	if rt != nil {
		defer rt.c.Close()
	}
	b.stopForward(id)
	pods := b.cs.CoreV1().Pods(b.cfg.Namespace)
	if err := pods.Delete(ctx, PodName(id), metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(podGracePeriod))}); err != nil && !apierrors.IsNotFound(err) {
		return b.apiErr(err, "delete pod")
	}
	if rt != nil {
		rt.shutdown(ctx, b.logger, id)
		if rt.stopped(ctx, (podGracePeriod+2)*time.Second) {
			err := pods.Delete(ctx, PodName(id), metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0)), Preconditions: &metav1.Preconditions{UID: &rt.pod}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return b.apiErr(err, "delete stopped pod")
			}
		}
	}
	if err := b.waitPodReplaced(ctx, id, rt); err != nil {
		return err
	}
	return b.awaitRuntime(ctx, id, token)
}

// waitPodReplaced waits until the pod rt was connected to (or, without rt,
// the pod deleted) is gone: the StatefulSet makes the next one only then.
func (b *Backend) waitPodReplaced(ctx context.Context, id string, rt *runtimeConn) error {
	for {
		pod, err := b.cs.CoreV1().Pods(b.cfg.Namespace).Get(ctx, PodName(id), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return b.apiErr(err, "get pod")
		case pod.DeletionTimestamp == nil && (rt == nil || pod.UID != rt.pod):
			// Made again already.
			return nil
		}
		b.awaitPodGone(ctx, id)
		if ctx.Err() != nil {
			return errs.E(errs.Timeout, "pod %s still there after delete", PodName(id))
		}
	}
}

// awaitRuntime waits for the workspace's pod to run, made for token, and
// for its runtime to answer (a resume's and a restore's last step). The
// pod template carries the hash of the token the workspace was
// provisioned with; a pod made for another token is not the one.
func (b *Backend) awaitRuntime(ctx context.Context, id, token string) error {
	pod, err := b.waitPod(ctx, id, tokenHash(token))
	if err != nil {
		return err
	}
	url, err := b.runtimeURL(ctx, id, pod)
	if err != nil {
		return err
	}
	if err := b.waitReady(ctx, id, url, token); err != nil {
		return b.withLogs(ctx, id, err)
	}
	return nil
}

// renewVolume makes a workspace made from a VolumeSnapshot again: its pod
// is stopped (the StatefulSet scaled to 0), its PVC deleted and made again
// from the VolumeSnapshot, and the pod started on it.
func (b *Backend) renewVolume(ctx context.Context, req backend.ProvisionRequest) error {
	id := req.WorkspaceID
	_, m, err := b.manifests(req, "restore")
	if err != nil {
		return err
	}
	fromVolumeSnapshot(m, req.Snapshot)
	owner, err := b.cs.CoreV1().Secrets(b.cfg.Namespace).Get(ctx, Name(id), metav1.GetOptions{})
	if err != nil {
		return b.apiErr(err, "get Secret")
	}
	m.Own(owner)
	if err := b.pause(ctx, id); err != nil {
		return err
	}
	pvcs := b.cs.CoreV1().PersistentVolumeClaims(b.cfg.Namespace)
	if err := pvcs.Delete(ctx, Name(id), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return b.apiErr(err, "delete PVC")
	}
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		_, err := pvcs.Get(ctx, Name(id), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil {
			return b.apiErr(err, "get PVC")
		}
		select {
		case <-ctx.Done():
			return errs.E(errs.Timeout, "PVC %s still there after delete", Name(id))
		case <-time.After(delay):
		}
	}
	if _, err := pvcs.Create(ctx, m.PVC, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
		return b.apiErr(err, "create PVC from VolumeSnapshot %s", VolumeSnapshotName(req.Snapshot.SnapshotID))
	}
	return b.resume(ctx, id, req.Token)
}

// refill brings the restarted pod's workspace volume to its base: emptied
// through the runtime (the caller applies the template's files and init
// next), or for a workspace made from an archive snapshot, emptied and
// filled from the archive. A volume made again from a VolumeSnapshot holds
// the capture already.
func (b *Backend) refill(ctx context.Context, id string, req backend.ProvisionRequest) error {
	if req.Snapshot != nil && req.Snapshot.Attrs["method"] == methodCSI {
		return nil
	}
	c, _, err := b.dialPod(ctx, id, req.Token)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Reset(ctx); err != nil {
		return fmt.Errorf("empty the workspace volume: %w", err)
	}
	if req.Snapshot != nil {
		return b.extractArchive(ctx, c, id, req.Snapshot)
	}
	return nil
}
