package workflows

import (
	"context"
	"encoding/json"
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
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/wire"
)

// TestLifecycleWithRealActivities runs the workflow (with time skipping)
// over the real activities: a SQLite store, the memory backend and real
// runtimes. The runtime is killed and revived to drive failed and back: the
// session the failure ended is resumed when the sandbox comes back on its
// own (version vSelfHeal), with no replacement.
func TestLifecycleWithRealActivities(t *testing.T) {
	// The worker's Prober probes on the wall clock, which time skipping
	// leaves behind: the workflow's own probes drive this test.
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
	reg := backend.NewRegistry(map[string]backend.Factory{memory.Type: mem.Factory()})
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
		Backend: json.RawMessage(`{"kind":"memory","files":{"README":"hi"},"init":["test -f README"]}`)}))
	const id = "ws-int"
	must(store.CreateWorkspace(ctx, &wire.Workspace{ID: id, TemplateID: "t", ProviderID: "mem", Backend: memory.Type, Phase: wire.PhasePending}))
	ses := &wire.Session{WorkspaceID: id}
	must(store.CreateSession(ctx, ses))

	var s testsuite.WorkflowTestSuite
	s.SetLogger(newTestLogger(t))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	// Skipped time runs the workflow's clock ahead of the database's, which
	// stamps when sessions ended: start it an hour back so that the
	// failure's workflow time (LostAt) comes before the sessions it ended,
	// as it does when both clocks are the wall clock.
	env.SetStartTime(time.Now().Add(-time.Hour))
	Register(env, acts, nil, nil)

	// Probes at 0, 30, 60, ... s. Killed from 45 s: misses at 60, 90, 120
	// (failed). Revived at 135 s: hits at 150, 180, 210 (running). Delete at 225 s.
	var phaseAt100 string
	env.RegisterDelayedCallback(func() { mem.Kill(id) }, 45*time.Second)
	env.RegisterDelayedCallback(func() {
		ws, err := store.GetWorkspace(ctx, id)
		if err == nil {
			phaseAt100 = ws.Phase
		}
	}, 100*time.Second)
	env.RegisterDelayedCallback(func() { must(mem.Revive(id)) }, 135*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalDelete, DeleteSignal{Reason: "done"}) }, 225*time.Second)

	env.ExecuteWorkflow(WorkspaceWorkflowName, WorkspaceInput{
		WorkspaceID: id, TemplateID: "t", ProviderID: "mem", Backend: memory.Type, ProbeInterval: testInterval,
	})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	must(env.GetWorkflowError())

	if phaseAt100 != wire.PhaseRunning {
		t.Errorf("phase after two misses = %q, want running", phaseAt100)
	}
	if _, err := store.GetWorkspace(ctx, id); !errs.Is(err, errs.NotFound) {
		t.Errorf("row after delete: %v", err)
	}
	if mem.Provisioned(id) {
		t.Error("sandbox left behind")
	}
	got, err := store.GetSession(ctx, ses.ID)
	must(err)
	if got.EndReason != wire.ReasonWorkspaceLost {
		t.Errorf("session end reason = %q, want %q", got.EndReason, wire.ReasonWorkspaceLost)
	}

	evs, err := store.ListEvents(ctx, id, 0, 0)
	must(err)
	var seq []string
	var resumed string
	for _, e := range evs {
		var d map[string]any
		must(json.Unmarshal(e.Data, &d))
		step := strings.TrimPrefix(e.Type, "workspace.")
		if e.Type == wire.EventRecovered {
			var data struct {
				Attempt  int                         `json:"attempt"`
				Sessions []activities.ResumedSession `json:"sessions"`
			}
			must(json.Unmarshal(e.Data, &data))
			if data.Attempt != 0 || len(data.Sessions) != 1 || data.Sessions[0].ResumedFrom != ses.ID {
				t.Errorf("recovered event = %s, want attempt 0 and %s resumed", e.Data, ses.ID)
			} else {
				resumed = data.Sessions[0].ID
			}
		}
		if e.Type == wire.EventPhaseChanged {
			step = d["from"].(string) + "->" + d["to"].(string)
			if d["to"] == wire.PhaseFailed && !strings.Contains(d["reason"].(string), "runtime") {
				t.Errorf("failed reason %q does not name the runtime", d["reason"])
			}
		}
		seq = append(seq, step)
	}
	want := []string{"provisioned", "pending->running", "running->failed", "failed->running", "recovered", "running->terminating", "destroyed"}
	if !slices.Equal(seq, want) {
		t.Errorf("events = %v, want %v", seq, want)
	}
	if resumed != "" {
		next, err := store.GetSession(ctx, resumed)
		must(err)
		if next.ResumedFrom != ses.ID {
			t.Errorf("resumed session %s: resumed_from = %q, want %q", next.ID, next.ResumedFrom, ses.ID)
		}
	}
}
