package client_test

import (
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// TestBeaconRecordExpiry drives a record with a fake clock: it expires
// misses intervals after its last beat, a beat moves the expiry, and a
// late beat from the past never moves it back.
func TestBeaconRecordExpiry(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	cases := []struct {
		name    string
		misses  int
		beats   []time.Time
		at      time.Time
		expired bool
	}{
		{"fresh after start", 3, nil, sec(29.9), false},
		{"expired at k intervals", 3, nil, sec(30), true},
		{"default misses", 0, nil, sec(30), true},
		{"one miss", 1, nil, sec(10), true},
		{"a beat renews", 3, []time.Time{sec(25)}, sec(54), false},
		{"expired after the last beat", 3, []time.Time{sec(10), sec(20)}, sec(50), true},
		{"an older beat is ignored", 3, []time.Time{sec(20), sec(5)}, sec(49), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := client.NewBeaconRecord(10*time.Second, tc.misses, t0)
			for _, b := range tc.beats {
				r.Beat(b)
			}
			if got := r.Expired(tc.at); got != tc.expired {
				t.Fatalf("Expired(%s) = %v, want %v (expiry %s)", tc.at.Sub(t0), got, tc.expired, r.Expiry().Sub(t0))
			}
		})
	}
}

// TestBeacon starts a connection's beacon on a real runtime: beacons
// arrive and beat the record while calls go on, a second start returns the
// same beacon, and the record is lost with the connection.
func TestBeacon(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	b, err := c.StartBeacon(ctx, 60*time.Millisecond, 0)
	if err != nil {
		t.Fatalf("StartBeacon: %v", err)
	}
	if b.Interval() != 60*time.Millisecond {
		t.Fatalf("interval %s, want the 60ms asked for", b.Interval())
	}
	started := b.Last()
	waitFor(t, func() bool { return b.Last().After(started) })
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping beside the beacon: %v", err)
	}
	if again, err := c.StartBeacon(ctx, time.Second, 0); err != nil || again != b {
		t.Fatalf("second StartBeacon = %p, %v; want the running one %p", again, err, b)
	}
	if c.RunningBeacon() != b {
		t.Fatal("RunningBeacon is not the started beacon")
	}
	if !b.Fresh(time.Now()) {
		t.Fatal("a beating record is not fresh")
	}
	_ = c.Close()
	<-c.Done()
	if !b.Lost() || b.Fresh(time.Now()) {
		t.Fatalf("after the connection ended: lost %v, fresh %v", b.Lost(), b.Fresh(time.Now()))
	}
}

// TestBeaconOldRuntime: a runtime from before beacons answers beacon.start
// "unknown op"; StartBeacon says so as Precondition, remembers it, and the
// connection serves on.
func TestBeaconOldRuntime(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	url, refused := runtimeWithout(t, e.URL, protocol.OpBeaconStart)
	ctx := runtimetest.Ctx(t)
	c, err := client.Dial(ctx, url, runtimetest.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 {
		if _, err := c.StartBeacon(ctx, time.Second, 0); !errs.Is(err, errs.Precondition) {
			t.Fatalf("StartBeacon on an old runtime: %v, want precondition", err)
		}
	}
	if n := refused.Load(); n != 1 {
		t.Fatalf("the old runtime was asked %d times, want once", n)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping after the refusal: %v", err)
	}
}
