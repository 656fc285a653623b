package api

import (
	"context"
	"crypto/subtle"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// touchEvery is how often a key's last_used_at is written at most: the
// column answers "is this key still in use", which needs minutes, not
// every request.
const touchEvery = time.Minute

// authenticate resolves the request's bearer key to a principal, or answers
// 401. A read (GET, HEAD) needs any role; anything else needs member or
// admin, so a viewer's write is 403. With Config.OpenAccess every request
// is the default tenant's admin (tests and benchmarks only).
//
// Failed authentication is throttled per client address (ratelimit.go):
// once an address has used up its failures, its requests get 429 without a
// store lookup unless they carry a key that authenticated before.
func (s *server) authenticate(c *gin.Context) {
	if s.cfg.OpenAccess {
		c.Set(principalKey, principal{TenantID: wire.DefaultTenantID, Role: wire.RoleAdmin})
		c.Next()
		return
	}
	addr := c.ClientIP()
	key, err := bearerKey(c)
	if wait, report, out := s.authFails.exhausted(addr); out && (err != nil || !s.authFails.vouchedFor(models.HashAPIKey(key))) {
		if !report {
			c.Set(auditSkipKey, true)
		}
		secs := int(math.Ceil(wait.Seconds()))
		c.Header("Retry-After", strconv.Itoa(max(1, secs)))
		s.fail(c, errs.E(errs.Exhausted, "authentication: too many failed attempts from %s; retry later (in %d s)", addr, max(1, secs)))
		return
	}
	var p principal
	if err == nil {
		p, err = s.resolveKey(c.Request.Context(), key)
	}
	if err != nil {
		if errs.Is(err, errs.Unauthenticated) {
			s.authFails.fail(addr)
			c.Header("WWW-Authenticate", `Bearer realm="primer"`)
		}
		s.fail(c, err)
		return
	}
	c.Set(principalKey, p)
	if p.Role == wire.RoleViewer && !readOnly(c.Request.Method) {
		s.fail(c, errs.E(errs.Forbidden, "api key %s: role viewer is read only", p.KeyID))
		return
	}
	c.Next()
}

// readOnly reports whether method only reads.
func readOnly(method string) bool {
	return method == http.MethodGet || method == http.MethodHead
}

// bearerKey returns the key of the Authorization header, or Unauthenticated
// saying what is wrong with the header (never echoing it).
func bearerKey(c *gin.Context) (string, error) {
	h := c.GetHeader("Authorization")
	if h == "" {
		return "", errs.E(errs.Unauthenticated, "authorization: missing; send Authorization: Bearer <api key>")
	}
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		return "", errs.E(errs.Unauthenticated, "authorization: want Bearer <api key>")
	}
	return strings.TrimSpace(key), nil
}

// resolveKey checks key against the stored keys: one read of the key and
// the keys above it (the key it was minted under, up to its root), and one
// SHA-256. The key works only while every key of that chain does. Every
// failure is Unauthenticated with a message that never echoes the key.
func (s *server) resolveKey(ctx context.Context, key string) (principal, error) {
	if models.IsConsoleToken(key) {
		return s.resolveConsoleSession(ctx, key)
	}
	id, err := models.ParseAPIKey(key)
	if err != nil {
		return principal{}, err
	}
	chain, err := s.cfg.Store.APIKeyChain(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return principal{}, errs.E(errs.Unauthenticated, "api key %s: unknown", id)
	}
	if err != nil {
		return principal{}, err
	}
	k := &chain[0]
	hash := models.HashAPIKey(key)
	if subtle.ConstantTimeCompare([]byte(hash), []byte(k.Hash)) != 1 {
		return principal{}, errs.E(errs.Unauthenticated, "api key %s: wrong secret", id)
	}
	now := time.Now()
	if err := models.ChainWorks(chain, now); err != nil {
		return principal{}, err
	}
	s.authFails.vouch(hash)
	s.touchKey(k, now)
	return principal{KeyID: k.ID, TenantID: k.TenantID, Role: k.Role}, nil
}

// resolveConsoleSession resolves a console session token (the console's
// cookie, which the console sends as its bearer): the stored session acts
// as the key it was made with, only while that key's chain works and until
// the session expires (models.Store.ConsoleSession). Every failure is
// Unauthenticated, never echoing the token.
func (s *server) resolveConsoleSession(ctx context.Context, tok string) (principal, error) {
	hash := models.HashAPIKey(tok)
	cs, err := s.cfg.Store.ConsoleSession(ctx, hash)
	if errs.Is(err, errs.NotFound) {
		return principal{}, errs.E(errs.Unauthenticated, "console session: unknown, expired or ended; sign in again")
	}
	if err != nil {
		return principal{}, err
	}
	s.authFails.vouch(hash)
	return principal{KeyID: cs.KeyID, TenantID: cs.TenantID, Role: cs.Role}, nil
}

// touchKey records that k was used, at most once per touchEvery per key and
// off the request path (tracked in s.bg). keyTouched keeps concurrent
// requests with the same key from each starting a write.
func (s *server) touchKey(k *wire.APIKey, now time.Time) {
	if k.LastUsedAt != nil && now.Sub(*k.LastUsedAt) < touchEvery {
		return
	}
	if prev, loaded := s.keyTouched.LoadOrStore(k.ID, now); loaded {
		if now.Sub(prev.(time.Time)) < touchEvery || !s.keyTouched.CompareAndSwap(k.ID, prev, now) {
			return
		}
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.cfg.Store.TouchAPIKey(ctx, k.ID, now); err != nil {
			s.log.Warn("api key: record last use", "key_id", k.ID, "error", err.Error())
		}
	}()
}
