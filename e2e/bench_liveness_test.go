//go:build bench

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tclient "go.temporal.io/sdk/client"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// baselineCoresPer1000 is what holding 1,000 idle local workspaces at 30 s
// probes cost before issue 14 (the workflow woke for every probe).
const baselineCoresPer1000 = 0.52

// livenessCase is one measurement of TestBenchLiveness.
type livenessCase struct {
	n       int
	prober  bool // false: PRIMER_LIVENESS_PROBER=off, the per-probe loop
	cluster bool // on the Temporal cluster and PostgreSQL, the worker a process of its own
}

// livenessRig is the platform one case measures: how to drive it and read
// the worker's figures, whichever setup runs it.
type livenessRig struct {
	api      *client.Client
	temporal tclient.Client
	// probes and lateness read the worker's primer_probes_total and
	// primer_probe_lateness_seconds quantiles.
	probes   func() int64
	lateness func() map[float64]float64
	// cpu and peakRSS are of the worker's process.
	cpu     func() time.Duration
	peakRSS func() int64
	// others are the CPU times of the processes besides the worker that
	// serve it (none on embedded defaults: all run in the worker's process).
	others []sideCost
	stop   func()
}

// sideCost is a process (or group of processes) whose CPU time a case
// reports beside the worker's.
type sideCost struct {
	name string
	// cpu is its user+system CPU time so far; false when it cannot be read.
	cpu func() (time.Duration, bool)
}

// TestBenchLiveness holds idle local workspaces at 30 s probes on one
// worker (issue 14, "liveness that scales") and reports, over a window of
// one backstop (BackstopProbes intervals, so each workflow's backstop wake
// is in it): CPU cores per 1,000 workspaces, probe lateness p99, history
// events each workflow added, and peak RSS. Sizes come from
// PRIMER_BENCH_LIVENESS (default "1000off,1000,5000,1000@cluster"; a size
// suffixed "off" runs with the Prober off, the per-probe loop, for a
// baseline in the same run; one suffixed "@cluster" runs on the Temporal
// cluster and PostgreSQL, bench_liveness_cluster_test.go, and also reports
// what the Temporal server and PostgreSQL spend in the window).
func TestBenchLiveness(t *testing.T) {
	requireBench(t)
	spec := os.Getenv("PRIMER_BENCH_LIVENESS")
	if spec == "" {
		spec = "1000off,1000,5000,1000@cluster"
	}
	var cases []livenessCase
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		c := livenessCase{prober: true}
		if s, ok := strings.CutSuffix(f, "@cluster"); ok {
			f, c.cluster = s, true
		}
		if s, ok := strings.CutSuffix(f, "off"); ok {
			f, c.prober = s, false
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			t.Fatalf("PRIMER_BENCH_LIVENESS: bad size %q", f)
		}
		c.n = n
		cases = append(cases, c)
	}
	// A size takes minutes: each row is printed as soon as it is measured
	// (a "#" line), and the table once at the end, since the cluster
	// setup's log lines come between the rows.
	var rows []string
	for _, c := range cases {
		var row string
		if why := livenessClusterMissing(); c.cluster && why != "" {
			row = fmt.Sprintf("| %d | cluster: skipped, %s | | | | | | | | | | |", c.n, why)
		} else {
			row = benchLiveness(t, c)
		}
		fmt.Println("# liveness, measured: " + row)
		rows = append(rows, row)
	}
	fmt.Printf("\n# Liveness that scales (issue 14): idle local workspaces, 30 s probes, one worker\n\n")
	fmt.Printf("| workspaces | setup | prober | worker process: cores per 1,000 (target < 0.1; before %.2f) | besides the worker process, cores per 1,000 | probe lateness p50 / p99 (target p99 < 5 s) | probes in window (expected) | history events per workflow in window: mean / max | worker peak RSS | not running | broken to failed (target <= 3 x 30 s + 1 s) | ok |\n", baselineCoresPer1000)
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Println(r)
	}
	fmt.Println()
}

func benchLiveness(t *testing.T, c livenessCase) string {
	interval := workflows.DefaultProbeInterval
	var rig *livenessRig
	setup := "embedded (1 process: worker, API, Temporal server, SQLite)"
	if c.cluster {
		rig = livenessCluster(t, interval, c.prober)
		setup = "cluster (worker and API processes, Temporal cluster, PostgreSQL)"
	} else {
		rig = livenessEmbedded(t, interval, c.prober)
	}
	defer rig.stop()
	ctx := ctxT(t, 90*time.Minute)

	ids := make([]string, c.n)
	var createErr atomic.Value
	inParallel(c.n, 16, func(i int) {
		ws, err := rig.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
		if err != nil {
			createErr.Store(err)
			return
		}
		ids[i] = ws.ID
	})
	if err, _ := createErr.Load().(error); err != nil {
		t.Fatalf("create: %v", err)
	}
	eventually(t, 30*time.Minute, "all workspaces running", func() bool {
		list, err := rig.api.ListWorkspaces(ctx, client.WorkspaceListOptions{Phase: wire.PhaseRunning})
		return err == nil && len(list) == c.n
	})
	// Settle: every workflow's probe after the one that made it running
	// hands it to the Prober (one interval), and creation's backlog drains.
	time.Sleep(2*interval + 10*time.Second) // a fixed settling period before the window, not a wait for a result

	sample := ids[:min(50, len(ids))]
	hist0 := historyLengths(t, ctx, rig.temporal, sample)
	probes0 := rig.probes()
	others0 := make([]time.Duration, len(rig.others))
	othersOK := make([]bool, len(rig.others))
	for i, o := range rig.others {
		others0[i], othersOK[i] = o.cpu()
	}
	cpu0, wall0 := rig.cpu(), time.Now()
	window := workflows.BackstopProbes*interval + 10*time.Second
	time.Sleep(window) // the measurement window itself
	cpu, wall := rig.cpu()-cpu0, time.Since(wall0)
	others := make([]string, len(rig.others))
	for i, o := range rig.others {
		v, ok := o.cpu()
		if !ok || !othersOK[i] {
			others[i] = o.name + " n/a"
			continue
		}
		d := v - others0[i]
		others[i] = fmt.Sprintf("%s %.3f (%.1f s)", o.name, d.Seconds()/wall.Seconds()/(float64(c.n)/1000), d.Seconds())
	}
	besides := "none: all in the worker process"
	if len(others) > 0 {
		besides = strings.Join(others, "; ")
	}
	probes := rig.probes() - probes0
	hist1 := historyLengths(t, ctx, rig.temporal, sample)
	q := rig.lateness()
	peak := rig.peakRSS()

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
	list, err := rig.api.ListWorkspaces(ctx, client.WorkspaceListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	notRunning := 0
	for _, w := range list {
		if w.Phase != wire.PhaseRunning {
			notRunning++
		}
	}
	// Detection at this scale: one workspace's directory goes away (its
	// runtime answers no more), timed to failed.
	victim, err := rig.api.GetWorkspace(ctx, ids[len(ids)-1])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(victim.Path, victim.Path+".gone"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	eventually(t, 5*time.Minute, "the broken workspace failed", func() bool {
		w, err := rig.api.GetWorkspace(ctx, victim.ID)
		return err == nil && w.Phase == wire.PhaseFailed
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
	return fmt.Sprintf("| %d | %s | %s | %.3f (%.1f s CPU in %s) | %s | %.3f s / %.3f s | %d (%.0f) | %.1f / %d | %d MiB | %d | %s | %s |",
		c.n, setup, mode, perK, cpu.Seconds(), wall.Round(time.Second), besides, q[0.5], q[0.99], probes, expected,
		float64(added)/float64(len(sample)), maxAdded, peak>>20, notRunning, detect.Round(time.Millisecond), ok)
}

// livenessEmbedded starts `primer serve` on embedded defaults in this
// process: the worker, the API, the Temporal server and SQLite are one
// process, so its CPU time is all of their cost.
func livenessEmbedded(t *testing.T, interval time.Duration, prober bool) *livenessRig {
	if prober {
		t.Setenv(activities.ProberEnv, "")
	} else {
		t.Setenv(activities.ProberEnv, "off")
	}
	p := startPrimer(t, withProbeInterval(interval))
	return &livenessRig{
		api:      p.api,
		temporal: p.srv.TemporalClient(),
		probes:   func() int64 { return probeCount(p) },
		lateness: func() map[float64]float64 { return lateness(p) },
		cpu:      func() time.Duration { return cpuTime(t) },
		peakRSS:  func() int64 { return peakRSS(t) },
		stop:     p.stop,
	}
}

// historyLengths is the history length of each workspace's current run.
func historyLengths(t *testing.T, ctx context.Context, c tclient.Client, ids []string) []int64 {
	t.Helper()
	out := make([]int64, len(ids))
	for i, id := range ids {
		d, err := c.DescribeWorkflowExecution(ctx, workflows.WorkflowID(id), "")
		if err != nil {
			t.Fatal(err)
		}
		out[i] = d.GetWorkflowExecutionInfo().GetHistoryLength()
	}
	return out
}
