package workflows

import (
	"log/slog"
	"path/filepath"
	"testing"

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
			if err := r.ReplayWorkflowHistoryFromJSONFile(logger, file); err != nil {
				t.Fatalf("replay %s: %v", file, err)
			}
		})
	}
}
