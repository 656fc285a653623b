package models

import (
	"encoding/json"
	"testing"

	"github.com/primerhq/primer/wire"
)

// TestUsagePausedAndSnapshots: a paused workspace counts as a workspace and
// as paused, not toward CPU and memory; ready snapshots add their bytes.
func TestUsagePausedAndSnapshots(t *testing.T) {
	s := openTestSQLite(t)
	ctx := t.Context()
	for _, w := range []*wire.Workspace{
		{ID: NewID("ws"), CPUCores: 1, MemoryBytes: 100, Phase: wire.PhaseRunning},
		{ID: NewID("ws"), CPUCores: 2, MemoryBytes: 200, Phase: wire.PhasePaused},
	} {
		w.TemplateID, w.ProviderID, w.Backend, w.WorkflowID = wire.DefaultTemplateID, wire.LocalProviderID, wire.BackendLocal, "workspace-"+w.ID
		if err := s.CreateWorkspace(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	snap := &wire.Snapshot{ID: NewID("snap"), WorkspaceID: "ws-1", TemplateID: wire.DefaultTemplateID,
		ProviderID: wire.LocalProviderID, Backend: wire.BackendLocal, Mode: wire.SnapshotModeFilesystem}
	if err := s.CreateSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSnapshotReady(ctx, snap.ID, json.RawMessage(`{}`), 5); err != nil {
		t.Fatal(err)
	}
	u, err := s.TenantUsage(ctx, wire.DefaultTenantID)
	want := wire.Usage{Workspaces: 2, CPUCores: 1, MemoryBytes: 100, Paused: 1, SnapshotBytes: 5}
	if err != nil || u != want {
		t.Fatalf("usage = %+v, %v; want %+v", u, err, want)
	}
}
