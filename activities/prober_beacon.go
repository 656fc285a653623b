package activities

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/primerhq/primer/runtime/client"
)

// The liveness beacon (issue 26): the runtime of a watched workspace sends
// a beacon on the connection the platform holds (runtime beacon.start), the
// runtime client keeps the time of the last one as a self-expiring record
// in memory, and the Prober reads that record instead of pinging. A watch
// whose record is fresh costs no goroutine, no round trip and no row; an
// expired record is a miss with reason "beacon expired", counted, signalled
// and recovered from exactly as a ping's miss. Watches without a beacon (no
// held connection, a runtime that predates beacons, a pool member whose
// deadlines are read at every probe) ping as before, and a beacon-backed
// watch is still pinged every BeaconBackstopPing. See docs/DECISIONS.md,
// "Liveness beacon".

// BeaconEnv turns the beacon off when set to "off": the Prober then pings
// every watched runtime at its interval, as before.
const BeaconEnv = "PRIMER_LIVENESS_BEACON"

// BeaconBackstopPing is how often a beacon-backed watch is pinged anyway,
// so a runtime whose beacon ticks while its request loop is stuck is
// still found.
const BeaconBackstopPing = 60 * time.Second

// BeaconReason starts the reason of every miss a beacon finds.
const BeaconReason = "beacon expired"

// beaconsPerInterval is how many beacons a runtime sends per probe
// interval; the record expires after as many missing, so an expired record
// means no beacon for one interval, and the miss streak of a frozen
// runtime starts within an interval of its freeze. Two (not more): each
// beacon costs both sides a frame, and one late beacon is still tolerated.
const beaconsPerInterval = 2

// beaconEvery is the beacon cadence for a watch probed every interval;
// zero when beacons are off.
func (a *Activities) beaconEvery(interval time.Duration) time.Duration {
	if a.BeaconOff || os.Getenv(BeaconEnv) == "off" || interval <= 0 {
		return 0
	}
	return interval / beaconsPerInterval
}

// startBeacon starts cl's beacon at every, or returns the running one; nil
// when the runtime predates beacons or the start failed (the watch pings).
func (a *Activities) startBeacon(ctx context.Context, cl *client.Client, every time.Duration) *client.Beacon {
	b, err := cl.StartBeacon(ctx, every, beaconsPerInterval)
	if err != nil {
		return nil
	}
	return b
}

// beaconOf is the beacon a watch holds, nil when it is not beacon-backed:
// a pool member's probes read its row every time and keep pinging.
func beaconOf(held *probeTarget) *client.Beacon {
	if held == nil || held.ws.PoolID != "" || held.backend == nil {
		return nil
	}
	return held.beacon.Load()
}

// beaconProbe is a watched probe's look at its beacon. It reports
// handled false when the probe must ping as before: no beacon, or a fresh
// one (the Prober then asks only for the backstop ping). A record that
// expired on an open connection (a frozen runtime: the socket stands but
// nothing is sent) is a miss at once, without a ping that would only wait
// out its timeout. A record lost with its connection is tried once more
// through the pool (a ping dials again and restarts the beacon): a runtime
// that comes back hits, one that does not is a miss.
func (a *Activities) beaconProbe(ctx context.Context, in ProbeInput, held *probeTarget) (ProbeOutput, *probeTarget, bool) {
	b := beaconOf(held)
	now := time.Now()
	if b == nil || b.Fresh(now) {
		return ProbeOutput{}, held, false
	}
	if !b.Lost() {
		a.observeBeaconMiss()
		return ProbeOutput{Reason: fmt.Sprintf("%s: no beacon for %s (every %s)", BeaconReason,
			now.Sub(b.Last()).Round(time.Millisecond), b.Interval())}, held, true
	}
	out, t := a.probe(ctx, in, held, held.beaconEvery)
	if !out.Hit {
		out.Reason = BeaconReason + ": connection lost; " + out.Reason
	}
	return out, t, true
}

// observeBeaconMiss counts a miss found by a beacon as the probe metric
// counts a ping's.
func (a *Activities) observeBeaconMiss() {
	if a.Metrics != nil {
		a.Metrics.Probes.WithLabelValues("miss").Inc()
	}
}
