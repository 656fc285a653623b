//go:build bench

package e2e

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

// createRate is one measurement of TestBenchCreateRate.
type createRate struct {
	setup      string
	n          int
	calls      []time.Duration // each POST /v1/workspaces
	acked      time.Duration   // first create sent to last answered
	allRunning time.Duration   // first create sent to all running
}

// TestBenchCreateRate creates 1,000 local workspaces (PRIMER_BENCH_CREATES
// to change) from 16 clients and reports workspaces per second until all
// are running (issue 14), on embedded defaults (one `primer serve`, SQLite,
// the embedded Temporal server) and on the cluster setup: two API replicas
// (the clients alternate between them) and two workers on PostgreSQL and
// the Temporal cluster. Probes run every 30 s, the default.
func TestBenchCreateRate(t *testing.T) {
	requireBench(t)
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("PRIMER_BENCH_CREATES")); err == nil && v > 0 {
		n = v
	}
	const probe = 30 * time.Second
	var rates []createRate
	t.Run("embedded", func(t *testing.T) {
		p := startPrimer(t, withProbeInterval(probe))
		rates = append(rates, measureCreates(t, "embedded defaults (1 process, SQLite, embedded Temporal)", n, []*client.Client{p.api}))
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, clusterConfig{APIs: 2, Workers: 2, Probe: probe})
		rates = append(rates, measureCreates(t, "cluster (2 API + 2 workers, PostgreSQL, Temporal cluster)", n, []*client.Client{c.apis[0].api, c.apis[1].api}))
	})

	var b strings.Builder
	fmt.Fprintf(&b, "\n# Creating %d local workspaces, 16 clients, on %d cores (issue 14)\n\n", n, runtime.NumCPU())
	fmt.Fprintln(&b, "| setup | workspaces | create calls p50 / p99 | creates answered in | answered/s | all running in | running/s |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|")
	for _, r := range rates {
		fmt.Fprintf(&b, "| %s | %d | %s / %s | %s | %.1f | %s | %.1f |\n", r.setup, r.n,
			ms(pct(r.calls, .5)), ms(pct(r.calls, .99)), r.acked.Round(time.Millisecond),
			float64(r.n)/r.acked.Seconds(), r.allRunning.Round(time.Millisecond), float64(r.n)/r.allRunning.Seconds())
	}
	fmt.Println(b.String())
}

// measureCreates creates n workspaces from 16 clients, client i using
// apis[i%len(apis)], and waits until all are running.
func measureCreates(t *testing.T, setup string, n int, apis []*client.Client) createRate {
	t.Helper()
	ctx := ctxT(t, 30*time.Minute)
	ids := make([]string, n)
	calls := make([]time.Duration, n)
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	inParallel(n, 16, func(i int) {
		api := apis[i%len(apis)]
		began := time.Now()
		ws, err := api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
		calls[i] = time.Since(began)
		if err != nil {
			mu.Lock()
			firstErr = err
			mu.Unlock()
			return
		}
		ids[i] = ws.ID
	})
	acked := time.Since(start)
	if firstErr != nil {
		t.Fatalf("create: %v", firstErr)
	}
	var running int
	eventually(t, 20*time.Minute, fmt.Sprintf("all %d workspaces running", n), func() bool {
		list, err := apis[0].ListWorkspaces(ctx, client.WorkspaceListOptions{Phase: wire.PhaseRunning})
		running = len(list)
		return err == nil && running >= n
	})
	all := time.Since(start)
	t.Logf("%s: %d creates answered in %s, all running in %s", setup, n, acked.Round(time.Millisecond), all.Round(time.Millisecond))
	return createRate{setup: setup, n: n, calls: calls, acked: acked, allRunning: all}
}
