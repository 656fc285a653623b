package api

import (
	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/wire"
)

// principal is who a request acts as: the key that authenticated it, that
// key's tenant and its role. authenticate sets it on every /v1 request.
type principal struct {
	KeyID    string
	TenantID string
	Role     string
}

// admin reports whether the principal may act on every tenant.
func (p principal) admin() bool { return p.Role == wire.RoleAdmin }

// principalKey is where authenticate keeps the principal in the gin context.
const principalKey = "primer.principal"

// callerOf returns the request's principal. A request that reached a /v1
// handler always has one; the zero principal (no tenant, no role) sees
// nothing, so a handler mounted outside /v1 by mistake fails closed.
func callerOf(c *gin.Context) principal {
	if v, ok := c.Get(principalKey); ok {
		if p, ok := v.(principal); ok {
			return p
		}
	}
	return principal{}
}

// visible reports whether the caller may see a resource of tenant: an
// admin sees every tenant, anyone else only its own. A resource that is not
// visible is answered as not found, so its existence does not leak.
func visible(c *gin.Context, tenant string) bool {
	p := callerOf(c)
	return p.admin() || (p.TenantID != "" && p.TenantID == tenant)
}

// listTenant is the tenant a list is limited to: the caller's own, or for
// an admin the ?tenant= query parameter (empty: every tenant).
func listTenant(c *gin.Context) string {
	p := callerOf(c)
	if p.admin() {
		return c.Query("tenant")
	}
	if p.TenantID == "" {
		// Never "" (which means all) for a non-admin.
		return "\x00none"
	}
	return p.TenantID
}
