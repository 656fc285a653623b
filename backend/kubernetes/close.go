package kubernetes

import (
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/primerhq/primer/backend"
)

// closeWait bounds how long Close waits for its port-forwards to end.
const closeWait = 10 * time.Second

var _ backend.Closer = (*Backend)(nil)

// Close implements backend.Closer: it stops every port-forward, waits (up
// to closeWait) until their goroutines have ended, refuses new ones, and
// closes the idle connections of the API client. Pods, claims and secrets
// stay: they belong to their workspaces, which a backend built again finds.
func (b *Backend) Close() error {
	b.fmu.Lock()
	b.closed = true
	fs := b.forwards
	b.forwards = map[string]*forward{}
	b.fmu.Unlock()
	for _, f := range fs {
		f.close()
	}
	timeout := time.NewTimer(closeWait)
	defer timeout.Stop()
	for id, f := range fs {
		select {
		case <-f.done:
		case <-timeout.C:
			return fmt.Errorf("kubernetes backend: close: port-forward of workspace %s still running after %s", id, closeWait)
		}
	}
	// Every typed client of the clientset shares one HTTP client.
	if b.cs != nil {
		if rc, ok := b.cs.CoreV1().RESTClient().(*rest.RESTClient); ok && rc != nil && rc.Client != nil {
			rc.Client.CloseIdleConnections()
		}
	}
	return nil
}

// forwardCount counts the live port-forwards (for tests).
func (b *Backend) forwardCount() int {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	return len(b.forwards)
}
