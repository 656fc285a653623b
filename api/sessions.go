package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

func (s *server) createSession(c *gin.Context) {
	var spec wire.CreateSessionRequest
	if err := s.decodeJSONLimit(c, &spec, "", false, s.cfg.MaxJSONBytes+maxInstructions); err != nil {
		s.fail(c, err)
		return
	}
	if spec.WorkspaceID == "" {
		s.fail(c, errs.Field("workspace_id", "workspace_id: required"))
		return
	}
	if len(spec.Agent) > 256 || !printable(spec.Agent) {
		s.fail(c, errs.Field("agent", "agent: must be at most 256 printable characters"))
		return
	}
	if err := validLabels("metadata", spec.Metadata); err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	w, err := s.workspaceOf(c, spec.WorkspaceID)
	if err != nil {
		s.fail(c, asRef(err, "workspace_id", "workspace", spec.WorkspaceID))
		return
	}
	if w.Phase == wire.PhaseTerminating {
		s.fail(c, errs.E(errs.Precondition, "workspace %s: terminating; no new sessions", w.ID))
		return
	}
	run := wire.RunAgentRequest{Agent: spec.Agent, Instructions: spec.Instructions}
	if spec.Instructions != "" {
		if _, err := s.checkRun(c, w, run); err != nil {
			s.fail(c, err)
			return
		}
	}
	ses := &wire.Session{
		ID: models.NewID("ses"),
		// The store sets it again from the workspace row: a session is
		// its workspace's tenant's.
		TenantID:    w.TenantID,
		WorkspaceID: w.ID,
		Agent:       spec.Agent,
		Metadata:    spec.Metadata,
		Status:      wire.SessionOpen,
	}
	if err := s.cfg.Store.CreateSession(ctx, ses); err != nil {
		if errs.Is(err, errs.NotFound) {
			// The workspace went away between the read and the insert.
			err = unknownRef("workspace_id", "workspace", spec.WorkspaceID)
		}
		s.fail(c, err)
		return
	}
	s.touch(ctx, w)
	s.log.Info("session created", "session_id", ses.ID, "workspace_id", w.ID)
	if spec.Instructions != "" {
		if _, err := s.cfg.Starter.StartSessionRun(ctx, ses, run.Agent, run.Instructions); err != nil {
			s.fail(c, err)
			return
		}
	}
	if got, err := s.cfg.Store.GetSession(ctx, ses.ID); err == nil {
		ses = got
	}
	c.Header("Location", "/v1/sessions/"+ses.ID)
	c.JSON(http.StatusCreated, ses)
}

func (s *server) listSessions(c *gin.Context) {
	f := models.SessionFilter{TenantID: listTenant(c), WorkspaceID: c.Query("workspace_id"), Status: c.Query("status")}
	if f.Status != "" && f.Status != wire.SessionOpen && f.Status != wire.SessionEnded {
		s.fail(c, errs.Field("status", "status: %q is not one of open, ended", f.Status))
		return
	}
	ss, err := s.cfg.Store.ListSessions(c.Request.Context(), f)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, list(ss))
}

func (s *server) getSession(c *gin.Context) {
	ses, err := s.sessionOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, ses)
}

func (s *server) endSession(c *gin.Context) {
	var spec wire.EndSessionRequest
	if err := s.decodeJSON(c, &spec, "", true); err != nil {
		s.fail(c, err)
		return
	}
	if spec.Reason == "" {
		spec.Reason = wire.ReasonEndedByUser
	}
	if len(spec.Reason) > 256 || !printable(spec.Reason) {
		s.fail(c, errs.Field("reason", "reason: must be at most 256 printable characters"))
		return
	}
	if _, err := s.sessionOf(c, c.Param("id")); err != nil {
		s.fail(c, err)
		return
	}
	ses, err := s.cfg.Store.EndSession(c.Request.Context(), c.Param("id"), spec.Reason)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("session ended", "session_id", ses.ID, "workspace_id", ses.WorkspaceID, "reason", ses.EndReason)
	c.JSON(http.StatusOK, ses)
}
