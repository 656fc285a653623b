//go:build bench

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/wire"
)

// TestBenchPoolAndRecovery measures, on each engine that answers:
//
//   - a lease from a warm pool, from the API call to the first exec
//     completed in the leased workspace (target p50 < 50 ms, p99 < 200 ms),
//     against a cold create to first exec and the engine's own exec in the
//     same run;
//   - detection and recovery of a killed container: the time from the kill
//     to `failed` (target: within 3 probe intervals + 1 s) and from `failed`
//     to the replacement `running` (target: within 5 s), read from the
//     timestamps of the workspace's phase_changed events.
func TestBenchPoolAndRecovery(t *testing.T) {
	requireBench(t)
	const interval = time.Second
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		p := startPrimer(t, withContainers(t), withProbeInterval(interval))
		ctx := ctxT(t, 15*time.Minute)
		b := &bench{t: t, p: p, eng: containertest.Backend(t, e)}
		b.cli = b.eng.Client()
		t.Cleanup(b.cleanup)
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, _ = p.api.DeletePool(cctx, "bench")
		})
		containerTemplate(t, p, e, "bb", `{"kind":"container","image":"`+containertest.BusyboxImage+`"}`)
		containerTemplate(t, p, e, "det", `{"kind":"container","image":"`+containertest.BusyboxImage+`","recovery":{"after":"0s","max_attempts":3}}`)

		// 1. Warm leases: a pool of 4, each leased workspace returned
		// (untimed) so the pool stays warm.
		const size, leases = 4, 60
		if _, err := p.api.CreatePool(ctx, wire.PoolSpec{ID: "bench", TemplateID: "bb", Size: size}); err != nil {
			t.Fatal(err)
		}
		waitIdle := func(n int) {
			t.Helper()
			eventually(t, 2*time.Minute, fmt.Sprintf("%d idle in the pool", n), func() bool {
				pl, err := p.api.GetPool(ctx, "bench")
				return err == nil && pl.Status.Idle >= n
			})
		}
		waitIdle(size)
		// Each lease is timed from the call to its first exec completed,
		// then returned (untimed). Back to back, the next lease overlaps the
		// last one's reset and the pool's refill, as in an eval loop;
		// settled, each waits until the pool is full again.
		lease := func(n int, settle bool) (total, leaseOnly, firstExec []time.Duration) {
			cold := 0
			for range n {
				if settle {
					waitIdle(size)
				} else {
					waitIdle(1)
				}
				start := time.Now()
				l, err := p.api.LeasePool(ctx, "bench", wire.LeaseRequest{})
				if err != nil {
					t.Fatal(err)
				}
				leased := time.Since(start)
				b.track(l.Workspace.ID)
				if l.Source != client.LeaseWarm {
					cold++
					b.delete(l.Workspace.ID)
					continue
				}
				if err := apiExecTrue(ctx, p, l.Workspace.ID)(); err != nil {
					t.Fatalf("first exec in leased %s: %v", l.Workspace.ID, err)
				}
				d := time.Since(start)
				total, leaseOnly, firstExec = append(total, d), append(leaseOnly, leased), append(firstExec, d-leased)
				if _, err := p.api.ReturnWorkspace(ctx, l.Workspace.ID); err != nil {
					t.Fatal(err)
				}
			}
			if cold > 0 {
				t.Errorf("%d of %d leases were cold although the pool had idle workspaces", cold, n)
			}
			return total, leaseOnly, firstExec
		}
		leased, leaseOnly, firstExec := lease(leases, false)
		settled, _, _ := lease(leases/2, true)
		var coldToExec []time.Duration
		for range 5 {
			d, err := b.createToExec(ctx)
			if err != nil {
				t.Fatal(err)
			}
			coldToExec = append(coldToExec, d)
		}
		ref := createRunning(t, p, "bb")
		b.track(ref.ID)
		execRaw := timeN(t, 30, func() error { return engineExec(ctx, b.cli, container.Name(ref.ID), []string{"true"}) })
		b.delete(ref.ID)

		// 2. Detection and recovery of killed containers.
		var detect, recoverd []time.Duration
		for range 5 {
			ws := createRunning(t, p, "det")
			b.track(ws.ID)
			before, err := b.cli.ContainerInspect(ctx, container.Name(ws.ID))
			if err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			if err := b.cli.ContainerKill(ctx, container.Name(ws.ID), "KILL"); err != nil {
				t.Fatal(err)
			}
			var failedAt, runningAt time.Time
			eventually(t, 2*time.Minute, "failed then running again", func() bool {
				evs, err := p.api.Events(ctx, ws.ID, 0)
				if err != nil {
					return false
				}
				failedAt, runningAt = time.Time{}, time.Time{}
				for _, ev := range evs {
					if ev.Type != wire.EventPhaseChanged || ev.CreatedAt.Before(killed) {
						continue
					}
					d := eventFields(ev)
					switch {
					case d["to"] == wire.PhaseFailed && failedAt.IsZero():
						failedAt = ev.CreatedAt
					case d["to"] == wire.PhaseRunning && !failedAt.IsZero() && runningAt.IsZero():
						runningAt = ev.CreatedAt
					}
				}
				return !runningAt.IsZero()
			})
			after, err := b.cli.ContainerInspect(ctx, container.Name(ws.ID))
			if err != nil || after.ID == before.ID || !after.State.Running {
				t.Errorf("after recovery: container %s running=%v (%v), want a new running one (was %s)", after.ID, after.State != nil && after.State.Running, err, before.ID)
			}
			detect = append(detect, failedAt.Sub(killed))
			recoverd = append(recoverd, runningAt.Sub(failedAt))
			b.delete(ws.ID)
		}

		rows := []row{
			{name: "warm lease to first exec (API), back to back", target: "p50 < 50 ms, p99 < 200 ms", samples: leased, baseName: "cold create to first exec", baseline: coldToExec, limit: 50 * time.Millisecond},
			{name: "warm lease to first exec (API)", target: "(against the engine's exec)", samples: leased, baseName: "docker exec (API) of true", baseline: execRaw},
			{name: "  of which the lease call", target: "(shown)", samples: leaseOnly},
			{name: "  of which the first exec", target: "(shown)", samples: firstExec},
			{name: "warm lease to first exec, pool settled", target: "(shown)", samples: settled, baseName: "cold create to first exec", baseline: coldToExec},
			{name: "kill to failed", target: fmt.Sprintf("<= 3 x %s + 1 s", interval), samples: detect, baseName: "3 probe intervals + 1 s", baseline: []time.Duration{3*interval + time.Second}},
			{name: "failed to replacement running", target: "<= 5 s", samples: recoverd, baseName: "5 s", baseline: []time.Duration{5 * time.Second}},
		}
		printTable(t, fmt.Sprintf("Warm pools and recovery on %s (probe interval %s)", e.Name, interval), rows)
		if p99 := pct(leased, .99); p99 >= 200*time.Millisecond {
			t.Errorf("warm lease to first exec p99 %s, target under 200 ms", ms(p99))
		}
		for i, d := range detect {
			if d > 3*interval+time.Second {
				t.Errorf("kill %d: failed after %s, target within %s", i, d, 3*interval+time.Second)
			}
		}
		for i, d := range recoverd {
			if d > 5*time.Second {
				t.Errorf("kill %d: replacement running %s after failed, target within 5 s", i, d)
			}
		}
		if _, err := p.api.DeletePool(ctx, "bench"); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "pool members gone", func() bool {
			list, err := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{})
			return err == nil && len(list) == 0
		})
		b.checkGone()
	})
}

// eventFields decodes an event's data.
func eventFields(ev wire.Event) map[string]any {
	var d map[string]any
	_ = json.Unmarshal(ev.Data, &d)
	return d
}
