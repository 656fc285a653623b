package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// ReconcileInput tunes one reconciler pass.
type ReconcileInput struct {
	// Grace is how old an engine object without a workspace must be before
	// it is removed: younger ones may belong to a create in flight.
	Grace time.Duration
}

// ReconcileOutput is what one pass found.
type ReconcileOutput struct {
	// Removed are the workspace ids whose orphaned sandboxes were removed.
	Removed []string
	// Missing are running workspaces whose sandbox the backend no longer has.
	Missing []string
	// Adopted are pending workspaces whose workflow was never started
	// (their create was cut off) and now is.
	Adopted []string
	// Tidied are the shared objects no sandbox used that were removed
	// (backend.Tidier), such as empty tenant networks.
	Tidied []string
	// SnapshotsRemoved are the deleting snapshots whose capture and row
	// were removed; SnapshotsFailed the creating ones whose workspace was
	// gone (reconcile_snapshots.go).
	SnapshotsRemoved []string `json:",omitempty"`
	SnapshotsFailed  []string `json:",omitempty"`
	// SnapshotsReleased are the implicit snapshots of forks that no
	// workspace or pool used any more, marked deleting (and removed in
	// the same pass, so listed in SnapshotsRemoved too).
	SnapshotsReleased []string `json:",omitempty"`
	// SnapshotsOrphaned are the captures a backend keeps
	// (backend.SnapshotLister) whose snapshot had no row, removed.
	SnapshotsOrphaned []string `json:",omitempty"`
	// SnapshotsSignalled are the creating snapshots whose workspace had
	// never been asked to take them (their request was cut off), asked now.
	SnapshotsSignalled []string `json:",omitempty"`
	// Errors are providers or objects the pass could not handle, as messages.
	Errors []string
}

// Reconcile compares every provider's backend that can list its sandboxes
// (backend.Lister) with the workspace rows. A sandbox labelled as Primer's
// whose workspace id has no row, older than Grace, is an orphan (its
// workspace was deleted without it, or never stored) and is destroyed. A
// running workspace whose sandbox is not listed is reported with a
// workspace.sandbox_missing event; its probes will fail it and recovery
// replaces it. Rows are checked by id across all providers, since two
// providers can share one engine. Then pending rows that never got a
// workflow are adopted (reconcile_adopt.go), and deleted or abandoned
// snapshots are finished, and captures whose snapshot has no row removed
// (reconcile_snapshots.go). Each backend that keeps shared
// objects beside its sandboxes removes those no sandbox uses (tidy).
func (a *Activities) Reconcile(ctx context.Context, in ReconcileInput) (ReconcileOutput, error) {
	defer KeepAlive(ctx)()
	var out ReconcileOutput
	providers, err := a.Store.ListProviders(ctx, "")
	if err != nil {
		return out, Classify(fmt.Errorf("reconcile: list providers: %w", err))
	}
	for i := range providers {
		p := &providers[i]
		b, err := a.Backends.For(p)
		if err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("provider %s: %v", p.ID, err))
			continue
		}
		a.tidy(ctx, p, b, in.Grace, &out)
		a.orphanedSnapshots(ctx, p, b, in.Grace, &out)
		lister, ok := b.(backend.Lister)
		if !ok {
			continue
		}
		listed, err := lister.List(ctx)
		if err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("provider %s: list: %v", p.ID, err))
			continue
		}
		present := make(map[string]bool, len(listed))
		for _, l := range listed {
			present[l.WorkspaceID] = present[l.WorkspaceID] || !l.Remnant
			if time.Since(l.Created) < in.Grace {
				continue
			}
			_, err := a.Store.GetWorkspace(ctx, l.WorkspaceID)
			if err == nil {
				continue
			}
			if !errs.Is(err, errs.NotFound) {
				out.Errors = append(out.Errors, fmt.Sprintf("workspace %s: %v", l.WorkspaceID, err))
				continue
			}
			if err := b.Destroy(ctx, backend.Handle{Backend: p.Provider, WorkspaceID: l.WorkspaceID}); err != nil {
				out.Errors = append(out.Errors, fmt.Sprintf("provider %s: remove orphan %s: %v", p.ID, l.WorkspaceID, err))
				continue
			}
			out.Removed = append(out.Removed, l.WorkspaceID)
			if a.Metrics != nil {
				a.Metrics.OrphansRemoved.Inc()
			}
			a.logger().Info("orphaned sandbox removed", "workspace_id", l.WorkspaceID, "provider_id", p.ID,
				"backend", p.Provider, "objects", l.Objects)
		}
		running, err := a.Store.ListWorkspaces(ctx, models.WorkspaceFilter{ProviderID: p.ID, Phase: wire.PhaseRunning})
		if err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("provider %s: list workspaces: %v", p.ID, err))
			continue
		}
		for _, ws := range running {
			if present[ws.ID] {
				continue
			}
			// Listed before the rows were read: a workspace made since is
			// not missing. Only one whose sandbox is older than the listing
			// can be.
			if time.Since(ws.UpdatedAt) < in.Grace {
				continue
			}
			out.Missing = append(out.Missing, ws.ID)
			if a.reported(ctx, ws.ID) {
				continue
			}
			if _, err := a.recordEvent(ctx, ws.ID, wire.EventSandboxMissing, map[string]any{
				"workspace_type": ws.Backend,
				"reason":         fmt.Sprintf("provider %s has no sandbox for this workspace", p.ID),
			}); err != nil {
				out.Errors = append(out.Errors, err.Error())
			}
			a.logger().Warn("workspace sandbox missing", "workspace_id", ws.ID, "provider_id", p.ID, "backend", p.Provider)
		}
	}
	a.adoptPending(ctx, in.Grace, &out)
	a.reconcileSnapshots(ctx, in.Grace, &out)
	return out, nil
}

// tidy removes what provider p's backend holds for no sandbox (see
// backend.Tidier).
func (a *Activities) tidy(ctx context.Context, p *wire.Provider, b backend.Backend, grace time.Duration, out *ReconcileOutput) {
	t, ok := b.(backend.Tidier)
	if !ok {
		return
	}
	removed, err := t.Tidy(ctx, grace)
	if err != nil {
		out.Errors = append(out.Errors, fmt.Sprintf("provider %s: tidy: %v", p.ID, err))
	}
	for _, r := range removed {
		out.Tidied = append(out.Tidied, r)
		a.logger().Info("unused object removed", "provider_id", p.ID, "backend", p.Provider, "object", r)
	}
}

// reported tells whether the workspace's latest event already says its
// sandbox is missing: a pass reports it once, not every minute until the
// probes fail it.
func (a *Activities) reported(ctx context.Context, id string) bool {
	evs, err := a.Store.LatestEvents(ctx, id, 1)
	return err == nil && len(evs) == 1 && evs[0].Type == wire.EventSandboxMissing
}
