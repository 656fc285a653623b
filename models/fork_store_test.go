package models

import (
	"context"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// forkRows is a fork's implicit snapshot and n children of template t in
// tenant, each with cpu cores.
func forkRows(tenant string, n int, cpu float64) (*wire.Snapshot, []*wire.Workspace) {
	snap := &wire.Snapshot{ID: NewID("snap"), TenantID: tenant, WorkspaceID: NewID("ws"), TemplateID: "t",
		ProviderID: "p", Backend: wire.BackendLocal, Mode: wire.SnapshotModeFilesystem, Implicit: true}
	var ws []*wire.Workspace
	for range n {
		w := tenantWorkspace(tenant, cpu, 0)
		w.SnapshotID = snap.ID
		ws = append(ws, w)
	}
	return snap, ws
}

// TestCreateFork: a fork's children count against the quotas together,
// all or nothing, also when two forks race for the last room.
func TestCreateFork(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			ctx := context.Background()
			must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendLocal}))
			must(t, s.CreateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p"}))
			must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "small", Quota: wire.Quota{MaxWorkspaces: 3, MaxCPUCores: 2}}))
			count := func() (snaps, workspaces int) {
				sn, err := s.ListSnapshots(ctx, SnapshotFilter{TenantID: "small"})
				must(t, err)
				ws, err := s.ListWorkspaces(ctx, WorkspaceFilter{TenantID: "small"})
				must(t, err)
				return len(sn), len(ws)
			}

			snap, ws := forkRows("small", 4, 0.1)
			wantErr(t, s.CreateFork(ctx, snap, ws), errs.Exhausted, "max_workspaces")
			snap, ws = forkRows("small", 3, 1)
			wantErr(t, s.CreateFork(ctx, snap, ws), errs.Exhausted, "max_cpu_cores")
			if sn, n := count(); sn != 0 || n != 0 {
				t.Fatalf("after refused forks: %d snapshots, %d workspaces; want none", sn, n)
			}

			// Two forks of 2 race for room for 3: exactly one is made, whole.
			ok, failed := createConcurrently(2, func(int) error {
				snap, ws := forkRows("small", 2, 0.5)
				return s.CreateFork(ctx, snap, ws)
			})
			if ok != 1 || len(failed) != 1 || !errs.Is(failed[0], errs.Exhausted) {
				t.Fatalf("racing forks: %d made, errors %v; want 1 and one Exhausted", ok, failed)
			}
			if sn, n := count(); sn != 1 || n != 2 {
				t.Fatalf("after the race: %d snapshots, %d workspaces; want 1 and 2", sn, n)
			}
			got, err := s.ListWorkspaces(ctx, WorkspaceFilter{TenantID: "small"})
			must(t, err)
			snaps, err := s.ListSnapshots(ctx, SnapshotFilter{TenantID: "small"})
			must(t, err)
			if !snaps[0].Implicit || snaps[0].Phase != wire.SnapshotCreating || got[0].SnapshotID != snaps[0].ID {
				t.Fatalf("fork rows: snapshot %+v, workspace %+v", snaps[0], got[0])
			}
		})
	}
}
