package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// maxKeyName bounds a key's name (the column's size).
const maxKeyName = 200

// parseKeyTTL reads a Go duration, or a whole number of days as "30d".
func parseKeyTTL(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, errs.Field("ttl", "ttl: %q: want a duration such as 720h or 30d", v)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errs.Field("ttl", "ttl: %q: want a duration such as 720h or 30d", v)
	}
	return d, nil
}

// createAPIKey makes a key. An admin may make any key for any tenant; a
// member only member and viewer keys for its own tenant (another tenant is
// not found, an admin key forbidden); a viewer none (the middleware's 403).
// The new key is the calling key's child (unless an admin asks for a root):
// an expiry after the caller's is 400, none takes the caller's.
func (s *server) createAPIKey(c *gin.Context) {
	var req wire.CreateAPIKeyRequest
	if err := s.decodeJSON(c, &req, "", false); err != nil {
		s.fail(c, err)
		return
	}
	p := callerOf(c)
	if req.TenantID == "" {
		req.TenantID = p.TenantID
	}
	if !s.visibleTenant(c, req.TenantID) {
		return
	}
	switch {
	case req.Role == "":
		s.fail(c, errs.Field("role", "role: required (admin, member or viewer)"))
		return
	case req.Role == wire.RoleAdmin && !p.admin():
		s.fail(c, errs.E(errs.Forbidden, "api key: role admin: only an admin key may create one"))
		return
	case req.Root && !p.admin():
		s.fail(c, errs.E(errs.Forbidden, "api key: root: only an admin key may create a key that outlives it"))
		return
	case len(req.Name) > maxKeyName:
		s.fail(c, errs.Field("name", "name: %d characters is over the limit of %d", len(req.Name), maxKeyName))
		return
	case !keyNamePrintable(req.Name):
		s.fail(c, errs.Field("name", "name: control and formatting characters are not allowed"))
		return
	case req.ExpiresAt != nil && req.TTL != "":
		s.fail(c, errs.Field("ttl", "ttl: give expires_at or ttl, not both"))
		return
	}
	now := time.Now()
	expires := req.ExpiresAt
	if req.TTL != "" {
		d, err := parseKeyTTL(req.TTL)
		if err != nil {
			s.fail(c, err)
			return
		}
		if d <= 0 {
			s.fail(c, errs.Field("ttl", "ttl: %s: must be positive", req.TTL))
			return
		}
		at := now.Add(d)
		expires = &at
	}
	if expires != nil && !expires.After(now) {
		s.fail(c, errs.Field("expires_at", "expires_at: %s is not in the future", expires.UTC().Format(time.RFC3339)))
		return
	}
	id, key, hash := models.NewAPIKey()
	k := &wire.APIKey{ID: id, TenantID: req.TenantID, Role: req.Role, Name: req.Name, Hash: hash, CreatedBy: p.KeyID, ExpiresAt: expires}
	if !req.Root {
		k.ParentID = p.KeyID
	}
	if err := s.cfg.Store.CreateAPIKey(c.Request.Context(), k); err != nil {
		s.fail(c, err)
		return
	}
	auditResource(c, "apikeys/"+id)
	s.log.Info("api key created", "key_id", id, "tenant_id", k.TenantID, "role", k.Role, "created_by", p.KeyID, "parent_id", k.ParentID)
	c.Header("Location", "/v1/apikeys/"+id)
	// The response must not be cached anywhere: it holds the key.
	c.Header("Cache-Control", "no-store")
	e2bKey, _ := models.E2BKey(key)
	c.JSON(http.StatusCreated, wire.CreatedAPIKey{APIKey: *k, Key: key, E2BKey: e2bKey})
}

// keyNamePrintable reports whether name has no control or formatting character
// (terminal escapes, bidi overrides, NUL): names are printed in tables and
// logs as they are.
func keyNamePrintable(name string) bool {
	if !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	return true
}

// listAPIKeys answers an admin's every key (or ?tenant=), anyone else's
// own tenant's. Never the hashes. ?tree=1 answers the same keys as a key
// tree, depth first, each with its depth.
func (s *server) listAPIKeys(c *gin.Context) {
	tree := boolQuery(c, "tree")
	ks, err := s.cfg.Store.ListAPIKeys(c.Request.Context(), listTenant(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	if tree {
		c.JSON(http.StatusOK, list(models.KeyTree(ks)))
		return
	}
	c.JSON(http.StatusOK, list(ks))
}

// visibleKey returns the key of the path if the caller may see it; another
// tenant's key is not found, as an unknown one.
func (s *server) visibleKey(c *gin.Context) (*wire.APIKey, bool) {
	id := c.Param("id")
	k, err := s.cfg.Store.GetAPIKey(c.Request.Context(), id)
	if err == nil && !visible(c, k.TenantID) {
		err = errs.E(errs.NotFound, "api key %s: not found", id)
	}
	if err != nil {
		s.fail(c, err)
		return nil, false
	}
	return k, true
}

func (s *server) getAPIKey(c *gin.Context) {
	if k, ok := s.visibleKey(c); ok {
		c.JSON(http.StatusOK, k)
	}
}

// revokeAPIKey answers POST /v1/apikeys/:id/revoke and DELETE
// /v1/apikeys/:id: the key and every key minted under it stop working at
// once, their rows stay (the audit log names them). A member may revoke its
// tenant's member and viewer keys, its own included; an admin any key.
func (s *server) revokeAPIKey(c *gin.Context) {
	k, ok := s.visibleKey(c)
	if !ok {
		return
	}
	if k.Role == wire.RoleAdmin && !callerOf(c).admin() {
		s.fail(c, errs.E(errs.Forbidden, "api key %s: role admin: only an admin key may revoke it", k.ID))
		return
	}
	k, below, err := s.cfg.Store.RevokeAPIKey(c.Request.Context(), k.ID)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("api key revoked", "key_id", k.ID, "tenant_id", k.TenantID, "revoked_by", callerOf(c).KeyID, "revoked_below", below)
	c.JSON(http.StatusOK, wire.RevokedAPIKey{APIKey: *k, RevokedBelow: below})
}
