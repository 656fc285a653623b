package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/starter"
	"github.com/primerhq/primer/wire"
)

// forkWorkspace makes count workspaces from one implicit snapshot of a
// running or paused workspace, all or nothing against the tenant's quotas
// (429 and nothing made when they do not all fit).
func (s *server) forkWorkspace(c *gin.Context) {
	var spec wire.ForkRequest
	if err := s.decodeJSON(c, &spec, "", false); err != nil {
		s.fail(c, err)
		return
	}
	if spec.Count < 1 || spec.Count > wire.MaxForkCount {
		s.fail(c, errs.Field("count", "count: %d is not between 1 and %d", spec.Count, wire.MaxForkCount))
		return
	}
	if err := validLabels("labels", spec.Labels); err != nil {
		s.fail(c, err)
		return
	}
	ttl, err := parseTTL("ttl", spec.TTL)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	w, mode, err := s.captureSource(c, "forked", spec.Mode)
	if err != nil {
		s.fail(c, err)
		return
	}
	// The children are new workspaces of the parent's template: the same
	// checks as a create of it (a host template needs an admin).
	t, err := s.cfg.Store.GetTemplate(ctx, w.TemplateID)
	if err != nil {
		s.fail(c, errs.E(errs.KindOf(err), "workspace %s: template %s: %w", w.ID, w.TemplateID, err))
		return
	}
	if err := hostTemplate(c, t); err != nil {
		s.fail(c, err)
		return
	}
	if err := checkTTL(t, ttl); err != nil {
		s.fail(c, err)
		return
	}
	forked, err := s.cfg.Starter.Fork(ctx, starter.ForkSpec{Parent: w, Count: spec.Count, Mode: mode, Labels: spec.Labels,
		TTL: ttl, ByAdmin: callerOf(c).admin()})
	if err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("fork requested", "workspace_id", w.ID, "snapshot_id", forked.Snapshot.ID, "children", len(forked.Workspaces))
	c.JSON(http.StatusCreated, forked)
}
