package kubernetes

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rtclient "github.com/primerhq/primer/runtime/client"
)

// runtimeConn is a connection to a workspace's runtime that Destroy holds
// while it deletes the pod, to see the runtime stop without waiting for the
// kubelet to report it.
type runtimeConn struct {
	c          *rtclient.Client
	url, token string
	pod        types.UID // the pod the runtime runs in
}

// connectRuntime connects to the runtime of workspace id's running pod,
// as the platform does (the token from the workspace's Secret). It
// returns nil when it cannot: no running pod, no token, the runtime not
// answering within a second, or a port-forward, which the delete closes
// whether or not the runtime stopped.
func (b *Backend) connectRuntime(ctx context.Context, id string) *runtimeConn {
	if b.cfg.Reachability.Kind == ReachPortForward {
		return nil
	}
	pod, err := b.cs.CoreV1().Pods(b.cfg.Namespace).Get(ctx, PodName(id), metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp != nil || !podState(pod, "").running {
		return nil
	}
	s, err := b.cs.CoreV1().Secrets(b.cfg.Namespace).Get(ctx, Name(id), metav1.GetOptions{})
	if err != nil || !b.owns(s.Labels, id) || len(s.Data[tokenKey]) == 0 {
		return nil
	}
	url, err := b.runtimeURL(ctx, id, pod)
	if err != nil {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	token := string(s.Data[tokenKey])
	c, err := rtclient.Dial(dctx, url, token)
	if err != nil {
		return nil
	}
	return &runtimeConn{c: c, url: url, token: token, pod: pod.UID}
}

// shutdown asks the runtime to stop (the shutdown op). A refusal (a
// runtime that predates the op) or no answer leaves it to the kubelet's
// SIGTERM, which stopped waits for all the same.
func (r *runtimeConn) shutdown(ctx context.Context, log *slog.Logger, id string) {
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := r.c.Shutdown(sctx); err != nil {
		log.Debug("runtime did not take the shutdown; waiting for the kubelet to stop it", "workspace_id", id, "err", err)
	}
}

// stopped waits up to limit for the runtime to stop: its connection closed
// (the runtime closes its connections first when it gets SIGTERM) and then
// a new one refused, so nothing answers at its address any more. It
// reports false when that did not happen in time; the caller then waits
// for the kubelet.
func (r *runtimeConn) stopped(ctx context.Context, limit time.Duration) bool {
	end := time.NewTimer(limit)
	defer end.Stop()
	select {
	case <-r.c.Done():
	case <-end.C:
		return false
	case <-ctx.Done():
		return false
	}
	// The runtime closes its listener just after its connections; a dial
	// refused (or not answered: an address whose network is gone) says it
	// has. Another failure (a proxy's answer) proves nothing.
	for {
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		c, err := rtclient.Dial(dctx, r.url, r.token)
		cancel()
		if err == nil {
			c.Close()
		} else if refused(err) {
			return true
		}
		select {
		case <-time.After(20 * time.Millisecond): // the next look at a listener about to close
		case <-end.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// refused reports whether a dial failed for want of a listener: refused,
// unreachable, or no answer in time.
func refused(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, &op)
}
