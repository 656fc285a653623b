package workflows

import (
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// TestReplayCoversLiveness checks that testdata holds a recorded
// WorkspaceWorkflow history with the versionLiveness marker at vLiveness,
// so TestReplay replays the liveness path (liveness_v1.json: the Prober
// fails a watched workspace, it recovers and is watched again).
func TestReplayCoversLiveness(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	dc := converter.GetDefaultDataConverter()
	var found []string
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
		for _, ev := range hist.GetEvents() {
			m := ev.GetMarkerRecordedEventAttributes()
			if m.GetMarkerName() != "Version" {
				continue
			}
			var change string
			var version workflow.Version
			if dc.FromPayloads(m.GetDetails()["change-id"], &change) != nil || change != versionLiveness {
				continue
			}
			if err := dc.FromPayloads(m.GetDetails()["version"], &version); err != nil {
				t.Fatalf("%s: version marker: %v", file, err)
			}
			if version == vLiveness {
				found = append(found, filepath.Base(file))
			}
		}
	}
	if len(found) == 0 {
		t.Fatalf("no recorded history with change %q at version %d in testdata; record one (workflows/recorder)", versionLiveness, vLiveness)
	}
	t.Logf("histories of %s v%d: %v", versionLiveness, vLiveness, found)
}
