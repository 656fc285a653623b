package activities

import (
	"context"
	"errors"
	"os"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"

	"github.com/primerhq/primer/errs"
)

// LivenessSignalName is the signal a Prober sends (workflows.SignalLiveness).
const LivenessSignalName = "liveness"

// ProberEnv turns the worker's Prober off when set to "off": every probe
// of every workspace then stays in its workflow, as before version
// vLiveness (the workflow's probe asks to watch, and is told it does not).
const ProberEnv = "PRIMER_LIVENESS_PROBER"

// proberFor returns the Prober of the worker running the probe in ctx:
// a.Prober when set (tests), else one started at the first watch with the
// worker's client and stopped with the worker, so a process holds one per
// worker and nothing is wired outside the activities. nil when off or
// when ctx is not an activity's.
func (a *Activities) proberFor(ctx context.Context) *Prober {
	if a.Prober != nil {
		return a.Prober
	}
	if os.Getenv(ProberEnv) == "off" || !activity.IsActivity(ctx) {
		return nil
	}
	a.proberMu.Lock()
	defer a.proberMu.Unlock()
	if a.lazyProber != nil {
		return a.lazyProber
	}
	c := activity.GetClient(ctx)
	stop := activity.GetWorkerStopChannel(ctx)
	if c == nil || stop == nil {
		return nil
	}
	p := NewProber(func(ctx context.Context, in ProbeInput, held *probeTarget) (ProbeOutput, *probeTarget, error) {
		out, held := a.probeWatched(ctx, in, held)
		return out, held, nil
	}, func(ctx context.Context, workflowID string, s LivenessSignal) error {
		err := c.SignalWorkflow(ctx, workflowID, "", LivenessSignalName, s)
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return errs.E(errs.NotFound, "workflow %s: signal liveness: %s", workflowID, nf.Message)
		}
		return err
	}, 0)
	go func() {
		<-stop
		p.Stop()
	}()
	a.lazyProber = p
	a.logger().Info("liveness prober started")
	return p
}
