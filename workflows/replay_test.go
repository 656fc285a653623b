package workflows

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplay replays every history recorded against a real Temporal server
// (testdata/*.json, written by make record-histories)
// through the current workflow code. It fails when a change to the
// workflow would break workflows already running: guard such changes with
// workflow.GetVersion and record a new history, never re-record the old ones.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recorded histories in testdata; record them with make record-histories")
	}
	logger := sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(WorkspaceWorkflow, workflow.RegisterOptions{Name: WorkspaceWorkflowName})
			r.RegisterWorkflowWithOptions(PoolWorkflow, workflow.RegisterOptions{Name: PoolWorkflowName})
			r.RegisterWorkflowWithOptions(ReconcilerWorkflow, workflow.RegisterOptions{Name: ReconcilerWorkflowName})
			r.RegisterWorkflowWithOptions(RunWorkflow, workflow.RegisterOptions{Name: RunWorkflowName})
			r.RegisterWorkflowWithOptions(SessionRunWorkflow, workflow.RegisterOptions{Name: SessionRunWorkflowName})
			if err := r.ReplayWorkflowHistoryFromJSONFile(logger, file); err != nil {
				t.Fatalf("replay %s: %v", file, err)
			}
		})
	}
}

// TestReplayCoversEveryVersion checks that testdata holds recorded
// histories of every version of each change id below, the latest included,
// of the workflow that takes it, so that TestReplay replays each version's
// path: a new version needs its history recorded (make record-histories, or
// workflows/recorder). A history without a change's marker is of its
// version 0 (workflow.DefaultVersion).
func TestReplayCoversEveryVersion(t *testing.T) {
	changes := []struct {
		workflow string
		id       string
		versions []workflow.Version
		// each is how many histories each version needs (one when 0): the
		// paths of a change that are worth replaying apart.
		each int
	}{
		{WorkspaceWorkflowName, versionRecovery, []workflow.Version{workflow.DefaultVersion, vRecovery, vSelfHeal}, 0},
		// lifetime_v1.json: a lease taken back, then an expiry.
		{WorkspaceWorkflowName, versionLifetime, []workflow.Version{vLifetime}, 0},
		// liveness_v1.json: the Prober fails a watched workspace, it
		// recovers and is watched again.
		{WorkspaceWorkflowName, versionLiveness, []workflow.Version{vLiveness}, 0},
		// snapshot_v1.json: a snapshot taken, one refused, a pause, a
		// snapshot while paused, a resume; idle_pause_v1.json: paused at
		// the idle deadline (idle_action pause), then deleted.
		{WorkspaceWorkflowName, versionSnapshot, []workflow.Version{vSnapshot}, 2},
		// expire_pause_v1.json: paused at its expiry (expire_action
		// pause), extended and resumed, then deleted.
		{WorkspaceWorkflowName, versionExpirePause, []workflow.Version{vExpirePause}, 0},
		// agent_run_*_v1.json: completed after a 429, max_turns, canceled,
		// resumed after its workspace was lost.
		{SessionRunWorkflowName, versionAgentRun, []workflow.Version{1}, 4},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	dc := converter.GetDefaultDataConverter()
	// recorded[change id][version] are the files of that version.
	recorded := map[string]map[workflow.Version][]string{}
	for _, c := range changes {
		recorded[c.id] = map[workflow.Version][]string{}
	}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		events := hist.GetEvents()
		if len(events) == 0 {
			continue
		}
		wf := events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
		// The first marker of each change is the version the run took.
		got := map[string]workflow.Version{}
		for _, ev := range events {
			m := ev.GetMarkerRecordedEventAttributes()
			if m.GetMarkerName() != "Version" {
				continue
			}
			var change string
			if err := dc.FromPayloads(m.GetDetails()["change-id"], &change); err != nil {
				continue
			}
			if _, known := recorded[change]; !known {
				continue
			}
			if _, seen := got[change]; seen {
				continue
			}
			var version workflow.Version
			if err := dc.FromPayloads(m.GetDetails()["version"], &version); err != nil {
				t.Fatalf("%s: version marker of %s: %v", file, change, err)
			}
			got[change] = version
		}
		for _, c := range changes {
			if c.workflow != wf {
				continue
			}
			v, ok := got[c.id]
			if !ok {
				v = workflow.DefaultVersion
			}
			recorded[c.id][v] = append(recorded[c.id][v], filepath.Base(file))
		}
	}
	for _, c := range changes {
		t.Run(c.id, func(t *testing.T) {
			for _, v := range c.versions {
				if n := len(recorded[c.id][v]); n < max(c.each, 1) {
					t.Errorf("%d recorded %s histories with change %q at version %d in testdata, want %d; record them (make record-histories, workflows/recorder)", n, c.workflow, c.id, v, max(c.each, 1))
				}
			}
			t.Logf("recorded %s histories of change %q by version: %v", c.workflow, c.id, recorded[c.id])
		})
	}
}
