package api

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// TestCreateWarmMatchesSnapshot: a member holds its pool's state, so a
// plain create never takes a member of a pool filled from a snapshot, and
// a create from that snapshot takes it (the warm start of a prepared
// environment) while one from another snapshot goes cold.
func TestCreateWarmMatchesSnapshot(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	src := h.workspace(wire.PhaseRunning)
	snaps := make([]string, 2)
	for i := range snaps {
		snap := &wire.Snapshot{ID: models.NewID("snap"), WorkspaceID: src.ID, TemplateID: src.TemplateID,
			ProviderID: src.ProviderID, Backend: src.Backend, Mode: wire.SnapshotModeFilesystem}
		if err := h.store.CreateSnapshot(ctx, snap); err != nil {
			t.Fatal(err)
		}
		if err := h.store.SetSnapshotReady(ctx, snap.ID, json.RawMessage(`{}`), 1); err != nil {
			t.Fatal(err)
		}
		snaps[i] = snap.ID
	}
	p := &wire.Pool{ID: "p", TemplateID: wire.DefaultTemplateID, Size: 1, SnapshotID: snaps[0]}
	if err := h.store.CreatePool(ctx, p); err != nil {
		t.Fatal(err)
	}
	member := h.member("p", wire.PhaseRunning, wire.PoolIdle)
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Return(&mocks.WorkflowRun{}, nil).Times(2)
	notified := h.expectNotify("p", 1)

	create := func(body string) createAnswer {
		t.Helper()
		var got createAnswer
		h.do("POST", "/v1/workspaces", body).expect(t, 201).decode(t, &got)
		return got
	}
	if got := create(`{"template_id":"default"}`); got.Source != CreateCold || got.ID == member.ID {
		t.Fatalf("plain create = %s %s, want a cold one, not the snapshot pool's member %s", got.Source, got.ID, member.ID)
	}
	if got := create(`{"snapshot_id":"` + snaps[1] + `"}`); got.Source != CreateCold || got.ID == member.ID || got.SnapshotID != snaps[1] {
		t.Fatalf("create from another snapshot = %s %s (snapshot %q), want cold from %s", got.Source, got.ID, got.SnapshotID, snaps[1])
	}
	got := create(`{"snapshot_id":"` + snaps[0] + `"}`)
	if got.Source != CreateWarm || got.ID != member.ID {
		t.Fatalf("create from the pool's snapshot = %s %s, want the warm member %s", got.Source, got.ID, member.ID)
	}
	h.srv.bg.Wait()
	if *notified != 1 {
		t.Fatalf("pool woken %d times, want 1", *notified)
	}
}
