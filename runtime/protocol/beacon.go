package protocol

import "time"

// The liveness beacon (see PROTOCOL.md, "beacon.start"): the platform asks
// once per connection, and the runtime then sends a beacon frame at the
// cadence asked for until the connection ends, so the platform knows a
// runtime is alive without a round trip per probe. A runtime that predates
// it answers beacon.start invalid (unknown op), and the platform pings it as
// before; a client that never asks never receives a beacon frame.
const (
	// OpBeaconStart starts the connection's beacon at IntervalMS: a result
	// at once, then a TypeBeacon frame under the same id every IntervalMS.
	// A second beacon.start replaces the first (its frames stop).
	OpBeaconStart = "beacon.start"
	// TypeBeacon is one beacon.
	TypeBeacon = "beacon"
)

// Bounds of a beacon's cadence: a runtime clamps IntervalMS to them.
const (
	MinBeaconInterval     = 50 * time.Millisecond
	MaxBeaconInterval     = 10 * time.Minute
	DefaultBeaconInterval = 10 * time.Second
)

// BeaconStartResult answers beacon.start with the cadence the runtime uses.
type BeaconStartResult struct {
	IntervalMS int64 `json:"interval_ms"`
}

// Beacon is one beacon frame.
type Beacon struct {
	Type string `json:"type"` // TypeBeacon
	ID   uint64 `json:"id"`
}

// BeaconInterval is the cadence a runtime uses for a beacon.start asking
// for ms milliseconds: the default for zero, else ms within the bounds.
func BeaconInterval(ms int64) time.Duration {
	if ms <= 0 {
		return DefaultBeaconInterval
	}
	return min(max(time.Duration(ms)*time.Millisecond, MinBeaconInterval), MaxBeaconInterval)
}

// beaconPrefix starts every beacon frame as a runtime encodes it.
const beaconPrefix = `{"type":"beacon","id":`

// ParseBeacon reads a beacon frame as a runtime encodes it (Beacon's JSON,
// fields in order) without a JSON decoder: a connection receives far more
// beacons than anything else while idle. ok is false for any other frame,
// which the caller decodes as usual.
func ParseBeacon(b []byte) (id uint64, ok bool) {
	if len(b) < len(beaconPrefix)+2 || string(b[:len(beaconPrefix)]) != beaconPrefix || b[len(b)-1] != '}' {
		return 0, false
	}
	digits := b[len(beaconPrefix) : len(b)-1]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		id = id*10 + uint64(c-'0')
	}
	return id, true
}
