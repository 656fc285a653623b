package server

import (
	"context"
	"encoding/json"
	"time"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/runtime/protocol"
)

// startBeacon answers beacon.start and sends the connection's beacon at
// the cadence asked for until the connection ends or another beacon.start
// replaces it. The beacon goes from a ticker of its own, not from the read
// loop, so a runtime whose process is frozen (a paused container) stops
// sending it even though its socket stays open: that is what the platform
// detects. See PROTOCOL.md, "beacon.start".
func (c *conn) startBeacon(req *protocol.Request) {
	every := protocol.BeaconInterval(req.IntervalMS)
	frame, err := json.Marshal(protocol.Beacon{Type: protocol.TypeBeacon, ID: req.ID})
	if err != nil {
		c.s.log.Error("runtime: encode frame", "error", err)
		return
	}
	ctx, stop := context.WithCancel(c.ctx)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		stop()
		return
	}
	if c.beaconStop != nil {
		c.beaconStop()
	}
	c.beaconStop = stop
	c.wg.Add(1)
	c.mu.Unlock()
	c.reply(req.ID, protocol.BeaconStartResult{IntervalMS: every.Milliseconds()}, nil)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			wctx, cancel := c.writeContext()
			err := c.ws.Write(wctx, websocket.MessageText, frame)
			cancel()
			if err != nil {
				// The peer is gone or stopped reading: as for any frame.
				c.shutdown()
				return
			}
		}
	}()
}
