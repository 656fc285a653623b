package e2e

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker"
)

// TestPoolChurn runs 100 lease/return cycles on a pool of 4 on the local
// backend, as an eval loop does: members out on lease or being
// returned count toward the pool's size, so after the initial fill the
// pool creates and deletes nothing. Every lease is warm, the pool keeps
// the same four workspaces, none of them is provisioned again or
// destroyed, and no workspace changes phase.
func TestPoolChurn(t *testing.T) {
	const size, cycles = 4, 100
	// A short interval gives the pool's workflow many passes in which to
	// churn, if it would.
	p := startPrimer(t, func(c *worker.Config) { c.PoolInterval = 100 * time.Millisecond })
	ctx := ctxT(t, 5*time.Minute)
	api := p.api
	if _, err := api.CreateTemplate(ctx, wire.TemplateSpec{ID: "churn", ProviderID: "local", Backend: raw(`{"kind":"local","files":{"task.txt":"task\n"}}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.CreatePool(ctx, wire.PoolSpec{ID: "churn", TemplateID: "churn", Size: size}); err != nil {
		t.Fatal(err)
	}
	// settled: all members idle and running, none leased, returning or
	// starting.
	settled := func() bool {
		pl, err := api.GetPool(ctx, "churn")
		return err == nil && pl.Status == wire.PoolStatus{Idle: size}
	}
	start := time.Now()
	eventually(t, 2*time.Minute, fmt.Sprintf("%d idle running members", size), settled)
	t.Logf("pool of %d filled in %s", size, time.Since(start).Round(time.Millisecond))
	allIDs := func() []string {
		t.Helper()
		ws, err := api.ListWorkspaces(ctx, client.WorkspaceListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, 0, len(ws))
		for _, w := range ws {
			ids = append(ids, w.ID)
		}
		slices.Sort(ids)
		return ids
	}
	members := allIDs()
	if len(members) != size {
		t.Fatalf("workspaces after the fill = %v, want the %d members", members, size)
	}
	phasesBefore := metricLines(t, p, "primer_workspace_phase_changes_total")

	start = time.Now()
	var leaseTimes, cycleTimes []time.Duration
	perMember := map[string]int{}
	leases := 0
	for i := range cycles {
		// Cycle i leases 1 to 4 members (the whole pool every fourth
		// cycle, as an eval run at concurrency 4 does), then returns
		// them and waits until the pool has them all idle again.
		cycleStart := time.Now()
		var out []string
		for range 1 + i%size {
			leaseStart := time.Now()
			l, err := api.LeasePool(ctx, "churn", wire.LeaseRequest{})
			if err != nil {
				t.Fatalf("cycle %d: lease: %v", i, err)
			}
			leaseTimes = append(leaseTimes, time.Since(leaseStart))
			leases++
			if l.Source != client.LeaseWarm || !slices.Contains(members, l.Workspace.ID) {
				t.Fatalf("cycle %d: lease = %s %s, want a warm one of the members %v", i, l.Source, l.Workspace.ID, members)
			}
			perMember[l.Workspace.ID]++
			out = append(out, l.Workspace.ID)
		}
		for _, id := range out {
			if _, err := api.ReturnWorkspace(ctx, id); err != nil {
				t.Fatalf("cycle %d: return %s: %v", i, id, err)
			}
		}
		eventually(t, time.Minute, fmt.Sprintf("cycle %d: the pool settled again", i), settled)
		cycleTimes = append(cycleTimes, time.Since(cycleStart))
	}
	t.Logf("%d lease/return cycles (%d leases) in %s: lease p50 %s, cycle p50 %s p95 %s; leases per member %v",
		cycles, leases, time.Since(start).Round(time.Millisecond), quantile(leaseTimes, .5), quantile(cycleTimes, .5), quantile(cycleTimes, .95), perMember)

	// The pool stays as it is over ten more passes of its workflow: a late
	// create or delete would show in them.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		if got := allIDs(); !slices.Equal(got, members) {
			t.Fatalf("workspaces after %d cycles = %v, want the same members %v", cycles, got, members)
		}
		if !settled() {
			t.Fatalf("the pool left its settled state after the cycles")
		}
	}
	if got := metricLines(t, p, "primer_workspace_phase_changes_total"); !maps.Equal(got, phasesBefore) {
		t.Errorf("phase changes during the cycles: before %v, after %v; want none (no create, no delete)", phasesBefore, got)
	}
	bySource := metricLines(t, p, "primer_pool_leases_total")
	if bySource[`primer_pool_leases_total{source="warm"}`] != float64(leases) || bySource[`primer_pool_leases_total{source="cold"}`] != 0 {
		t.Errorf("lease metrics = %v, want %d warm and no cold", bySource, leases)
	}
	// Each member: provisioned once, never destroyed, and its lease and
	// return events add up to the leases (lease events are recorded
	// after the answer, so poll for them).
	eventually(t, 30*time.Second, "the events of every lease and return", func() bool {
		leased, returned := 0, 0
		for _, id := range members {
			evs, err := api.Events(ctx, id, 0)
			if err != nil {
				return false
			}
			n := map[string]int{}
			for _, ev := range evs {
				n[ev.Type]++
			}
			if n[wire.EventProvisioned] != 1 || n[wire.EventDestroyed] != 0 {
				t.Fatalf("events of member %s: %v; want one provisioned and none destroyed", id, n)
			}
			leased += n[wire.EventLeased]
			returned += n[wire.EventReturned]
		}
		return leased == leases && returned == leases
	})
}

// quantile returns the q quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))].Round(time.Microsecond)
}

// metricLines returns the samples of the metric name on /metrics, by the
// sample's name and labels as printed.
func metricLines(t *testing.T, p *primer, name string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(p.srv.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}
