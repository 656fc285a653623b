package api

import (
	"context"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// snapshotOf returns the snapshot id if the caller may see it.
func (s *server) snapshotOf(c *gin.Context, id string) (*wire.Snapshot, error) {
	return scoped(c, "snapshot", id, s.cfg.Store.GetSnapshot, func(sn *wire.Snapshot) string { return sn.TenantID })
}

// capabilitiesOf is what the backend of workspace w's provider offers.
func (s *server) capabilitiesOf(ctx context.Context, w *wire.Workspace) (backend.Capabilities, error) {
	p, err := s.cfg.Store.GetProvider(ctx, w.ProviderID)
	if err != nil {
		return backend.Capabilities{}, errs.E(errs.KindOf(err), "workspace %s: provider %s: %w", w.ID, w.ProviderID, err)
	}
	b, err := s.cfg.Backends.For(p)
	if err != nil {
		return backend.Capabilities{}, err
	}
	return b.Capabilities(), nil
}

// snapshotMode checks a requested mode (empty: filesystem) against the
// backend of w: 400 naming field when the mode is unknown or the backend
// does not take it, with the backend's note on why.
func (s *server) snapshotMode(ctx context.Context, w *wire.Workspace, field, mode string) (string, error) {
	if mode == "" {
		mode = wire.SnapshotModeFilesystem
	}
	if mode != wire.SnapshotModeFilesystem && mode != wire.SnapshotModeFull {
		return "", errs.Field(field, "%s: %q is not one of filesystem, full", field, mode)
	}
	caps, err := s.capabilitiesOf(ctx, w)
	if err != nil {
		return "", err
	}
	if !slices.Contains(caps.Snapshots, mode) {
		msg := "the " + w.Backend + " backend does not take " + mode + " snapshots"
		if caps.SnapshotsNote != "" {
			msg += " (" + caps.SnapshotsNote + ")"
		}
		return "", errs.Field(field, "%s: workspace %s: %s", field, w.ID, msg)
	}
	return mode, nil
}

// captureSource is the workspace of the request's path that a snapshot or
// a fork captures, and the mode it is taken in: the caller's, running or
// paused, reachable by the caller (a workspace on a host backend only by
// an admin: its capture copies files of the Primer host), and on a
// backend that takes the mode. verb names the operation in the refusal.
func (s *server) captureSource(c *gin.Context, verb, mode string) (*wire.Workspace, string, error) {
	w, err := s.workspaceOf(c, c.Param("id"))
	if err != nil {
		return nil, "", err
	}
	if err := hostWorkspace(c, w); err != nil {
		return nil, "", err
	}
	if w.Phase != wire.PhaseRunning && w.Phase != wire.PhasePaused {
		return nil, "", errs.E(errs.Precondition, "workspace %s: is %s; only a running or paused workspace can be %s", w.ID, w.Phase, verb)
	}
	mode, err = s.snapshotMode(c.Request.Context(), w, "mode", mode)
	if err != nil {
		return nil, "", err
	}
	return w, mode, nil
}

// createSnapshot asks for a capture of a running or paused workspace; the
// snapshot is answered in phase creating.
func (s *server) createSnapshot(c *gin.Context) {
	var spec wire.CreateSnapshotRequest
	if err := s.decodeJSON(c, &spec, "", true); err != nil {
		s.fail(c, err)
		return
	}
	if err := validLabels("labels", spec.Labels); err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	w, mode, err := s.captureSource(c, "snapshotted", spec.Mode)
	if err != nil {
		s.fail(c, err)
		return
	}
	snap := &wire.Snapshot{
		ID:          models.NewID("snap"),
		TenantID:    w.TenantID,
		WorkspaceID: w.ID,
		TemplateID:  w.TemplateID,
		ProviderID:  w.ProviderID,
		Backend:     w.Backend,
		Mode:        mode,
		Labels:      spec.Labels,
	}
	if err := s.cfg.Starter.Snapshot(ctx, w, snap); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("snapshot requested", "workspace_id", w.ID, "snapshot_id", snap.ID, "mode", mode)
	c.Header("Location", "/v1/snapshots/"+snap.ID)
	c.JSON(http.StatusAccepted, snap)
}

// snapshotPhases are the values the phase filter accepts.
var snapshotPhases = map[string]bool{
	wire.SnapshotCreating: true, wire.SnapshotReady: true, wire.SnapshotFailed: true, wire.SnapshotDeleting: true,
}

func (s *server) listSnapshots(c *gin.Context) {
	f := models.SnapshotFilter{TenantID: listTenant(c), WorkspaceID: c.Query("workspace_id"), Phase: c.Query("phase")}
	if f.Phase != "" && !snapshotPhases[f.Phase] {
		s.fail(c, errs.Field("phase", "phase: %q is not one of creating, ready, failed, deleting", f.Phase))
		return
	}
	snaps, err := s.cfg.Store.ListSnapshots(c.Request.Context(), f)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, list(snaps))
}

func (s *server) getSnapshot(c *gin.Context) {
	snap, err := s.snapshotOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, snap)
}

// deleteSnapshot marks the snapshot deleting; the reconciler removes its
// capture from the backend and then the row.
func (s *server) deleteSnapshot(c *gin.Context) {
	snap, err := s.snapshotOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	snap, err = s.cfg.Store.MarkSnapshotDeleting(c.Request.Context(), snap.ID, "deleted by "+callerOf(c).KeyID)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("snapshot delete requested", "snapshot_id", snap.ID)
	c.JSON(http.StatusAccepted, snap)
}

// snapshotForCreate checks the snapshot a create names: the caller's
// tenant's (404 naming snapshot_id otherwise), ready or creating (400
// otherwise).
func (s *server) snapshotForCreate(c *gin.Context, id string) (*wire.Snapshot, error) {
	snap, err := s.snapshotOf(c, id)
	if err != nil {
		return nil, asRef(err, "snapshot_id", "snapshot", id)
	}
	if snap.TenantID != callerTenant(c) && !callerOf(c).admin() {
		return nil, unknownRef("snapshot_id", "snapshot", id)
	}
	if snap.Phase != wire.SnapshotReady && snap.Phase != wire.SnapshotCreating {
		return nil, errs.Field("snapshot_id", "snapshot_id: snapshot %s is %s; a workspace starts only from a ready (or creating) snapshot", id, snap.Phase)
	}
	return snap, nil
}

// templateFitsSnapshot refuses a template whose provider's backend is not
// the snapshot's: a capture starts only on its own kind of backend.
func (s *server) templateFitsSnapshot(ctx context.Context, field string, t *wire.Template, snap *wire.Snapshot) error {
	if t.ID == snap.TemplateID {
		return nil
	}
	p, err := s.cfg.Store.GetProvider(ctx, t.ProviderID)
	if err != nil {
		return errs.E(errs.KindOf(err), "template %s: provider %s: %w", t.ID, t.ProviderID, err)
	}
	if p.Provider != snap.Backend {
		return errs.Field(field, "%s: template %s runs on backend %s; snapshot %s was taken on %s", field, t.ID, p.Provider, snap.ID, snap.Backend)
	}
	return nil
}
