//go:build bench

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/workflows"
)

// baselineCoresPer1000 is what holding 1,000 idle local workspaces at 30 s
// probes cost before issue 14 (the workflow woke for every probe).
const baselineCoresPer1000 = 0.52

// livenessCase is one measurement of TestBenchLiveness.
type livenessCase struct {
	n      int
	prober bool // false: PRIMER_LIVENESS_PROBER=off, the per-probe loop
}

// TestBenchLiveness holds idle local workspaces at 30 s probes on one
// worker (issue 14, "liveness that scales") and reports, over a window of
// one backstop (BackstopProbes intervals, so each workflow's backstop wake
// is in it): CPU cores per 1,000 workspaces, probe lateness p99, history
// events each workflow added, and peak RSS. Sizes come from
// PRIMER_BENCH_LIVENESS (default "1000off,1000,5000"; a size suffixed "off" runs
// with the Prober off, the per-probe loop, for a baseline in the same run).
func TestBenchLiveness(t *testing.T) {
	requireBench(t)
	spec := os.Getenv("PRIMER_BENCH_LIVENESS")
	if spec == "" {
		spec = "1000off,1000,5000"
	}
	var cases []livenessCase
	for _, f := range strings.Split(spec, ",") {
		c := livenessCase{prober: true}
		if s, ok := strings.CutSuffix(f, "off"); ok {
			f, c.prober = s, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			t.Fatalf("PRIMER_BENCH_LIVENESS: bad size %q", f)
		}
		c.n = n
		cases = append(cases, c)
	}
	// Each row is printed as soon as it is measured: a size takes minutes.
	fmt.Printf("\n# Liveness that scales (issue 14): idle local workspaces, 30 s probes, one worker\n\n")
	fmt.Printf("| workspaces | prober | cores per 1,000 (target < 0.1; before %.2f) | probe lateness p50 / p99 (target p99 < 5 s) | probes in window (expected) | history events per workflow in window: mean / max | peak RSS | not running | broken to failed (target <= 3 x 30 s + 1 s) | ok |\n", baselineCoresPer1000)
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range cases {
		fmt.Println(benchLiveness(t, c))
	}
	fmt.Println()
}

func benchLiveness(t *testing.T, c livenessCase) string {
	interval := workflows.DefaultProbeInterval
	if !c.prober {
		t.Setenv(activities.ProberEnv, "off")
	} else {
		t.Setenv(activities.ProberEnv, "")
	}
	p := startPrimer(t, withProbeInterval(interval))
	defer p.stop()
	ctx := ctxT(t, 90*time.Minute)

	ids := make([]string, c.n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var createErr atomic.Value
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= c.n {
					return
				}
				ws, err := p.api.CreateWorkspace(ctx, client.CreateWorkspaceRequest{TemplateID: models.DefaultTemplateID})
				if err != nil {
					createErr.Store(err)
					return
				}
				ids[i] = ws.ID
			}
		}()
	}
	wg.Wait()
	if err, _ := createErr.Load().(error); err != nil {
		t.Fatalf("create: %v", err)
	}
	eventually(t, 30*time.Minute, "all workspaces running", func() bool {
		list, err := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{Phase: models.PhaseRunning})
		return err == nil && len(list) == c.n
	})
	// Settle: every workflow's probe after the one that made it running
	// hands it to the Prober (one interval), and creation's backlog drains.
	time.Sleep(2*interval + 10*time.Second) // a fixed settling period before the window, not a wait for a result

	sample := ids[:min(50, len(ids))]
	hist0 := historyLengths(t, ctx, p, sample)
	probes0 := probeCount(p)
	cpu0, wall0 := cpuTime(t), time.Now()
	window := workflows.BackstopProbes*interval + 10*time.Second
	time.Sleep(window) // the measurement window itself
	cpu, wall := cpuTime(t)-cpu0, time.Since(wall0)
	probes := probeCount(p) - probes0
	hist1 := historyLengths(t, ctx, p, sample)
	q := lateness(p)
	peak := peakRSS(t)

	var added, maxAdded int64
	for i := range sample {
		d := hist1[i] - hist0[i]
		if d < 0 {
			// Continued as new in the window: the new run's length.
			d = hist1[i]
		}
		added += d
		maxAdded = max(maxAdded, d)
	}
	list, err := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	notRunning := 0
	for _, w := range list {
		if w.Phase != models.PhaseRunning {
			notRunning++
		}
	}
	// Detection at this scale: one workspace's directory goes away (its
	// runtime answers no more), timed to failed.
	victim, err := p.api.GetWorkspace(ctx, ids[len(ids)-1])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(victim.Path, victim.Path+".gone"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	eventually(t, 5*time.Minute, "the broken workspace failed", func() bool {
		w, err := p.api.GetWorkspace(ctx, victim.ID)
		return err == nil && w.Phase == models.PhaseFailed
	})
	detect := time.Since(killed)
	if bound := workflows.MissesToFail*interval + time.Second; detect > bound {
		t.Errorf("%d workspaces: a broken one failed after %s, target within %s", c.n, detect.Round(time.Millisecond), bound)
	}

	perK := cpu.Seconds() / wall.Seconds() / (float64(c.n) / 1000)
	ok := "yes"
	if detect > workflows.MissesToFail*interval+time.Second {
		ok = "NO"
	}
	// Below 1,000 the process's fixed cost (the embedded Temporal's own
	// loops) dominates a per-1,000 figure: only reported.
	if c.prober && c.n >= 1000 && perK >= 0.1 {
		ok = "NO"
		t.Errorf("%d workspaces: %.3f cores per 1,000, target under 0.1", c.n, perK)
	}
	if q[0.99] >= 5 {
		ok = "NO"
		t.Errorf("%d workspaces: probe lateness p99 %.3f s, target under 5 s", c.n, q[0.99])
	}
	if notRunning != 0 {
		ok = "NO"
		t.Errorf("%d workspaces: %d not running after the window", c.n, notRunning)
	}
	expected := float64(c.n) * wall.Seconds() / interval.Seconds()
	if float64(probes) < expected*0.9 {
		ok = "NO"
		t.Errorf("%d workspaces: %d probes in %s, expected about %.0f", c.n, probes, wall.Round(time.Second), expected)
	}
	mode := "on"
	if !c.prober {
		mode = "off (per-probe loop)"
	}
	return fmt.Sprintf("| %d | %s | %.3f (%.1f s CPU in %s) | %.3f s / %.3f s | %d (%.0f) | %.1f / %d | %d MiB | %d | %s | %s |",
		c.n, mode, perK, cpu.Seconds(), wall.Round(time.Second), q[0.5], q[0.99], probes, expected,
		float64(added)/float64(len(sample)), maxAdded, peak>>20, notRunning, detect.Round(time.Millisecond), ok)
}

// historyLengths is the history length of each workspace's current run.
func historyLengths(t *testing.T, ctx context.Context, p *primer, ids []string) []int64 {
	t.Helper()
	out := make([]int64, len(ids))
	for i, id := range ids {
		d, err := p.srv.TemporalClient().DescribeWorkflowExecution(ctx, workflows.WorkflowID(id), "")
		if err != nil {
			t.Fatal(err)
		}
		out[i] = d.GetWorkflowExecutionInfo().GetHistoryLength()
	}
	return out
}
