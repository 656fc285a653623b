package api

import (
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// pauseWorkspace asks a running workspace's workflow to stop its compute,
// keeping its files; the workspace is answered as it is now.
func (s *server) pauseWorkspace(c *gin.Context) {
	var spec wire.PauseRequest
	if err := s.decodeJSON(c, &spec, "", true); err != nil {
		s.fail(c, err)
		return
	}
	mode := spec.Mode
	if mode == "" {
		mode = wire.SnapshotModeFilesystem
	}
	if mode != wire.SnapshotModeFilesystem && mode != wire.SnapshotModeFull {
		s.fail(c, errs.Field("mode", "mode: %q is not one of filesystem, full", mode))
		return
	}
	ctx := c.Request.Context()
	w, err := s.workspaceOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if w.Phase != wire.PhaseRunning {
		s.fail(c, errs.E(errs.Precondition, "workspace %s: is %s; only a running workspace can be paused", w.ID, w.Phase))
		return
	}
	caps, err := s.capabilitiesOf(ctx, w)
	if err != nil {
		s.fail(c, err)
		return
	}
	if !caps.Pause {
		s.fail(c, errs.E(errs.Invalid, "workspace %s: the %s backend cannot pause a workspace", w.ID, w.Backend))
		return
	}
	if mode == wire.SnapshotModeFull && !slices.Contains(caps.Snapshots, mode) {
		msg := "the " + w.Backend + " backend cannot pause with mode full"
		if caps.SnapshotsNote != "" {
			msg += " (" + caps.SnapshotsNote + ")"
		}
		s.fail(c, errs.Field("mode", "mode: workspace %s: %s", w.ID, msg))
		return
	}
	reason := "paused by " + callerOf(c).KeyID
	if err := s.cfg.Starter.SignalWorkspace(ctx, w, workflows.SignalPause, workflows.PauseSignal{Mode: mode, Reason: reason}); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("workspace pause requested", "workspace_id", w.ID, "mode", mode)
	c.JSON(http.StatusAccepted, w)
}

// resumeWorkspace asks a paused workspace's workflow to start it again.
func (s *server) resumeWorkspace(c *gin.Context) {
	ctx := c.Request.Context()
	w, err := s.workspaceOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if w.Phase != wire.PhasePaused {
		s.fail(c, errs.E(errs.Precondition, "workspace %s: is %s; only a paused workspace can be resumed", w.ID, w.Phase))
		return
	}
	if w.ExpireAction == wire.ExpireActionPause && w.ExpiresAt != nil && !time.Now().Before(*w.ExpiresAt) {
		// Paused at its expiry: resumed as it is, its workflow would find
		// the deadline passed and pause it again at once.
		s.fail(c, errs.E(errs.Precondition, "workspace %s: paused at its expiry (expires_at %s); extend it (POST /v1/workspaces/%s/extend) before resuming it",
			w.ID, w.ExpiresAt.UTC().Format(time.RFC3339), w.ID))
		return
	}
	reason := "resumed by " + callerOf(c).KeyID
	if err := s.cfg.Starter.SignalWorkspace(ctx, w, workflows.SignalResume, workflows.ResumeSignal{Reason: reason}); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("workspace resume requested", "workspace_id", w.ID)
	c.JSON(http.StatusAccepted, w)
}
