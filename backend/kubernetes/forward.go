package kubernetes

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/primerhq/primer/errs"
)

// forward is a port-forward from a loopback port of the platform's host to
// the runtime port of one pod, through the API server and the kubelet: the
// reachability of a platform outside the cluster network. The runtime
// client's one WebSocket per workspace is one stream of it.
type forward struct {
	podUID types.UID
	url    string
	stop   chan struct{}
	done   chan struct{} // closed when the forwarder has ended
	once   sync.Once
}

func (f *forward) close() { f.once.Do(func() { close(f.stop) }) }

func (f *forward) alive() bool {
	select {
	case <-f.done:
		return false
	default:
		return true
	}
}

// forwardTo returns the URL of a live port-forward to pod, starting one
// when there is none, when the last one ended (the API server or kubelet
// restarted) or when it leads to an older pod of the workspace.
func (b *Backend) forwardTo(ctx context.Context, id string, pod *corev1.Pod) (string, error) {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	if b.closed {
		return "", errs.E(errs.Unavailable, "workspace %s: port-forward: backend closed (its provider changed or was deleted)", id)
	}
	if f := b.forwards[id]; f != nil {
		if f.podUID == pod.UID && f.alive() {
			return f.url, nil
		}
		f.close()
		delete(b.forwards, id)
	}
	req := b.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward")
	rt, upgrader, err := spdy.RoundTripperFor(b.rest)
	if err != nil {
		return "", errs.E(errs.Invalid, "workspace %s: port-forward: %w", id, err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, req.URL())
	f := &forward{podUID: pod.UID, stop: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(RuntimePort)}, f.stop, ready, io.Discard, io.Discard)
	if err != nil {
		return "", errs.E(errs.Invalid, "workspace %s: port-forward: %w", id, err)
	}
	var ferr error
	go func() {
		defer close(f.done)
		ferr = pf.ForwardPorts()
		if ferr != nil {
			b.logger.Debug("port-forward ended", "workspace_id", id, "pod", pod.Name, "err", ferr)
		}
	}()
	select {
	case <-ready:
	case <-f.done:
		return "", errs.E(errs.Unavailable, "workspace %s: port-forward to pod %s: %v", id, pod.Name, ferr)
	case <-ctx.Done():
		f.close()
		return "", errs.E(errs.Unavailable, "workspace %s: port-forward to pod %s: %v", id, pod.Name, ctx.Err())
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) == 0 {
		f.close()
		return "", errs.E(errs.Unavailable, "workspace %s: port-forward to pod %s: no local port: %v", id, pod.Name, err)
	}
	f.url = "ws://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))) + "/"
	b.forwards[id] = f
	return f.url, nil
}

// stopForward ends the workspace's port-forward, if any.
func (b *Backend) stopForward(id string) {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	if f := b.forwards[id]; f != nil {
		f.close()
		delete(b.forwards, id)
	}
}
