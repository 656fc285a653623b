package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// adminOnly answers 403 unless the caller is an admin.
func (s *server) adminOnly(c *gin.Context, what string) bool {
	if callerOf(c).admin() {
		return true
	}
	s.fail(c, errs.E(errs.Forbidden, "%s: only an admin key may do this", what))
	return false
}

// visibleTenant answers 404 (as for an unknown id) unless the caller may
// see tenant id.
func (s *server) visibleTenant(c *gin.Context, id string) bool {
	if visible(c, id) {
		return true
	}
	s.fail(c, errs.E(errs.NotFound, "tenant %s: not found", id))
	return false
}

func (s *server) createTenant(c *gin.Context) {
	if !s.adminOnly(c, "tenants: create") {
		return
	}
	var spec wire.TenantSpec
	if err := s.decodeJSON(c, &spec, "", false); err != nil {
		s.fail(c, err)
		return
	}
	t := &wire.Tenant{ID: spec.ID, Description: spec.Description, Quota: spec.Quota}
	if err := s.cfg.Store.CreateTenant(c.Request.Context(), t); err != nil {
		s.fail(c, err)
		return
	}
	auditResource(c, "tenants/"+t.ID)
	s.log.Info("tenant created", "tenant_id", t.ID)
	c.Header("Location", "/v1/tenants/"+t.ID)
	c.JSON(http.StatusCreated, t)
}

// listTenants answers every tenant to an admin, and its own to anyone else.
func (s *server) listTenants(c *gin.Context) {
	ctx := c.Request.Context()
	p := callerOf(c)
	if !p.admin() {
		t, err := s.cfg.Store.GetTenant(ctx, p.TenantID)
		if err != nil {
			s.fail(c, err)
			return
		}
		c.JSON(http.StatusOK, list([]wire.Tenant{*t}))
		return
	}
	ts, err := s.cfg.Store.ListTenants(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, list(ts))
}

func (s *server) getTenant(c *gin.Context) {
	id := c.Param("id")
	if !s.visibleTenant(c, id) {
		return
	}
	ctx := c.Request.Context()
	t, err := s.cfg.Store.GetTenant(ctx, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	u, err := s.cfg.Store.TenantUsage(ctx, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.TenantInfo{Tenant: *t, Usage: u})
}

func (s *server) updateTenant(c *gin.Context) {
	id := c.Param("id")
	if !s.visibleTenant(c, id) || !s.adminOnly(c, "tenant "+id+": update") {
		return
	}
	var spec wire.TenantSpec
	if err := s.decodeJSON(c, &spec, "", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := pathID(c, "id", &spec.ID); err != nil {
		s.fail(c, err)
		return
	}
	t, err := s.cfg.Store.UpdateTenant(c.Request.Context(), &wire.Tenant{ID: id, Description: spec.Description, Quota: spec.Quota})
	if err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("tenant updated", "tenant_id", id)
	c.JSON(http.StatusOK, t)
}

func (s *server) deleteTenant(c *gin.Context) {
	id := c.Param("id")
	if !s.visibleTenant(c, id) || !s.adminOnly(c, "tenant "+id+": delete") {
		return
	}
	if err := s.cfg.Store.DeleteTenant(c.Request.Context(), id); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("tenant deleted", "tenant_id", id)
	c.Status(http.StatusNoContent)
}
