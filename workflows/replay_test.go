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

// TestReplayCoversEveryVersion checks that testdata holds a recorded
// WorkspaceWorkflow history of every version of change versionRecovery,
// the latest included, so that TestReplay replays each version's path:
// a new version needs its history recorded (make record-histories).
func TestReplayCoversEveryVersion(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	dc := converter.GetDefaultDataConverter()
	recorded := map[workflow.Version][]string{}
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
		if len(events) == 0 || events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName() != WorkspaceWorkflowName {
			continue
		}
		// No marker for the change is version 0 (workflow.DefaultVersion).
		version := workflow.DefaultVersion
		for _, ev := range events {
			m := ev.GetMarkerRecordedEventAttributes()
			if m.GetMarkerName() != "Version" {
				continue
			}
			var change string
			if err := dc.FromPayloads(m.GetDetails()["change-id"], &change); err != nil || change != versionRecovery {
				continue
			}
			if err := dc.FromPayloads(m.GetDetails()["version"], &version); err != nil {
				t.Fatalf("%s: version marker: %v", file, err)
			}
			break
		}
		recorded[version] = append(recorded[version], filepath.Base(file))
	}
	for _, v := range []workflow.Version{workflow.DefaultVersion, vRecovery, vSelfHeal} {
		if len(recorded[v]) == 0 {
			t.Errorf("no recorded WorkspaceWorkflow history of version %d in testdata; record one with make record-histories", v)
		}
	}
	t.Logf("recorded WorkspaceWorkflow histories by version: %v", recorded)
}
