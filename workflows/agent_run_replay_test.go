package workflows

import (
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// TestReplayCoversAgentRun checks that testdata holds recorded
// SessionRunWorkflow histories (agent_run_*_v1.json: completed after a
// 429, max_turns, canceled, resumed after its workspace was lost) with the versionAgentRun marker at 1, so
// TestReplay replays the agent run's paths.
func TestReplayCoversAgentRun(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "agent_run*.json"))
	if err != nil {
		t.Fatal(err)
	}
	dc := converter.GetDefaultDataConverter()
	found := 0
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
		if hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName() != SessionRunWorkflowName {
			t.Fatalf("%s: not a %s history", file, SessionRunWorkflowName)
		}
		for _, ev := range hist.GetEvents() {
			m := ev.GetMarkerRecordedEventAttributes()
			var change string
			var version workflow.Version
			if m.GetMarkerName() != "Version" || dc.FromPayloads(m.GetDetails()["change-id"], &change) != nil || change != versionAgentRun {
				continue
			}
			if err := dc.FromPayloads(m.GetDetails()["version"], &version); err == nil && version == 1 {
				found++
			}
		}
	}
	if found < 4 {
		t.Fatalf("%d recorded histories of change %q at version 1 in testdata, want 4 (make record-histories)", found, versionAgentRun)
	}
}
