//go:build bench

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/primerhq/primer/api/client"
	rtclient "github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// The benchmarks run with `make bench` (PRIMER_BENCH=1). They time whole
// operations many times and print medians and tails beside a raw baseline
// measured in the same run, as Markdown tables. They are tests, not
// testing.B benchmarks, because the targets are percentiles of single
// operations, not means.

func requireBench(t *testing.T) {
	if os.Getenv("PRIMER_BENCH") == "" {
		t.Skip("benchmark: run with `make bench` (PRIMER_BENCH=1)")
	}
}

type row struct {
	name, target string
	samples      []time.Duration
	baseName     string
	baseline     []time.Duration
	limit        time.Duration // p50 must be under it; 0: no limit
}

func pct(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return c[int(q*float64(len(c)-1)+0.5)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }

func printTable(t *testing.T, title string, rows []row) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n# %s\n\n", title)
	fmt.Fprintln(&b, "| measure | runs | p50 | p90 | p99 | target | baseline | baseline p50 | ratio p50 | added p50 | ok |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		p50 := pct(r.samples, .5)
		base, ratio, added := "-", "-", "-"
		if len(r.baseline) > 0 {
			bp := pct(r.baseline, .5)
			base = ms(bp)
			ratio = fmt.Sprintf("%.1fx", float64(p50)/float64(bp))
			added = ms(p50 - bp)
		}
		ok := "yes"
		if r.limit > 0 && p50 >= r.limit {
			ok = "NO"
			t.Errorf("%s: p50 %s, target %s", r.name, ms(p50), r.target)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.name, len(r.samples),
			ms(p50), ms(pct(r.samples, .9)), ms(pct(r.samples, .99)), r.target, r.baseName, base, ratio, added, ok)
	}
	fmt.Println(b.String())
}

// apiExecTrue runs `true` in workspace id through the REST API.
func apiExecTrue(ctx context.Context, p *primer, id string) func() error {
	return func() error {
		res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"true"}})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d", res.ExitCode)
		}
		return err
	}
}

// runtimeExecTrue runs `true` through a runtime client.
func runtimeExecTrue(ctx context.Context, rt *rtclient.Client) func() error {
	return func() error {
		res, err := rt.Exec(ctx, protocol.ExecRequest{Args: []string{"true"}}, nil, nil)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d", res.ExitCode)
		}
		return err
	}
}

func timeN(t *testing.T, n int, f func() error) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		out = append(out, time.Since(start))
	}
	return out
}

// TestBenchLocal measures issue 2's per-operation targets on the local backend.
func TestBenchLocal(t *testing.T) {
	requireBench(t)
	p := startPrimer(t, withProbeInterval(30*time.Second))
	ctx := ctxT(t, 10*time.Minute)

	// create -> running (the first probe hit), 40 times; deletes are not timed.
	created := timeN(t, 40, func() error {
		ws, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
		if err != nil {
			return err
		}
		if _, err := p.api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil); err != nil {
			return err
		}
		_, err = p.api.DeleteWorkspace(ctx, ws.ID)
		return err
	})
	// Baseline: a directory made and a process run in it, directly.
	baseDir := t.TempDir()
	var n int
	createBase := timeN(t, 40, func() error {
		n++
		dir := filepath.Join(baseDir, strconv.Itoa(n))
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		cmd := exec.Command("true")
		cmd.Dir = dir
		return cmd.Run()
	})

	ws := createRunning(t, p, wire.DefaultTemplateID)
	rt, err := p.srv.Runtime(ctx, ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	execAPI := timeN(t, 200, apiExecTrue(ctx, p, ws.ID))
	execRT := timeN(t, 500, runtimeExecTrue(ctx, rt))
	execBase := timeN(t, 500, func() error { return exec.Command("true").Run() })

	payload := bytes.Repeat([]byte("0123456789abcdef"), 256) // 4 KiB
	fileRT := timeN(t, 1000, func() error {
		if err := rt.WriteFile(ctx, "bench.bin", payload, 0o644); err != nil {
			return err
		}
		got, err := rt.ReadFile(ctx, "bench.bin")
		if err == nil && !bytes.Equal(got, payload) {
			err = fmt.Errorf("read back %d bytes", len(got))
		}
		return err
	})
	basePath := filepath.Join(ws.Path, "bench-base.bin")
	fileBase := timeN(t, 1000, func() error {
		if err := os.WriteFile(basePath, payload, 0o644); err != nil {
			return err
		}
		_, err := os.ReadFile(basePath)
		return err
	})
	fileAPI := timeN(t, 200, func() error {
		if _, err := p.api.WriteFile(ctx, ws.ID, "bench.bin", bytes.NewReader(payload)); err != nil {
			return err
		}
		_, err := p.api.ReadFile(ctx, ws.ID, "bench.bin")
		return err
	})

	printTable(t, "Local backend (issue 2)", []row{
		{name: "create to running (API, local)", target: "p50 < 300 ms", samples: created, baseName: "mkdir + run true", baseline: createBase, limit: 300 * time.Millisecond},
		{name: "exec `true` via API + runtime", target: "p50 < 5 ms", samples: execAPI, baseName: "os/exec true", baseline: execBase, limit: 5 * time.Millisecond},
		{name: "exec `true` via runtime client", target: "p50 < 1 ms", samples: execRT, baseName: "os/exec true", baseline: execBase, limit: time.Millisecond},
		{name: "4 KiB write+read via runtime client", target: "p50 < 1 ms", samples: fileRT, baseName: "os.WriteFile+ReadFile", baseline: fileBase, limit: time.Millisecond},
		{name: "4 KiB write+read via API", target: "-", samples: fileAPI, baseName: "os.WriteFile+ReadFile", baseline: fileBase},
	})
}

// TestBenchScale holds 1,000 running local workspaces (PRIMER_BENCH_WORKSPACES
// to change) in one primer on embedded defaults with the default 30 s probe
// interval, and reports probe lateness, failures, peak memory and CPU.
func TestBenchScale(t *testing.T) {
	requireBench(t)
	total := 1000
	if v, err := strconv.Atoi(os.Getenv("PRIMER_BENCH_WORKSPACES")); err == nil && v > 0 {
		total = v
	}
	interval := 30 * time.Second
	p := startPrimer(t, withProbeInterval(interval))
	ctx := ctxT(t, 40*time.Minute)

	cpu0 := cpuTime(t)
	start := time.Now()
	ids := make([]string, total)
	var next atomic.Int64
	var wg sync.WaitGroup
	var createErr atomic.Value
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				ws, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
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
	var running int
	eventually(t, 15*time.Minute, "all workspaces running", func() bool {
		list, err := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{Phase: wire.PhaseRunning})
		running = len(list)
		return err == nil && running == total
	})
	allRunning := time.Since(start)

	// Hold them for three probe intervals and watch the probes.
	before := probeCount(p)
	holdStart := time.Now()
	cpuHold0 := cpuTime(t)
	time.Sleep(3*interval + 5*time.Second)
	hold := time.Since(holdStart)
	cpuHold := cpuTime(t) - cpuHold0
	probes := probeCount(p) - before

	list, err := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	notRunning := 0
	for _, w := range list {
		if w.Phase != wire.PhaseRunning {
			notRunning++
		}
	}
	failedWF, err := p.srv.TemporalClient().CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: "ExecutionStatus = 'Failed' OR ExecutionStatus = 'Terminated' OR ExecutionStatus = 'TimedOut'"})
	if err != nil {
		t.Fatal(err)
	}
	q := lateness(p)
	peak := peakRSS(t)
	histMax, histProjected := historySize(t, ctx, p, ids[:min(20, len(ids))])

	fmt.Printf("\n# %d local workspaces, probe interval %s (issue 2)\n\n", total, interval)
	fmt.Println("| measure | value | target |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| create of %d (16 clients) to all running | %s | - |\n", total, allRunning.Round(time.Millisecond))
	fmt.Printf("| probes during %s hold | %d (%.1f/s; expected %.1f/s) | - |\n", hold.Round(time.Second), probes, float64(probes)/hold.Seconds(), float64(total)/interval.Seconds())
	fmt.Printf("| probe lateness p50 / p90 / p99 | %.3f s / %.3f s / %.3f s | p99 < 5 s |\n", q[0.5], q[0.9], q[0.99])
	fmt.Printf("| workspaces not running after hold | %d | 0 |\n", notRunning)
	fmt.Printf("| workflows failed, terminated or timed out | %d | 0 |\n", failedWF.Count)
	fmt.Printf("| history events of a workflow run: largest now / projected at continue-as-new (%d probes) | %d / %d | < 4096 |\n", workflows.ProbesPerRun, histMax, histProjected)
	fmt.Printf("| peak RSS of the primer process (incl. embedded Temporal) | %d MiB | report |\n", peak>>20)
	fmt.Printf("| CPU while holding | %.2f cores avg (%.1f s CPU in %s) | report |\n", cpuHold.Seconds()/hold.Seconds(), cpuHold.Seconds(), hold.Round(time.Second))
	fmt.Printf("| CPU total incl. creation | %.1f s | report |\n\n", (cpuTime(t) - cpu0).Seconds())

	if histProjected >= 4096 {
		t.Errorf("a workflow run would reach %d history events, target under 4096", histProjected)
	}
	if q[0.99] >= 5 {
		t.Errorf("probe lateness p99 %.3f s, target under 5 s", q[0.99])
	}
	if notRunning != 0 || failedWF.Count != 0 {
		t.Errorf("%d workspaces not running, %d workflows failed", notRunning, failedWF.Count)
	}
	if probes < int64(float64(total)*hold.Seconds()/interval.Seconds()*0.9) {
		t.Errorf("only %d probes in %s for %d workspaces", probes, hold, total)
	}
}

// historySize reads the history length of some workspaces' current runs
// from the server and projects the largest to a full run: a run grows by a
// fixed number of events per probe and continues as new after ProbesPerRun
// probes.
func historySize(t *testing.T, ctx context.Context, p *primer, ids []string) (largest, projected int64) {
	t.Helper()
	c := p.srv.TemporalClient()
	var perProbe float64
	for _, id := range ids {
		d, err := c.DescribeWorkflowExecution(ctx, workflows.WorkflowID(id), "")
		if err != nil {
			t.Fatal(err)
		}
		n := d.GetWorkflowExecutionInfo().GetHistoryLength()
		v, err := c.QueryWorkflow(ctx, workflows.WorkflowID(id), "", workflows.QueryState)
		if err != nil {
			t.Fatal(err)
		}
		var st workflows.WorkspaceState
		if err := v.Get(&st); err != nil {
			t.Fatal(err)
		}
		largest = max(largest, n)
		if st.Probes > 1 {
			perProbe = max(perProbe, float64(n)/float64(st.Probes))
		}
	}
	return largest, int64(perProbe*float64(workflows.ProbesPerRun)) + 1
}

func probeCount(p *primer) int64 {
	mfs, _ := p.srv.Metrics().Registry.Gather()
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == "primer_probes_total" {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return int64(n)
}

func lateness(p *primer) map[float64]float64 {
	out := map[float64]float64{}
	mfs, _ := p.srv.Metrics().Registry.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "primer_probe_lateness_seconds" {
			for _, m := range mf.GetMetric() {
				for _, q := range m.GetSummary().GetQuantile() {
					out[q.GetQuantile()] = q.GetValue()
				}
			}
		}
	}
	return out
}

// cpuTime is this process's user+system CPU time (the platform runs in it).
func cpuTime(t *testing.T) time.Duration {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc/self/stat")
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100
}

// peakRSS is this process's high-water resident set size in bytes.
func peakRSS(t *testing.T) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
