//go:build bench

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// TestBenchEvalPool runs 500 cases of `python3 -c 'print(1)'` at
// concurrency 8 on a warm pool of 8 Docker workspaces, each case on a reset
// workspace, against the baseline of the same 500 commands run with 8
// parallel `docker exec` into 8 pre-started containers (with no isolation
// between commands at all). Rounds alternate so both see the same noise.
// A second suite's cases each write a file in /tmp first, so every reset
// makes the container again (the restore path, backend.Restorer); its
// wall is shown beside the same baseline.
func TestBenchEvalPool(t *testing.T) {
	requireBench(t)
	e := containertest.Known()[0] // Docker: the baseline is docker exec
	containertest.Require(t, e)
	p := startPrimer(t, withContainers(t), withProbeInterval(workflows.DefaultProbeInterval))
	ctx := ctxT(t, 30*time.Minute)
	eng := containertest.Backend(t, e)
	cli := eng.Client()
	containerTemplate(t, p, e, "py", `{"kind":"container","image":"`+containertest.PythonImage+`"}`)
	const cases, conc, rounds = 500, 8, 3
	if _, err := p.api.CreatePool(ctx, wire.PoolSpec{ID: "py-warm", TemplateID: "py", Size: conc}); err != nil {
		t.Fatal(err)
	}
	// The pool's members are gone from the engine before the platform
	// stops (cleanups run last first).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		ws, _ := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{TemplateID: "py"})
		_, _ = p.api.DeletePool(ctx, "py-warm")
		eventually(t, 2*time.Minute, "the pool's workspaces deleted", func() bool {
			left, err := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{TemplateID: "py"})
			return err == nil && len(left) == 0
		})
		for _, w := range ws {
			if objs := containertest.Objects(t, eng, w.ID); len(objs) > 0 {
				t.Errorf("engine objects left of workspace %s: %v", w.ID, objs)
			}
		}
	})
	eventually(t, 3*time.Minute, "8 idle members", func() bool {
		pl, err := p.api.GetPool(ctx, "py-warm")
		return err == nil && pl.Status.Idle == conc
	})
	spec := eval.SuiteSpec{ID: "print1", PoolID: "py-warm", Concurrency: conc}
	argv := []string{"python3", "-c", "print(1)"}
	for i := range cases {
		spec.Cases = append(spec.Cases, eval.Case{ID: fmt.Sprintf("c%03d", i), Command: eval.Command{Args: argv},
			Expect: eval.Expect{StdoutContains: []string{"1"}}})
	}
	if _, err := p.api.CreateSuite(ctx, spec); err != nil {
		t.Fatal(err)
	}
	// Each of its cases costs a container's remaking: a fifth of the
	// cases, once, keeps the bench's time bounded.
	const tmpCases = cases / 5
	tmpSpec := eval.SuiteSpec{ID: "print1-tmp", PoolID: "py-warm", Concurrency: conc}
	tmpArgv := []string{"sh", "-c", "echo 1 > /tmp/mark && python3 -c 'print(1)'"}
	for i := range tmpCases {
		tmpSpec.Cases = append(tmpSpec.Cases, eval.Case{ID: fmt.Sprintf("c%03d", i), Command: eval.Command{Args: tmpArgv},
			Expect: eval.Expect{StdoutContains: []string{"1"}}})
	}
	if _, err := p.api.CreateSuite(ctx, tmpSpec); err != nil {
		t.Fatal(err)
	}

	// The baseline's 8 containers, started before the clock runs.
	names := make([]string, conc)
	for i := range names {
		names[i] = fmt.Sprintf("%seval-%d-%d", rawPrefix, time.Now().UnixNano(), i)
		if err := rawCreateImage(ctx, cli, names[i], containertest.PythonImage); err != nil {
			t.Fatal(err)
		}
		defer rawRemove(ctx, cli, names[i])
	}
	raw := func() time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for _, name := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= cases {
					if err := engineExec(ctx, cli, name, argv); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}

	// runSuite runs a suite once, checks every case passed and returns
	// its wall time and each case's overhead and command time; the run's
	// workspaces are back in the pool when it returns.
	runSuite := func(suite string, cases int) (wall time.Duration, overhead, command []time.Duration) {
		start := time.Now()
		run, err := p.api.CreateRun(ctx, suite, wire.RunRequest{})
		if err != nil {
			t.Fatal(err)
		}
		done, err := p.api.FollowRun(ctx, run.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		wall = time.Since(start)
		if done.Progress.Pass != cases {
			t.Fatalf("run %s of %s: %+v; want %d passes", run.ID, suite, done.Progress, cases)
		}
		results, err := p.api.RunResults(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			overhead = append(overhead, time.Duration(r.DurationMS-r.CommandMS)*time.Millisecond)
			command = append(command, time.Duration(r.CommandMS)*time.Millisecond)
		}
		eventually(t, 2*time.Minute, "the pool idle again", func() bool {
			pl, err := p.api.GetPool(ctx, "py-warm")
			return err == nil && pl.Status.Idle == conc
		})
		return wall, overhead, command
	}
	var walls, rawWalls, overhead, command, tmpWalls, tmpOverhead []time.Duration
	for round := range rounds {
		w, o, c := runSuite("print1", cases)
		walls, overhead, command = append(walls, w), append(overhead, o...), append(command, c...)
		if round == 0 {
			w, o, _ = runSuite("print1-tmp", tmpCases)
			tmpWalls, tmpOverhead = append(tmpWalls, w), append(tmpOverhead, o...)
		}
		rawWalls = append(rawWalls, raw())
	}
	pl, _ := p.api.GetPool(ctx, "py-warm")
	rows := []row{
		{name: fmt.Sprintf("%d cases at concurrency %d, wall", cases, conc), target: "<= baseline", samples: walls,
			baseName: fmt.Sprintf("%d x docker exec, %d parallel", cases, conc), baseline: rawWalls},
		{name: "per-case overhead (case time - command time)", target: "p50 < 20 ms", samples: overhead, limit: 20 * time.Millisecond},
		{name: "command time in the case", target: "(shown)", samples: command},
		{name: fmt.Sprintf("%d cases writing /tmp (each reset remakes the container), wall, one run", tmpCases), target: "(shown)", samples: tmpWalls},
		{name: "per-case overhead, cases writing /tmp", target: "(shown)", samples: tmpOverhead},
	}
	printTable(t, fmt.Sprintf("Eval run on a warm pool of %d Docker workspaces (%d rounds)", conc, rounds), rows)
	fmt.Printf("| cases/s (median round) | ours %.1f | writing /tmp %.1f | baseline %.1f |\n\n",
		float64(cases)/pct(walls, .5).Seconds(), float64(tmpCases)/pct(tmpWalls, .5).Seconds(), float64(cases)/pct(rawWalls, .5).Seconds())
	ratioAtMost(t, rows[0], 1)
	if pl != nil && pl.Status.Idle != conc {
		t.Errorf("pool after the runs = %+v; want %d idle", pl.Status, conc)
	}
}

// TestBenchEvalScale runs 10,000 cases of `true` on the local backend at
// concurrency 32: the run completes, every workflow's history (each run of
// the run workflow's continue-as-new chain, and the workspaces') stays
// under 10,000 events, and the process's peak memory is reported.
func TestBenchEvalScale(t *testing.T) {
	requireBench(t)
	p := startPrimer(t, withProbeInterval(workflows.DefaultProbeInterval))
	ctx := ctxT(t, 40*time.Minute)
	const cases, conc = 10000, 32
	spec := eval.SuiteSpec{ID: "scale", TemplateID: wire.DefaultTemplateID, Concurrency: conc}
	for i := range cases {
		spec.Cases = append(spec.Cases, eval.Case{ID: fmt.Sprintf("c%05d", i), Command: eval.Command{Args: []string{"true"}}})
	}
	if _, err := p.api.CreateSuite(ctx, spec); err != nil {
		t.Fatal(err)
	}
	rssBefore := peakRSS(t)
	start := time.Now()
	run, err := p.api.CreateRun(ctx, "scale", wire.RunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	done, err := p.api.FollowRun(ctx, run.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	if done.Status != wire.RunSucceeded || done.Progress.Pass != cases {
		t.Fatalf("run = %s %+v; want %d passes", done.Status, done.Progress, cases)
	}

	// Every execution of the run's workflow id (its continue-as-new chain)
	// and of the workspaces' workflows.
	tc := p.srv.TemporalClient()
	var largest, chain int64
	var largestWS int64
	var token []byte
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range resp.GetExecutions() {
			n := ex.GetHistoryLength()
			switch id := ex.GetExecution().GetWorkflowId(); {
			case id == run.ID:
				chain++
				largest = max(largest, n)
			case strings.HasPrefix(id, "workspace-"):
				largestWS = max(largestWS, n)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	if chain == 0 || largest >= 10000 || largestWS >= 10000 {
		t.Errorf("histories: %d runs of the run workflow, largest %d events; largest workspace history %d; want all under 10,000", chain, largest, largestWS)
	}
	fmt.Printf("\n# Eval run of %d cases of `true` on local at concurrency %d\n\n", cases, conc)
	fmt.Println("| measure | value | target |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| wall time | %s | completes |\n", wall.Round(time.Millisecond))
	fmt.Printf("| cases/s | %.1f | (shown) |\n", float64(cases)/wall.Seconds())
	fmt.Printf("| run workflow executions (continue-as-new chain) | %d | (shown) |\n", chain)
	fmt.Printf("| largest run workflow history | %d events | < 10,000 |\n", largest)
	fmt.Printf("| largest workspace workflow history | %d events | < 10,000 |\n", largestWS)
	fmt.Printf("| peak RSS of the process (platform + test) | %.0f MiB (before the run %.0f MiB) | (reported) |\n\n",
		float64(peakRSS(t))/(1<<20), float64(rssBefore)/(1<<20))
}
