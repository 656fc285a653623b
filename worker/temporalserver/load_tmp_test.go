package temporalserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

type LoadIn struct{ Loops int }
type LoadOut struct{ MaxLate time.Duration }

func loadWorkflow(ctx workflow.Context, in LoadIn) (LoadOut, error) {
	key := temporal.NewSearchAttributeKeyKeyword("PrimerPhase")
	var out LoadOut
	_ = workflow.UpsertTypedSearchAttributes(ctx, key.ValueSet("running"))
	for i := 0; i < in.Loops; i++ {
		start := workflow.Now(ctx)
		if err := workflow.Sleep(ctx, 30*time.Second); err != nil {
			return out, err
		}
		late := workflow.Now(ctx).Sub(start) - 30*time.Second
		if late > out.MaxLate {
			out.MaxLate = late
		}
		_ = workflow.UpsertTypedSearchAttributes(ctx, key.ValueSet(fmt.Sprintf("running-%d", i)))
	}
	return out, nil
}

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestLoadTmp(t *testing.T) {
	ctx := context.Background()
	ports, _ := freePorts("127.0.0.1", 2)
	cfg := Config{DataDir: filepath.Join(t.TempDir(), "d"), Port: ports[0], UIPort: ports[1], Logger: testLogger(t),
		SearchAttributes: map[string]enumspb.IndexedValueType{"PrimerPhase": enumspb.INDEXED_VALUE_TYPE_KEYWORD}}
	srv, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Stop() }()
	c := dial(ctx, t, srv, "default")
	w := worker.New(c, "load", worker.Options{MaxConcurrentWorkflowTaskPollers: pollers()})
	w.RegisterWorkflowWithOptions(loadWorkflow, workflow.RegisterOptions{Name: "Load"})
	w.Start()
	defer func() { w.Stop() }()

	const n = 1000
	cpu0, t0 := cpu(), time.Now()
	runs := make([]client.WorkflowRun, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("load-%d", i), TaskQueue: "load"}, "Load", LoadIn{Loops: 4})
			if err != nil {
				t.Error(err)
				return
			}
			runs[i] = r
		}()
	}
	wg.Wait()
	t.Logf("started %d in %s, cpu %s, rss %s", n, time.Since(t0), cpu()-cpu0, rss())
	stopTick := make(chan struct{})
	go func() {
		tk := time.NewTicker(10 * time.Second)
		defer tk.Stop()
		for {
			select {
			case <-stopTick:
				return
			case <-tk.C:
				qs := time.Now()
				resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: "PrimerPhase = 'running-1'"})
				if f, err := os.Create(fmt.Sprintf("/tmp/leak/g-%d.txt", int(time.Since(t0).Seconds()))); err == nil {
					pprof.Lookup("goroutine").WriteTo(f, 1)
					f.Close()
				}
				t.Logf("t+%s cpu %s rss %s count(running-1)=%d (%s) err=%v", time.Since(t0).Round(time.Second), cpu()-cpu0, rss(), resp.GetCount(), time.Since(qs), err)
			}
		}
	}()
	if os.Getenv("LOAD_RESTART") != "" {
		time.Sleep(40 * time.Second)
		w.Stop()
		c.Close()
		close(stopTick)
		stopTick = nil
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		r0 := time.Now()
		srv, err = Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("warm restart with %d open workflows: %s, rss %s", n, time.Since(r0), rss())
		defer srv.Stop()
		c = dial(ctx, t, srv, "default")
		w = worker.New(c, "load", worker.Options{MaxConcurrentWorkflowTaskPollers: pollers()})
		w.RegisterWorkflowWithOptions(loadWorkflow, workflow.RegisterOptions{Name: "Load"})
		w.Start()
		defer w.Stop()
		open, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: "ExecutionStatus = 'Running'"})
		t.Logf("open after restart: %d, %v", open.GetCount(), err)
	}
	var maxLate time.Duration
	for _, r := range runs {
		if r == nil {
			continue
		}
		var out LoadOut
		if err := c.GetWorkflow(ctx, r.GetID(), r.GetRunID()).Get(ctx, &out); err != nil {
			t.Error(err)
			continue
		}
		maxLate = max(maxLate, out.MaxLate)
	}
	if stopTick != nil {
		close(stopTick)
	}
	el := time.Since(t0)
	used := cpu() - cpu0
	t.Logf("done in %s, max timer lateness %s, cpu %s (%.0f%% of one core), rss %s", el, maxLate, used, 100*used.Seconds()/el.Seconds(), rss())
}

func pollers() int {
	if v := os.Getenv("LOAD_POLLERS"); v != "" {
		var n int
		fmt.Sscan(v, &n)
		return n
	}
	return 0
}
