package workflows

import (
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// TestReplayCoversLifetime checks that testdata holds a recorded
// WorkspaceWorkflow history with the versionLifetime marker at vLifetime,
// so TestReplay replays the lifetime path (lifetime_v1.json: a lease taken
// back, then an expiry).
func TestReplayCoversLifetime(t *testing.T) {
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
			if dc.FromPayloads(m.GetDetails()["change-id"], &change) != nil || change != versionLifetime {
				continue
			}
			if err := dc.FromPayloads(m.GetDetails()["version"], &version); err != nil {
				t.Fatalf("%s: version marker: %v", file, err)
			}
			if version == vLifetime {
				found = append(found, filepath.Base(file))
			}
		}
	}
	if len(found) == 0 {
		t.Fatalf("no recorded history with change %q at version %d in testdata; record one (workflows/recorder)", versionLifetime, vLifetime)
	}
	t.Logf("histories of %s v%d: %v", versionLifetime, vLifetime, found)
}
