package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker"
)

// expiredEvent waits for the workspace.expired event of id and checks its
// reason.
func expiredEvent(t *testing.T, api *client.Client, id, reason string) {
	t.Helper()
	evs := waitEvent(t, api, id, wire.EventExpired, 30*time.Second)
	var data map[string]any
	if err := json.Unmarshal(evs[len(evs)-1].Data, &data); err != nil || data["reason"] != reason {
		t.Fatalf("%s event of %s = %s, want reason %s", wire.EventExpired, id, evs[len(evs)-1].Data, reason)
	}
}

// waitGoneWithin waits until workspace id is gone and checks it went no
// sooner than min after since.
func waitGoneWithin(t *testing.T, api *client.Client, id string, since time.Time, minLife, d time.Duration) time.Duration {
	t.Helper()
	ctx := ctxT(t, d)
	if err := api.WaitGone(ctx, id, nil); err != nil {
		t.Fatalf("workspace %s not gone within %s: %v", id, d, err)
	}
	lived := time.Since(since)
	if lived < minLife {
		t.Fatalf("workspace %s gone after %s, before its deadline (%s)", id, lived, minLife)
	}
	return lived
}

// TestLifetimesLocal runs max and idle expiry, extend and lease expiry
// end to end on the local backend with second-long lifetimes.
func TestLifetimesLocal(t *testing.T) {
	p := startPrimer(t)
	runLifetimes(t, p, wire.LocalProviderID, json.RawMessage(`{"kind":"local"}`))
}

// TestLifetimesOnContainers runs the same once on each container engine.
func TestLifetimesOnContainers(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e, func(c *worker.Config) { c.PoolInterval = time.Second })
		runLifetimes(t, r.p, r.provider(), r.doc(nil))
	})
}

// runLifetimes creates templates with lifetimes on provider (base is the
// backend document they extend) and checks each way a workspace or a
// lease runs out.
//
// The lifetimes are multiples of a unit measured first on the same
// provider: the time a workspace takes to be seen running plus one exec
// (at least a second). With fixed lifetimes of a few seconds, a loaded
// machine made workspaces that expired before the test looked at them
// (already "terminating (idle)"); the checks themselves hold for any unit.
func runLifetimes(t *testing.T, p *primer, provider string, base json.RawMessage) {
	api := p.api
	ctx := ctxT(t, 5*time.Minute)
	template := func(id string, lifetime map[string]string) {
		t.Helper()
		var doc map[string]any
		if err := json.Unmarshal(base, &doc); err != nil {
			t.Fatal(err)
		}
		doc["lifetime"] = lifetime
		raw, _ := json.Marshal(doc)
		if _, err := api.CreateTemplate(ctx, wire.TemplateSpec{ID: id, ProviderID: provider, Backend: raw}); err != nil {
			t.Fatalf("create template %s: %v", id, err)
		}
	}
	create := func(tmpl, ttl string) (*wire.Workspace, time.Time) {
		t.Helper()
		start := time.Now()
		ws, err := api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: tmpl, TTL: ttl})
		if err != nil {
			t.Fatalf("create workspace of %s: %v", tmpl, err)
		}
		return ws, start
	}
	exec := func(id string) {
		t.Helper()
		if _, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"true"}}); err != nil {
			t.Fatalf("exec in %s: %v", id, err)
		}
	}
	template("life-long", map[string]string{"max": "10m"})
	unit := lifetimeUnit(t, p, "life-long")
	maxLife, idle, ttl, by := 4*unit, 3*unit, 3*unit, 4*unit
	t.Logf("lifetime unit %s (create to running plus one exec, measured): max %s, idle %s, ttl %s extended by %s", unit, maxLife, idle, ttl, by)
	template("life-max", map[string]string{"max": maxLife.String()})
	template("life-idle", map[string]string{"idle": idle.String()})

	t.Run("max", func(t *testing.T) {
		ws, start := create("life-max", "")
		if ws.ExpiresAt == nil || ws.IdleDeadline != nil {
			t.Fatalf("created with expires_at %v, idle_deadline %v", ws.ExpiresAt, ws.IdleDeadline)
		}
		waitPhase(t, api, ws.ID, wire.PhaseRunning, time.Minute)
		lived := waitGoneWithin(t, api, ws.ID, start, maxLife, time.Minute+maxLife)
		expiredEvent(t, api, ws.ID, wire.ReasonExpired)
		t.Logf("max %s: gone after %s", maxLife, lived.Round(time.Millisecond))
	})

	t.Run("idle", func(t *testing.T) {
		ws, _ := create("life-idle", "")
		waitPhase(t, api, ws.ID, wire.PhaseRunning, time.Minute)
		// Calls keep it alive past its idle timeout...
		busyUntil := time.Now().Add(idle + 2*unit)
		// last is taken before each call, which moves the deadline to its
		// own time plus the idle timeout, so that it is no later than the
		// moment the deadline counts from.
		var last time.Time
		for time.Now().Before(busyUntil) {
			last = time.Now()
			exec(ws.ID)
			if _, err := api.GetWorkspace(ctx, ws.ID); err != nil {
				t.Fatalf("workspace gone while in use: %v", err)
			}
			time.Sleep(unit / 4) // the cadence of a busy client, not a wait for a result
		}
		// ...and it goes once they stop.
		lived := waitGoneWithin(t, api, ws.ID, last, idle-200*time.Millisecond, time.Minute+idle)
		expiredEvent(t, api, ws.ID, wire.ReasonIdle)
		t.Logf("idle %s: gone %s after the last call", idle, lived.Round(time.Millisecond))
	})

	t.Run("extend", func(t *testing.T) {
		ws, start := create("life-long", ttl.String())
		waitPhase(t, api, ws.ID, wire.PhaseRunning, time.Minute)
		out, stderr, code := p.primectl("", "workspace", "extend", ws.ID, "--by", by.String())
		if code != 0 {
			t.Fatalf("primectl workspace extend: %d %s %s", code, out, stderr)
		}
		got, err := api.GetWorkspace(ctx, ws.ID)
		if err != nil || got.ExpiresAt == nil || !got.ExpiresAt.Equal(ws.ExpiresAt.Add(by)) {
			t.Fatalf("after extend: %+v (%v), want expires_at %v", got, err, ws.ExpiresAt.Add(by))
		}
		// Past max is refused, naming the field.
		if _, err := api.ExtendWorkspace(ctx, ws.ID, wire.ExtendRequest{By: "20m"}); !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "by" {
			t.Fatalf("extend past max = %v, want invalid naming by", err)
		}
		lived := waitGoneWithin(t, api, ws.ID, start, ttl+by, time.Minute+ttl+by)
		expiredEvent(t, api, ws.ID, wire.ReasonExpired)
		t.Logf("ttl %s extended by %s: gone after %s", ttl, by, lived.Round(time.Millisecond))
	})

	t.Run("lease", func(t *testing.T) {
		// The template's idle timeout does not touch idle members waiting
		// in the pool; the lease's ttl (shorter) takes the member back.
		template("life-pooled", map[string]string{"idle": idle.String()})
		if _, err := api.CreatePool(ctx, wire.PoolSpec{ID: "life", TemplateID: "life-pooled", Size: 1, LeaseTTL: "1500ms"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx := ctxT(t, 30*time.Second)
			_, _ = api.DeletePool(ctx, "life")
		})
		var member wire.Workspace
		eventually(t, 2*time.Minute, "an idle running member", func() bool {
			ws, err := api.ListWorkspaces(ctx, client.WorkspaceListOptions{PoolID: "life", PoolState: wire.PoolIdle, Phase: wire.PhaseRunning})
			if err == nil && len(ws) == 1 {
				member = ws[0]
				return true
			}
			return false
		})
		// Idle in the pool past the template's idle timeout, it stays.
		eventually(t, time.Minute, "the member idle past the idle timeout", func() bool {
			ws, err := api.GetWorkspace(ctx, member.ID)
			if err != nil {
				t.Fatalf("idle pool member %s: %v", member.ID, err)
			}
			return ws.PoolState == wire.PoolIdle && time.Since(ws.CreatedAt) > idle+2*unit
		})
		leased := time.Now()
		l, err := api.LeasePool(ctx, "life", wire.LeaseRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Workspace.ID != member.ID || l.Workspace.LeaseExpiresAt == nil {
			t.Fatalf("lease = %s %+v", l.Source, l.Workspace)
		}
		evs := waitEvent(t, api, member.ID, wire.EventLeaseExpired, time.Minute)
		took := time.Since(leased)
		if took < 1500*time.Millisecond {
			t.Fatalf("lease taken back after %s, before its ttl", took)
		}
		var data map[string]any
		if err := json.Unmarshal(evs[len(evs)-1].Data, &data); err != nil || data["reason"] != wire.ReasonLeaseExpired {
			t.Fatalf("%s data = %s", wire.EventLeaseExpired, evs[len(evs)-1].Data)
		}
		// Reset and back in the pool: the same workspace, idle, without deadlines.
		eventually(t, time.Minute, "the member idle again", func() bool {
			ws, err := api.GetWorkspace(ctx, member.ID)
			return err == nil && ws.PoolState == wire.PoolIdle && ws.Phase == wire.PhaseRunning && ws.LeaseExpiresAt == nil
		})
		waitEvent(t, api, member.ID, wire.EventReturned, time.Minute)
		t.Logf("lease_ttl 1.5s: taken back after %s", took.Round(time.Millisecond))
	})
}

// lifetimeUnit measures what runLifetimes scales its lifetimes by: the
// time from the create call until a workspace of template tmpl (of a long
// lifetime) is seen running, plus one exec and one get in it, rounded up
// to 100 ms and at least a second. The workspace is deleted after.
func lifetimeUnit(t *testing.T, p *primer, tmpl string) time.Duration {
	t.Helper()
	ctx := ctxT(t, 3*time.Minute)
	start := time.Now()
	ws, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: tmpl})
	if err != nil {
		t.Fatalf("create workspace of %s: %v", tmpl, err)
	}
	waitPhase(t, p.api, ws.ID, wire.PhaseRunning, 2*time.Minute)
	if _, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: ws.ID, Command: []string{"true"}}); err != nil {
		t.Fatalf("exec in %s: %v", ws.ID, err)
	}
	if _, err := p.api.GetWorkspace(ctx, ws.ID); err != nil {
		t.Fatalf("get %s: %v", ws.ID, err)
	}
	unit := max(time.Second, time.Since(start).Truncate(100*time.Millisecond)+100*time.Millisecond)
	if _, err := p.api.DeleteWorkspace(ctx, ws.ID); err != nil {
		t.Fatalf("delete %s: %v", ws.ID, err)
	}
	if err := p.api.WaitGone(ctx, ws.ID, nil); err != nil {
		t.Fatalf("delete %s: %v", ws.ID, err)
	}
	return unit
}
