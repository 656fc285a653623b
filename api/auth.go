package api

import (
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
)

// authenticate resolves the request's bearer key to a principal, or answers
// 401. A read (GET, HEAD) needs any role; anything else needs member or
// admin, so a viewer's write is 403. With Config.OpenAccess every request
// is the default tenant's admin (tests and benchmarks only).
func (s *server) authenticate(c *gin.Context) {
	if s.cfg.OpenAccess {
		c.Set(principalKey, principal{TenantID: models.DefaultTenantID, Role: models.RoleAdmin})
		c.Next()
		return
	}
	p, err := s.resolveKey(c)
	if err != nil {
		c.Header("WWW-Authenticate", `Bearer realm="primer"`)
		s.fail(c, err)
		return
	}
	c.Set(principalKey, p)
	if p.Role == models.RoleViewer && !readOnly(c.Request.Method) {
		s.fail(c, errs.E(errs.Forbidden, "api key %s: role viewer is read only", p.KeyID))
		return
	}
	c.Next()
}

// readOnly reports whether method only reads.
func readOnly(method string) bool {
	return method == http.MethodGet || method == http.MethodHead
}

// resolveKey checks the Authorization header against the stored keys. Every
// failure is Unauthenticated with a message that never echoes the key.
func (s *server) resolveKey(c *gin.Context) (principal, error) {
	h := c.GetHeader("Authorization")
	if h == "" {
		return principal{}, errs.E(errs.Unauthenticated, "authorization: missing; send Authorization: Bearer <api key>")
	}
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		return principal{}, errs.E(errs.Unauthenticated, "authorization: want Bearer <api key>")
	}
	key = strings.TrimSpace(key)
	id, err := models.ParseAPIKey(key)
	if err != nil {
		return principal{}, err
	}
	k, err := s.cfg.Store.GetAPIKey(c.Request.Context(), id)
	if errs.Is(err, errs.NotFound) {
		return principal{}, errs.E(errs.Unauthenticated, "api key %s: unknown", id)
	}
	if err != nil {
		return principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(models.HashAPIKey(key)), []byte(k.Hash)) != 1 {
		return principal{}, errs.E(errs.Unauthenticated, "api key %s: wrong secret", id)
	}
	now := time.Now()
	switch {
	case k.RevokedAt != nil:
		return principal{}, errs.E(errs.Unauthenticated, "api key %s: revoked", id)
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return principal{}, errs.E(errs.Unauthenticated, "api key %s: expired at %s", id, k.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return principal{KeyID: k.ID, TenantID: k.TenantID, Role: k.Role}, nil
}
