package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// SnapshotStuckAfter is how long a snapshot may stay creating before the
// reconciler fails it: longer than the workflow's snapshot step with all
// its retries (4 attempts of at most 30 minutes). A workflow that started
// before snapshots existed never takes the signal, and a signal sent just
// as a run continued as new is lost with it.
const SnapshotStuckAfter = 3 * time.Hour

// reconcileSnapshots finishes what snapshot rows wait for: a fork's
// implicit snapshot that no workspace or pool uses any more (its last
// child was deleted), older than grace, is released (marked deleting, see
// models.ReleaseImplicitSnapshots), since nobody would ever delete it and
// it counts against max_snapshot_bytes; a snapshot in phase deleting
// (DELETE /v1/snapshots/{id} marks it so, as does a release) has its
// capture removed from its provider's backend and then its row; a snapshot still
// creating, older than grace, whose workspace is gone will never be taken
// (the workspace was deleted before its workflow took the signal) and
// fails, as does one creating for longer than SnapshotStuckAfter; one
// creating whose workspace lives but was never asked to take it (the
// process that stored it was killed first) is asked for now. A
// capture that completes after that finds its row failed and is removed.
func (a *Activities) reconcileSnapshots(ctx context.Context, grace time.Duration, out *ReconcileOutput) {
	released, err := a.Store.ReleaseImplicitSnapshots(ctx, time.Now().Add(-grace))
	if err != nil {
		out.Errors = append(out.Errors, fmt.Sprintf("snapshots: release unused implicit: %v", err))
	}
	for _, id := range released {
		out.SnapshotsReleased = append(out.SnapshotsReleased, id)
		a.logger().Info("implicit snapshot released: no workspace or pool uses it", "snapshot_id", id)
	}

	deleting, err := a.Store.ListSnapshots(ctx, models.SnapshotFilter{Phase: wire.SnapshotDeleting})
	if err != nil {
		out.Errors = append(out.Errors, fmt.Sprintf("snapshots: list deleting: %v", err))
	}
	for i := range deleting {
		snap := &deleting[i]
		if err := a.removeSnapshot(ctx, snap); err != nil {
			out.Errors = append(out.Errors, err.Error())
			continue
		}
		out.SnapshotsRemoved = append(out.SnapshotsRemoved, snap.ID)
	}

	creating, err := a.Store.ListSnapshots(ctx, models.SnapshotFilter{Phase: wire.SnapshotCreating})
	if err != nil {
		out.Errors = append(out.Errors, fmt.Sprintf("snapshots: list creating: %v", err))
	}
	for _, snap := range creating {
		if time.Since(snap.CreatedAt) < grace {
			continue
		}
		var reason string
		ws, err := a.Store.GetWorkspace(ctx, snap.WorkspaceID)
		switch {
		case errs.Is(err, errs.NotFound):
			reason = fmt.Sprintf("workspace %s was deleted before the snapshot was taken", snap.WorkspaceID)
		case err != nil:
			out.Errors = append(out.Errors, fmt.Sprintf("snapshot %s: workspace %s: %v", snap.ID, snap.WorkspaceID, err))
			continue
		case time.Since(snap.CreatedAt) > SnapshotStuckAfter:
			reason = fmt.Sprintf("not taken within %s: the workspace's workflow did not take the request", SnapshotStuckAfter)
		case !snap.Signalled && a.Lifecycle != nil:
			// Stored by a process killed before it asked the workflow
			// (a fork's children wait for it): ask now.
			if err := a.Lifecycle.SignalSnapshot(ctx, ws, &snap); err != nil {
				out.Errors = append(out.Errors, fmt.Sprintf("snapshot %s: ask workspace %s to take it: %v", snap.ID, ws.ID, err))
				continue
			}
			out.SnapshotsSignalled = append(out.SnapshotsSignalled, snap.ID)
			a.logger().Warn("snapshot adopted: its request stopped before the workspace was asked to take it", "snapshot_id", snap.ID, "workspace_id", ws.ID)
			continue
		default:
			continue
		}
		if err := a.Store.SetSnapshotFailed(ctx, snap.ID, reason); err != nil && !errs.Is(err, errs.Conflict) && !errs.Is(err, errs.NotFound) {
			out.Errors = append(out.Errors, fmt.Sprintf("snapshot %s: set failed: %v", snap.ID, err))
			continue
		}
		out.SnapshotsFailed = append(out.SnapshotsFailed, snap.ID)
		a.logger().Info("snapshot failed", "snapshot_id", snap.ID, "workspace_id", snap.WorkspaceID, "reason", reason)
	}
}

// removeSnapshot removes a deleting snapshot's capture from its backend,
// then its row. A snapshot that never became ready has no stored
// reference, but a capture cut off by a crash or a delete may have left
// something named after its id: removing it by id is tried, and a backend
// that cannot does not keep the row (a capture taken after the delete is
// removed by the workflow that took it). One whose provider is gone can no
// longer be reached, and only its row goes.
func (a *Activities) removeSnapshot(ctx context.Context, snap *wire.Snapshot) error {
	what := "snapshot " + snap.ID + ": remove"
	ref := backend.SnapshotRef{Backend: snap.Backend, SnapshotID: snap.ID, Mode: snap.Mode}
	stored := len(snap.Ref) > 0 && string(snap.Ref) != "null"
	if stored {
		if err := json.Unmarshal(snap.Ref, &ref); err != nil {
			return fmt.Errorf("%s: decode ref: %w", what, err)
		}
	}
	p, err := a.Store.GetProvider(ctx, snap.ProviderID)
	switch {
	case errs.Is(err, errs.NotFound):
		a.logger().Warn("snapshot's provider is gone: its capture is left", "snapshot_id", snap.ID, "provider_id", snap.ProviderID, "ref", ref.Ref)
	case err != nil:
		return fmt.Errorf("%s: provider %s: %w", what, snap.ProviderID, err)
	default:
		b, err := a.Backends.For(p)
		if err != nil {
			return fmt.Errorf("%s: provider %s: %w", what, p.ID, err)
		}
		if sn, ok := b.(backend.Snapshotter); ok {
			err := sn.DeleteSnapshot(ctx, ref)
			switch {
			case err != nil && stored:
				return fmt.Errorf("%s: %w", what, err)
			case err != nil:
				a.logger().Warn("remove what a cut-off capture may have left", "snapshot_id", snap.ID, "error", err)
			}
		}
	}
	if err := a.Store.DeleteSnapshot(ctx, snap.ID); err != nil && !errs.Is(err, errs.NotFound) {
		return fmt.Errorf("%s: delete row: %w", what, err)
	}
	a.logger().Info("snapshot removed", "snapshot_id", snap.ID, "backend", snap.Backend)
	return nil
}

// orphanedSnapshots removes the captures provider p's backend lists
// (backend.SnapshotLister) whose snapshot has no row, once they are older
// than grace: a row is made before its capture begins, so a capture
// without one was left by a crash between the row's delete and its
// capture's, or by a store restored from a backup. A capture being taken
// has its row, and one that finishes after its row was deleted is
// removed by the activity that took it.
func (a *Activities) orphanedSnapshots(ctx context.Context, p *wire.Provider, b backend.Backend, grace time.Duration, out *ReconcileOutput) {
	lister, ok := b.(backend.SnapshotLister)
	if !ok {
		return
	}
	sn, ok := b.(backend.Snapshotter)
	if !ok {
		return
	}
	listed, err := lister.ListSnapshots(ctx)
	if err != nil {
		out.Errors = append(out.Errors, fmt.Sprintf("provider %s: list snapshots: %v", p.ID, err))
		return
	}
	for _, l := range listed {
		if time.Since(l.Modified) < grace {
			continue
		}
		_, err := a.Store.GetSnapshot(ctx, l.Ref.SnapshotID)
		if err == nil {
			continue
		}
		if !errs.Is(err, errs.NotFound) {
			out.Errors = append(out.Errors, fmt.Sprintf("snapshot %s: %v", l.Ref.SnapshotID, err))
			continue
		}
		if err := sn.DeleteSnapshot(ctx, l.Ref); err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("provider %s: remove orphaned snapshot %s: %v", p.ID, l.Ref.SnapshotID, err))
			continue
		}
		out.SnapshotsOrphaned = append(out.SnapshotsOrphaned, l.Ref.SnapshotID)
		a.logger().Info("orphaned snapshot removed", "snapshot_id", l.Ref.SnapshotID, "provider_id", p.ID,
			"backend", p.Provider, "objects", l.Objects)
	}
}
