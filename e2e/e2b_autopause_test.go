package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/wire"
)

// TestE2BSDKAutoPause drives E2B's autoPause through the unmodified npm
// e2b SDK on Docker: a sandbox created with lifecycle.onTimeout 'pause',
// its timeout then set short, is paused at it (listed paused, its workspace
// paused, not deleted), and Sandbox.connect resumes it with the file it
// wrote and a fresh timeout.
func TestE2BSDKAutoPause(t *testing.T) {
	e2bScriptsDir(t)
	e := containertest.Known()[0]
	containertest.Require(t, e)
	p := startPrimer(t, withContainers(t))
	ctx := ctxT(t, 10*time.Minute)
	e2bTemplate(t, p, ctx, e, "e2b-autopause")
	t.Cleanup(func() { e2bDeleteAll(t, p) })
	sdk := newE2BSDK(t, p, memberOf(t, p, wire.DefaultTenantID))

	var r struct {
		SandboxID    string    `json:"sandboxId"`
		OnTimeout    string    `json:"onTimeout"`
		CreatedState string    `json:"createdState"`
		PausedAfter  float64   `json:"pausedAfterMs"`
		PausedState  string    `json:"pausedState"`
		ConnectedAt  time.Time `json:"connectedAt"`
		Read         sdkCaught `json:"read"`
		Run          sdkCaught `json:"run"`
		ResumedState string    `json:"resumedState"`
		ResumedEndAt time.Time `json:"resumedEndAt"`
		ListedAfter  string    `json:"listedAfter"`
	}
	sdk.run(t, &r, "autopause", "e2b-autopause", "5000")
	t.Logf("listed paused %.0f ms after setTimeout(5000)", r.PausedAfter)
	if r.OnTimeout != "pause" || r.CreatedState != "running" {
		t.Errorf("getInfo after create: lifecycle.onTimeout %q, state %q; want pause, running", r.OnTimeout, r.CreatedState)
	}
	if r.PausedState != "paused" {
		t.Errorf("getInfo after the timeout: state %q, want paused", r.PausedState)
	}
	if !r.Read.OK || !strings.Contains(string(r.Read.Value), "kept across the pause") {
		t.Errorf("read of the file after connect = %+v; want what was written before the pause", r.Read)
	}
	if !r.Run.OK || !strings.Contains(string(r.Run.Value), "resumed") {
		t.Errorf("commands.run after connect = %+v", r.Run)
	}
	if r.ResumedState != "running" || r.ListedAfter != "running" {
		t.Errorf("after connect: getInfo state %q, listed %q; want running", r.ResumedState, r.ListedAfter)
	}
	// The connect's timeoutMs (120 s) counts from the connect: the
	// passed timeout that paused it is not kept.
	if !r.ResumedEndAt.After(r.ConnectedAt.Add(60 * time.Second)) {
		t.Errorf("endAt after connect = %s, connected at %s; want a fresh 120 s timeout", r.ResumedEndAt, r.ConnectedAt)
	}

	// The workflow paused it for its expiry, as its events say.
	events, err := p.api.Events(ctx, r.SandboxID, 0)
	if err != nil {
		t.Fatal(err)
	}
	paused := false
	for _, ev := range events {
		var d struct{ To, Reason string }
		if ev.Type == wire.EventPhaseChanged && json.Unmarshal(ev.Data, &d) == nil && d.To == wire.PhasePaused && d.Reason == wire.ReasonExpired {
			paused = true
		}
	}
	if !paused {
		t.Errorf("no phase change to paused for %s among its events", wire.ReasonExpired)
	}
}
