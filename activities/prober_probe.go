package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/wire"
)

// Probe pings the workspace's runtime. A miss is a result, not an error:
// Reason says which step failed, so the workflow can count misses and name
// the last one when the workspace goes failed. It runs as a local activity.
//
// It reads the workspace's row and its provider every time; a probe that
// hits and is asked to watch hands what it read to the worker's Prober,
// whose probes use it rather than reading it again (probeWatched).
func (a *Activities) Probe(ctx context.Context, in ProbeInput) (ProbeOutput, error) {
	var p *Prober
	var every time.Duration
	if in.Watch != nil {
		if p = a.proberFor(ctx); p != nil {
			every = a.beaconEvery(in.Watch.Interval)
		}
	}
	out, t := a.probe(ctx, in, nil, every)
	if in.Watch != nil {
		if p != nil {
			if out.Hit {
				watched := in
				watched.Watch = nil
				out.Watched = p.Watch(watched, t, *in.Watch, time.Now(), out.Lifetime)
			} else {
				// The workflow counts this miss and probes on its own again.
				p.Unwatch(in.WorkspaceID)
			}
		}
	}
	return out, nil
}

// probeTarget is what a probe reads before it pings: the workspace's row,
// its provider's row and the provider's backend. A watch holds the last
// one read, so a healthy workspace's probes read no row.
type probeTarget struct {
	ws       *wire.Workspace
	provider *wire.Provider
	backend  backend.Backend
	// beaconEvery is the beacon cadence a hit asks the runtime for (zero:
	// none), and beacon the running beacon of the connection the last
	// hit used (nil: none, or a runtime that predates beacons), which
	// the Prober reads instead of pinging (prober_beacon.go).
	beaconEvery time.Duration
	beacon      atomic.Pointer[client.Beacon]
}

// clone is a copy of t (its beacon included), to change without
// touching what a watch holds.
func (t *probeTarget) clone() *probeTarget {
	c := &probeTarget{ws: t.ws, provider: t.provider, backend: t.backend, beaconEvery: t.beaconEvery}
	c.beacon.Store(t.beacon.Load())
	return c
}

// probeTargetOf reads the probeTarget of a workspace. The error is a miss reason.
func (a *Activities) probeTargetOf(ctx context.Context, id string) (*probeTarget, string) {
	ws, err := a.Store.GetWorkspace(ctx, id)
	if err != nil {
		return nil, "workspace row: " + err.Error()
	}
	t := &probeTarget{ws: ws}
	if ws.RuntimeToken == "" {
		// Connect's check, before the provider is read.
		return t, ""
	}
	if t.provider, t.backend, err = a.Connector.Backend(ctx, ws); err != nil {
		return t, Redact(err.Error(), ws.RuntimeToken)
	}
	return t, ""
}

// same says whether t and u reach the same runtime the same way.
func (t *probeTarget) same(u *probeTarget) bool {
	a, b := t.ws, u.ws
	if a.ProviderID != b.ProviderID || a.RuntimeToken != b.RuntimeToken || string(a.Handle) != string(b.Handle) ||
		a.Path != b.Path || a.TemplateID != b.TemplateID {
		return false
	}
	if t.provider == nil || u.provider == nil {
		return t.provider == u.provider
	}
	return t.provider.Provider == u.provider.Provider && bytes.Equal(t.provider.Config, u.provider.Config)
}

// probeWatched is the Prober's probe of a watched workspace: Probe's probe
// on the probeTarget the watch holds, so a healthy workspace's probe
// touches no database. It returns the target the watch is to hold for the
// next probe.
//
// The target held is the one the workflow's last probe read: a watch is
// renewed at every backstop, and after a recovery (which alone gives a
// workspace a new handle and token) by the workflow's own probes. Two cases
// read it again: a member of a warm pool, which a lease can give deadlines
// with no word to its workflow, on every probe, as before; and a miss on
// the target held, checked against the rows as stored and probed again
// with them when the runtime's handle, token or provider changed, so a
// target that went stale never counts as a miss.
func (a *Activities) probeWatched(ctx context.Context, in ProbeInput, held *probeTarget) (ProbeOutput, *probeTarget) {
	in.Watch = nil
	if held != nil && (held.ws.PoolID != "" || held.backend == nil) {
		held = nil
	}
	var every time.Duration
	if held != nil {
		every = held.beaconEvery
	}
	out, t, beaconMiss := a.beaconProbe(ctx, in, held)
	if !beaconMiss {
		out, t = a.probe(ctx, in, held, every)
	}
	if out.Hit || held == nil {
		return out, t
	}
	rctx, cancel := context.WithTimeout(ctx, a.probeTimeout())
	fresh, reason := a.probeTargetOf(rctx, in.WorkspaceID)
	cancel()
	if reason == "" && fresh.ws.Phase == wire.PhasePaused {
		// Paused by its workflow (perhaps on another worker): its compute
		// is stopped on purpose, so the miss is not the workspace lost.
		return ProbeOutput{Reason: "workspace paused", Paused: true}, nil
	}
	if reason != "" || !held.same(fresh) {
		return a.probe(ctx, in, fresh, every)
	}
	if in.Lifetime {
		out.Lifetime = lifetimeOf(fresh.ws)
	}
	// The next probe looks at the same beacon: a frozen runtime's record
	// stays expired, and one that thaws beats it fresh again.
	fresh.beaconEvery = every
	fresh.beacon.Store(t.beacon.Load())
	return out, fresh
}

// probe probes the workspace with t, read first when nil, and returns the
// result and the target it used (nil when the row could not be read). A
// hit with every set starts the connection's beacon at that cadence, if
// it is not running, and records it in the target.
func (a *Activities) probe(ctx context.Context, in ProbeInput, t *probeTarget, every time.Duration) (ProbeOutput, *probeTarget) {
	start := time.Now()
	if a.Metrics != nil && !in.ScheduledAt.IsZero() {
		a.Metrics.ProbeLateness.Observe(max(0, start.Sub(in.ScheduledAt).Seconds()))
	}
	reason, t := a.ping(ctx, in, t, every)
	hit := reason == ""
	if a.Metrics != nil {
		a.Metrics.ProbeDuration.Observe(time.Since(start).Seconds())
		result := "hit"
		if !hit {
			result = "miss"
		}
		a.Metrics.Probes.WithLabelValues(result).Inc()
	}
	out := ProbeOutput{Hit: hit, Reason: reason}
	if in.Lifetime && t != nil {
		out.Lifetime = lifetimeOf(t.ws)
	}
	return out, t
}

// ping returns "" when the runtime answered, else why not, and the target
// it used (nil when the row could not be read): t, or when nil, the one it
// read.
func (a *Activities) ping(ctx context.Context, in ProbeInput, t *probeTarget, every time.Duration) (string, *probeTarget) {
	ctx, cancel := context.WithTimeout(ctx, a.probeTimeout())
	defer cancel()
	if t == nil {
		var reason string
		if t, reason = a.probeTargetOf(ctx, in.WorkspaceID); t == nil {
			return reason, nil
		}
		if reason != "" {
			return reason, t
		}
	}
	ws := t.ws
	h, ok, err := backend.DecodeHandle(ws.ID, ws.Handle)
	if err != nil {
		return err.Error(), t
	}
	if !ok {
		h = in.Handle
	}
	var cl *client.Client
	if t.backend == nil {
		// No runtime token yet: Connect says so.
		cl, err = a.Connector.Connect(ctx, ws, h)
	} else {
		cl, err = a.Connector.ConnectBackend(ctx, t.backend, ws, h)
	}
	if err == nil {
		if err = cl.Ping(ctx); err != nil {
			// A connection that failed a ping is not trusted for the next
			// one: dial afresh.
			a.Connector.Drop(ws.ID)
			err = fmt.Errorf("runtime ping: %w", err)
		} else if every > 0 {
			t.beaconEvery = every
			t.beacon.Store(a.startBeacon(ctx, cl, every))
		}
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (probe timeout %s)", err, a.probeTimeout())
		}
		return Redact(err.Error(), ws.RuntimeToken), t
	}
	return "", t
}
