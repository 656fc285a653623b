package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/wire"
)

// Workflow versions of the liveness change (workflow.GetVersion change id
// versionLiveness), separate from versionRecovery so other changes to the
// workflow version on their own.
const (
	versionLiveness = "liveness"
	// vLiveness hands a running workspace's probes to its worker's Prober
	// (activities/prober.go): a probe that hits asks the Prober to watch,
	// and while it does the workflow sleeps on a backstop of
	// BackstopProbes intervals instead of an interval. The Prober signals
	// SignalLiveness only when the state must change: MissesToFail misses
	// in a row (the workflow fails the workspace by the same rule as its
	// own probes, and probes on its own again), or a lifetime deadline
	// before the workflow's next wake. The backstop probe renews the watch,
	// on whichever worker runs it, so a workspace whose worker died is
	// watched again within a backstop.
	vLiveness workflow.Version = 1
)

// backstop is how long a watched workspace's workflow sleeps.
func (w *workspace) backstop() time.Duration { return BackstopProbes * w.interval }

// watchRequest is what a probe asks the Prober, or nil when the workspace
// is not to be watched: only from version vLiveness, and only a pending or
// running workspace (one the probe may leave running); a failed one counts
// its hits in the workflow, where the rules are.
func (w *workspace) watchRequest(ctx workflow.Context) *activities.WatchRequest {
	if w.liveness < vLiveness || (w.st.Phase != wire.PhaseRunning && w.st.Phase != wire.PhasePending) {
		return nil
	}
	return &activities.WatchRequest{
		WorkflowID:   workflow.GetInfo(ctx).WorkflowExecution.ID,
		Interval:     w.interval,
		Backstop:     w.backstop(),
		MissesToFail: MissesToFail,
	}
}

// onLiveness applies a Prober's signal; it returns false when the signal
// is stale (the workspace is not watched any more: it failed, or its own
// probes took over) and changes nothing.
func (w *workspace) onLiveness(ctx workflow.Context, s activities.LivenessSignal) bool {
	if !w.watched || w.st.Phase != wire.PhaseRunning {
		return false
	}
	w.st.Probes += s.Probes
	w.life.note(s.Lifetime)
	if s.Misses >= MissesToFail {
		// The same rule as the workflow's own probes: MissesToFail misses
		// in a row fail a running workspace, with the last one's reason.
		w.watched = false
		w.st.Misses, w.st.Hits = s.Misses, 0
		w.fail(ctx, s.Reason)
	}
	return true
}
