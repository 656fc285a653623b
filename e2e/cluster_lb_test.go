package e2e

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/primerhq/primer/api/client"
)

// balancer sends each request to the next API replica in turn, the way a
// load balancer in front of stateless replicas does. A request that could
// not connect never reached a replica, so it moves on to the next one; any
// other failure is the caller's to judge, since a request cut off after it
// was sent may or may not have been done (a create is not idempotent).
type balancer struct {
	replicas []*clusterProc
	next     atomic.Uint64
}

func newBalancer(replicas []*clusterProc) *balancer { return &balancer{replicas: replicas} }

// do runs f on the next replica, and on the following ones while f fails to
// connect, until ctx ends. It returns the index of the replica that
// answered (or the last one tried).
func (b *balancer) do(ctx context.Context, f func(*client.Client) error) (int, error) {
	return b.doFrom(ctx, int(b.next.Add(1)-1), f)
}

// doFrom is do starting at replica i (modulo their number).
func (b *balancer) doFrom(ctx context.Context, i int, f func(*client.Client) error) (int, error) {
	for attempt := 0; ; attempt++ {
		r := (i + attempt) % len(b.replicas)
		err := f(b.replicas[r].api)
		if err == nil || !refused(err) {
			return r, err
		}
		if attempt > 0 && attempt%len(b.replicas) == 0 {
			// Every replica refused: wait a little, as a balancer's
			// health check would, until one comes back or ctx ends.
			select {
			case <-ctx.Done():
				return r, err
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// again runs f like do, and sends it again after a cut-off too: for
// requests that are safe to repeat (reads, a command that may run twice).
func (b *balancer) again(ctx context.Context, f func(*client.Client) error) (int, error) {
	for {
		r, err := b.do(ctx, f)
		if !cutOff(err) || ctx.Err() != nil {
			return r, err
		}
	}
}

// refused reports whether err is a connection the replica refused: the
// request was never sent.
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// cutOff reports whether err is a transport failure after the request may
// have been sent (the connection reset or closed under it): the replica
// may have done it.
func cutOff(err error) bool {
	var api *client.Error
	return err != nil && !refused(err) && !errors.As(err, &api) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
