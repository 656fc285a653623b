package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
)

// CancelCheckInterval is how often the steps a delete interrupts
// (Provision, Replace, Reset) heartbeat. A cancellation reaches a running
// activity only in the server's answer to a heartbeat, so this bounds how
// long a delete waits for such a step to stop. The worker must not hold
// heartbeats back for longer: primer serve sets the worker's
// MaxHeartbeatThrottleInterval to it (the SDK otherwise batches them for
// 80% of the heartbeat timeout, 16 s). It costs one heartbeat call a
// second while a step runs, and nothing for the activities that use
// keepAlive.
const CancelCheckInterval = time.Second

// KeepAliveInterruptible is keepAlive for the steps a delete interrupts:
// it heartbeats every CancelCheckInterval from the start, so a delete's
// cancellation cancels ctx within about that long, and the step (its
// backend calls, its init commands through the runtime) stops. Outside an
// activity, or without a heartbeat timeout, it does nothing.
func KeepAliveInterruptible(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).HeartbeatTimeout <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(CancelCheckInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// interrupted is the error a step a delete interrupts returns: err, or,
// once the activity's context is cancelled, the cancellation itself, which
// the SDK reports to the server as the activity cancelled (when the
// workflow asked for it) rather than as a failure logged as an error.
func interrupted(ctx context.Context, err error) error {
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	return err
}
