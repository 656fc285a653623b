package server_test

import (
	"encoding/json"
	"testing"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// TestBeaconStartReplaces: a second beacon.start on one connection stops
// the first one's ticker: after its result, the beacons come under the
// second id only (one of the first's may already be on its way).
func TestBeaconStartReplaces(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ws, _ := rawConn(t, e)
	ctx := runtimetest.Ctx(t)
	send := func(frame string) {
		t.Helper()
		if err := ws.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
			t.Fatal(err)
		}
	}
	type frame struct {
		Type string  `json:"type"`
		ID   float64 `json:"id"`
	}
	next := func() frame {
		t.Helper()
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		return f
	}
	send(`{"id":1,"op":"beacon.start","interval_ms":50}`)
	// The first start's result, then its beacons.
	for seen := 0; seen < 3; {
		switch f := next(); {
		case f.Type == "result" && f.ID == 1:
		case f.Type == "beacon" && f.ID == 1:
			seen++
		default:
			t.Fatalf("frame %+v before the second start", f)
		}
	}
	send(`{"id":2,"op":"beacon.start","interval_ms":60}`)
	for f := next(); f.Type != "result" || f.ID != 2; f = next() {
		if f.Type != "beacon" || f.ID != 1 {
			t.Fatalf("frame %+v before the second start's result", f)
		}
	}
	firstLate := 0
	for seen := 0; seen < 10; {
		switch f := next(); {
		case f.Type == "beacon" && f.ID == 2:
			seen++
		case f.Type == "beacon" && f.ID == 1 && seen == 0 && firstLate == 0:
			firstLate++ // written as the second start stopped its ticker
		default:
			t.Fatalf("frame %+v after the second start's result (%d of its beacons seen): the first beacon runs on", f, seen)
		}
	}
}
