package client

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// DefaultBeaconMisses is how many beacon intervals a BeaconRecord waits
// for the next beacon before it expires.
const DefaultBeaconMisses = 3

// BeaconRecord is the self-expiring record of a connection's last beacon:
// it expires Misses intervals after the last beacon. It lives in memory
// only (the platform writes nothing per beacon) and is safe for concurrent
// use: the connection's reader records beacons while a prober reads it.
type BeaconRecord struct {
	every  time.Duration
	misses int
	last   atomic.Int64 // unix nanoseconds of the last beacon (or of the start)
}

// NewBeaconRecord returns a record of a beacon every interval that expires
// misses intervals after its last beat (DefaultBeaconMisses when misses is
// not positive), beaten once at start.
func NewBeaconRecord(interval time.Duration, misses int, start time.Time) *BeaconRecord {
	if misses <= 0 {
		misses = DefaultBeaconMisses
	}
	r := &BeaconRecord{every: interval, misses: misses}
	r.Beat(start)
	return r
}

// Beat records a beacon received at t. An earlier t than the last beat's
// is ignored, so the record never goes back in time.
func (r *BeaconRecord) Beat(t time.Time) {
	n := t.UnixNano()
	for {
		old := r.last.Load()
		if n <= old || r.last.CompareAndSwap(old, n) {
			return
		}
	}
}

// Last is when the last beacon was received.
func (r *BeaconRecord) Last() time.Time { return time.Unix(0, r.last.Load()) }

// Interval is the beacon's cadence.
func (r *BeaconRecord) Interval() time.Duration { return r.every }

// Expiry is when the record expires unless another beacon comes: the last
// beacon plus Misses intervals.
func (r *BeaconRecord) Expiry() time.Time {
	return r.Last().Add(time.Duration(r.misses) * r.every)
}

// Expired reports whether the record has expired at now.
func (r *BeaconRecord) Expired(now time.Time) bool { return !now.Before(r.Expiry()) }

// Beacon is a connection's running beacon: its record, beaten by the
// connection's reader at every beacon frame, and dead with the connection.
type Beacon struct {
	*BeaconRecord
	c       *Client
	started chan struct{}
	err     error
}

// Lost reports whether the connection that carries the beacon has ended.
func (b *Beacon) Lost() bool {
	select {
	case <-b.c.Done():
		return true
	default:
		return false
	}
}

// Fresh reports whether the runtime is known alive at now: its connection
// stands and the record has not expired.
func (b *Beacon) Fresh(now time.Time) bool { return !b.Lost() && !b.Expired(now) }

// frame handles the beacon's frames on the reader goroutine.
func (b *Beacon) frame(f *protocol.Frame) bool {
	switch f.Type {
	case protocol.TypeResult:
		if f.Error != nil {
			b.err = f.Error.Err()
			close(b.started)
			return true
		}
		var res protocol.BeaconStartResult
		if err := json.Unmarshal(f.Result, &res); err == nil && res.IntervalMS > 0 {
			// The runtime's cadence (it clamps the one asked for).
			b.every = time.Duration(res.IntervalMS) * time.Millisecond
		}
		b.Beat(time.Now())
		close(b.started)
	case protocol.TypeBeacon:
		b.Beat(time.Now())
	}
	return false
}

func (b *Beacon) fail(error) {}

// StartBeacon asks the runtime to send a beacon every interval on this
// connection and returns its record, which expires misses intervals after
// the last beacon. A connection has one beacon: a later call returns the
// running one. A runtime that predates beacons is an errs.Precondition
// error, remembered, so the caller pings it instead.
func (c *Client) StartBeacon(ctx context.Context, interval time.Duration, misses int) (*Beacon, error) {
	if c.noBeacon.Load() {
		return nil, errs.E(errs.Precondition, "runtime %s: beacon.start: the runtime predates beacons", c.addr)
	}
	select {
	case c.beaconMu <- struct{}{}:
	case <-ctx.Done():
		return nil, ctxError(ctx, "runtime "+c.addr+": beacon.start")
	}
	defer func() { <-c.beaconMu }()
	if b := c.beacon.Load(); b != nil {
		return b, nil
	}
	b := &Beacon{BeaconRecord: NewBeaconRecord(interval, misses, time.Now()), c: c, started: make(chan struct{})}
	id, err := c.register(b)
	if err != nil {
		return nil, err
	}
	if err := c.send(ctx, &protocol.Request{ID: id, Op: protocol.OpBeaconStart, IntervalMS: interval.Milliseconds()}); err != nil {
		c.unregister(id)
		return nil, err
	}
	select {
	case <-b.started:
	case <-c.done:
		return nil, c.deadErr()
	case <-ctx.Done():
		// The runtime may start it anyway; its frames then go nowhere.
		c.unregister(id)
		return nil, ctxError(ctx, "runtime "+c.addr+": beacon.start")
	}
	if b.err != nil {
		if unknownOp(b.err) {
			c.noBeacon.Store(true)
			return nil, errs.E(errs.Precondition, "runtime %s: beacon.start: the runtime predates beacons", c.addr)
		}
		return nil, b.err
	}
	c.beacon.Store(b)
	return b, nil
}

// RunningBeacon returns the connection's beacon, nil when none was started.
func (c *Client) RunningBeacon() *Beacon { return c.beacon.Load() }
