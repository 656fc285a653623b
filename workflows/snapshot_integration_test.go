package workflows

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/wire"
)

// TestSnapshotPauseWithRealActivities runs the workflow (with time
// skipping) over the real activities, a SQLite store and the memory
// backend with snapshots: a workspace is captured, paused (its runtime
// stops, it is not probed), captured again while paused, resumed and
// deleted; then a second workspace is made from the first capture, with
// its files and without the template's being applied again.
func TestSnapshotPauseWithRealActivities(t *testing.T) {
	t.Setenv(activities.ProberEnv, "off")
	ctx := context.Background()
	dir := t.TempDir()
	store, err := models.Open(ctx, models.Config{SQLitePath: filepath.Join(dir, "primer.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	host := local.NewHost(nil)
	defer host.Close()
	mem := memory.New(host, filepath.Join(dir, "sandboxes"))
	snapMem := mem.WithSnapshots()
	reg := backend.NewRegistry(map[string]backend.Factory{memory.Type: snapMem.Factory()})
	pool := client.NewPool()
	defer pool.Close()
	acts := &activities.Activities{
		Store: store, Backends: reg, Metrics: metrics.New(),
		Connector:    &connector.Connector{Store: store, Backends: reg, Pool: pool},
		ProbeTimeout: time.Second,
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(store.CreateProvider(ctx, &wire.Provider{ID: "mem", Provider: memory.Type, Config: json.RawMessage(`{"kind":"memory"}`)}))
	must(store.CreateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "mem",
		Backend: json.RawMessage(`{"kind":"memory","files":{"README":"hi"},"init":["echo once >> init.log"]}`)}))
	newSnap := func(id, ws string) {
		t.Helper()
		must(store.CreateSnapshot(ctx, &wire.Snapshot{ID: id, WorkspaceID: ws, TemplateID: "t", ProviderID: "mem",
			Backend: memory.Type, Mode: wire.SnapshotModeFilesystem}))
	}
	run := func(id string, script func(env *testsuite.TestWorkflowEnvironment)) []string {
		t.Helper()
		var s testsuite.WorkflowTestSuite
		s.SetLogger(newTestLogger(t))
		env := s.NewTestWorkflowEnvironment()
		env.SetTestTimeout(time.Minute)
		Register(env, acts, nil, nil)
		script(env)
		env.ExecuteWorkflow(WorkspaceWorkflowName, WorkspaceInput{
			WorkspaceID: id, TemplateID: "t", ProviderID: "mem", Backend: memory.Type, ProbeInterval: testInterval,
		})
		if !env.IsWorkflowCompleted() {
			t.Fatal("workflow did not complete")
		}
		must(env.GetWorkflowError())
		evs, err := store.ListEvents(ctx, id, 0, 0)
		must(err)
		var seq []string
		for _, e := range evs {
			step := strings.TrimPrefix(e.Type, "workspace.")
			if e.Type == wire.EventPhaseChanged {
				var d map[string]any
				must(json.Unmarshal(e.Data, &d))
				step = d["from"].(string) + "->" + d["to"].(string)
			}
			seq = append(seq, step)
		}
		return seq
	}

	const src = "ws-src"
	must(store.CreateWorkspace(ctx, &wire.Workspace{ID: src, TemplateID: "t", ProviderID: "mem", Backend: memory.Type, Phase: wire.PhasePending}))
	var pausedPhase string
	var pausedRuntime bool
	seq := run(src, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			ws, err := store.GetWorkspace(ctx, src)
			must(err)
			must(os.WriteFile(filepath.Join(ws.Path, "work.txt"), []byte("the agent's"), 0o644))
			newSnap("snap-src", src)
			env.SignalWorkflow(SignalSnapshot, SnapshotSignal{SnapshotID: "snap-src"})
		}, 40*time.Second)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPause, PauseSignal{Reason: "paused by test"}) }, 70*time.Second)
		env.RegisterDelayedCallback(func() {
			ws, err := store.GetWorkspace(ctx, src)
			must(err)
			pausedPhase, pausedRuntime = ws.Phase, mem.Paused(src)
			newSnap("snap-paused", src)
			env.SignalWorkflow(SignalSnapshot, SnapshotSignal{SnapshotID: "snap-paused"})
		}, 300*time.Second)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalResume, ResumeSignal{}) }, 400*time.Second)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalDelete, DeleteSignal{Reason: "done"}) }, 450*time.Second)
	})
	want := []string{"provisioned", "pending->running", "snapshot_taken", "paused", "running->paused",
		"snapshot_taken", "resumed", "paused->pending", "pending->running", "running->terminating", "destroyed"}
	if !slices.Equal(seq, want) {
		t.Errorf("events = %v, want %v", seq, want)
	}
	if pausedPhase != wire.PhasePaused || !pausedRuntime {
		t.Errorf("while paused: phase %q, backend paused %v", pausedPhase, pausedRuntime)
	}
	for _, id := range []string{"snap-src", "snap-paused"} {
		snap, err := store.GetSnapshot(ctx, id)
		must(err)
		if snap.Phase != wire.SnapshotReady || snap.Bytes <= 0 {
			t.Errorf("%s = %+v, want ready with a size", id, snap)
		}
	}

	const child = "ws-child"
	must(store.CreateWorkspace(ctx, &wire.Workspace{ID: child, TemplateID: "t", ProviderID: "mem", Backend: memory.Type,
		Phase: wire.PhasePending, SnapshotID: "snap-src"}))
	var files map[string]string
	seq = run(child, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			ws, err := store.GetWorkspace(ctx, child)
			must(err)
			files = map[string]string{}
			for _, f := range []string{"README", "work.txt", "init.log"} {
				b, _ := os.ReadFile(filepath.Join(ws.Path, f))
				files[f] = string(b)
			}
			env.SignalWorkflow(SignalDelete, DeleteSignal{Reason: "done"})
		}, 40*time.Second)
	})
	if want := []string{"provisioned", "pending->running", "running->terminating", "destroyed"}; !slices.Equal(seq, want) {
		t.Errorf("child events = %v, want %v", seq, want)
	}
	// The capture's files, and init ran once: in the source, not again.
	if files["work.txt"] != "the agent's" || files["README"] != "hi" || files["init.log"] != "once\n" {
		t.Errorf("child's files = %q", files)
	}
}
