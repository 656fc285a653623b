package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// previewSecretName is the platform secret preview tokens are signed with.
const previewSecretName = "preview-links"

// previewSandboxCSP is sent with every answer served under /preview/ on
// the platform's own origin: the page runs in an opaque origin, so its
// scripts can neither read the platform's answers nor send the console's
// cookie (SameSite=Strict, and an opaque origin is another site). A
// program that needs its own origin (storage, cookies, absolute paths) is
// served on a preview host instead (Config.PreviewURL).
const previewSandboxCSP = "sandbox allow-scripts allow-forms allow-popups allow-popups-to-escape-sandbox allow-modals allow-downloads"

// previewKey is the key preview tokens are signed with (made on first
// use; the store keeps it).
func (s *server) previewKey(ctx context.Context) ([]byte, error) {
	return s.cfg.Store.PlatformSecret(ctx, previewSecretName)
}

// previewToken is the token of preview id: the id and its HMAC under the
// platform's key. Nothing of it is stored, so the store cannot give a
// link back; the row says whether the link still works.
func previewToken(key []byte, id string) string {
	return id + "." + previewSig(key, id)
}

func previewSig(key []byte, id string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("primer preview link\x00" + id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// previewID returns the preview id a token names if its signature holds.
func previewID(key []byte, token string) (string, bool) {
	id, sig, ok := strings.Cut(token, ".")
	if !ok || !strings.HasPrefix(id, "pv-") || len(id) > 64 {
		return "", false
	}
	return id, hmac.Equal([]byte(sig), []byte(previewSig(key, id)))
}

// parsePreviewTTL reads a preview's ttl: a Go duration or a number of seconds,
// from one second to wire.MaxPreviewTTL; empty is wire.DefaultPreviewTTL.
func parsePreviewTTL(raw string) (time.Duration, error) {
	if raw == "" {
		return wire.DefaultPreviewTTL, nil
	}
	var d time.Duration
	if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
		if n > int64(wire.MaxPreviewTTL/time.Second) {
			n = int64(wire.MaxPreviewTTL/time.Second) + 1
		}
		d = time.Duration(n) * time.Second
	} else if d, err = time.ParseDuration(raw); err != nil {
		return 0, errs.Field("ttl", "ttl: %q is neither a duration (like \"1h\") nor a number of seconds", raw)
	}
	if d < time.Second || d > wire.MaxPreviewTTL {
		return 0, errs.Field("ttl", "ttl: %s: want from 1s to %s", raw, wire.MaxPreviewTTL)
	}
	return d, nil
}

// previewWorkspace checks the caller of a preview route: a viewer may
// not make or revoke links (a link reaches the program as a member would),
// and a host-backend workspace is an admin's only.
func (s *server) previewWorkspace(c *gin.Context, write bool) (*wire.Workspace, error) {
	p := callerOf(c)
	if write && p.Role == wire.RoleViewer {
		return nil, errs.E(errs.Forbidden, "api key %s: role viewer may not make or revoke preview links", p.KeyID)
	}
	w, err := s.workspaceOf(c, c.Param("id"))
	if err != nil {
		return nil, err
	}
	if err := hostWorkspace(c, w); err != nil {
		return nil, err
	}
	return w, nil
}

// createPreview makes a preview link to a port of the workspace
// (POST /v1/workspaces/:id/previews). The link's URL is in this answer
// only; the audit entry names the preview, never its token.
func (s *server) createPreview(c *gin.Context) {
	var req wire.PreviewRequest
	if err := s.decodeJSON(c, &req, "", false); err != nil {
		s.fail(c, err)
		return
	}
	s.makePreview(c, req)
}

// createPortPreview makes a preview link to the port the path names
// (POST /v1/workspaces/:id/ports/:port/preview, the port proxy's one path
// it does not forward; a program's own POST /preview is reached through a
// link or a port-forward). The body is optional: {"ttl"}, and a port, if
// given, must be the path's.
func (s *server) createPortPreview(c *gin.Context) {
	port, err := strconv.Atoi(c.Param("port"))
	if err != nil || port < 1 || port > 65535 {
		s.fail(c, errs.Field("port", "port %q: want a number from 1 to 65535", c.Param("port")))
		return
	}
	var req wire.PreviewRequest
	if err := s.decodeJSON(c, &req, "", true); err != nil {
		s.fail(c, err)
		return
	}
	if req.Port != 0 && req.Port != port {
		s.fail(c, errs.Field("port", "port %d in the body is not the path's port %d", req.Port, port))
		return
	}
	req.Port = port
	s.makePreview(c, req)
}

// makePreview checks req and makes its link.
func (s *server) makePreview(c *gin.Context, req wire.PreviewRequest) {
	ctx := c.Request.Context()
	if req.Port < 1 || req.Port > 65535 {
		s.fail(c, errs.Field("port", "port %d: want a number from 1 to 65535", req.Port))
		return
	}
	ttl, err := parsePreviewTTL(req.TTL)
	if err != nil {
		s.fail(c, err)
		return
	}
	w, err := s.previewWorkspace(c, true)
	if err != nil {
		s.fail(c, err)
		return
	}
	key, err := s.previewKey(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	p := &wire.Preview{ID: models.NewID("pv"), TenantID: w.TenantID, WorkspaceID: w.ID, Port: req.Port,
		CreatedBy: callerOf(c).KeyID, ExpiresAt: time.Now().Add(ttl)}
	auditResource(c, "workspaces/"+w.ID+"/previews/"+p.ID)
	if err := s.cfg.Store.CreatePreview(ctx, p); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("preview link created", "workspace_id", w.ID, "preview_id", p.ID, "port", p.Port, "expires_at", p.ExpiresAt)
	c.JSON(http.StatusCreated, wire.PreviewLink{Preview: *p, URL: s.previewURL(c, p, previewToken(key, p.ID))})
}

// previewURL is where a browser opens preview p: on a preview host when
// one is configured, else under /preview/ on the host the caller used.
func (s *server) previewURL(c *gin.Context, p *wire.Preview, token string) string {
	if u := s.cfg.PreviewURL; u != nil {
		host := fmt.Sprintf("%d-%s.%s", p.Port, p.WorkspaceID, u.Hostname())
		if u.Port() != "" {
			host += ":" + u.Port()
		}
		return (&url.URL{Scheme: u.Scheme, Host: host, Path: "/", RawQuery: wire.PreviewQuery + "=" + url.QueryEscape(token)}).String()
	}
	scheme := "http"
	if c.Request.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.Request.Host + "/preview/" + token + "/"
}

// listPreviews lists the workspace's live preview links, without URLs
// (GET /v1/workspaces/:id/previews).
func (s *server) listPreviews(c *gin.Context) {
	w, err := s.previewWorkspace(c, false)
	if err != nil {
		s.fail(c, err)
		return
	}
	ps, err := s.cfg.Store.ListPreviews(c.Request.Context(), w.ID)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.Items[wire.Preview]{Items: ps})
}

// revokePreview ends a preview link at once
// (DELETE /v1/workspaces/:id/previews/:preview), and the requests still
// open through it (a WebSocket, a stream): here at once, in another
// platform process at its next recheck.
func (s *server) revokePreview(c *gin.Context) {
	w, err := s.previewWorkspace(c, true)
	if err != nil {
		s.fail(c, err)
		return
	}
	auditResource(c, "workspaces/"+w.ID+"/previews/"+c.Param("preview"))
	p, err := s.cfg.Store.RevokePreview(c.Request.Context(), w.ID, c.Param("preview"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := previewEnded(p, time.Now()); err != nil {
		s.previews.endPreview(p.ID, err)
	}
	s.log.Info("preview link revoked", "workspace_id", w.ID, "preview_id", p.ID)
	c.JSON(http.StatusOK, p)
}

// deadPreview is the 403 of a link that no longer opens anything.
func deadPreview(format string, a ...any) error {
	return errs.E(errs.Forbidden, "preview link: "+format, a...)
}

// previewEnded is why preview p opens nothing any more at now (revoked,
// expired), or nil while it is live.
func previewEnded(p *wire.Preview, now time.Time) error {
	switch {
	case p.RevokedAt != nil:
		return deadPreview("%s was revoked at %s", p.ID, p.RevokedAt.UTC().Format(time.RFC3339))
	case !now.Before(p.ExpiresAt):
		return previewExpired(p)
	}
	return nil
}

func previewExpired(p *wire.Preview) error {
	return deadPreview("%s expired at %s", p.ID, p.ExpiresAt.UTC().Format(time.RFC3339))
}

// previewGone is the 403 of a link whose row is gone with its workspace.
func previewGone(id string) error {
	return deadPreview("%s no longer exists (its workspace was deleted)", id)
}

// openPreview checks a token and returns its live preview and workspace.
// Every refusal is 403 saying why (not 404): the holder of a link is told
// it is dead, not that nothing was ever there.
func (s *server) openPreview(ctx context.Context, token string) (*wire.Preview, *wire.Workspace, error) {
	key, err := s.previewKey(ctx)
	if err != nil {
		return nil, nil, err
	}
	id, ok := previewID(key, token)
	if !ok {
		return nil, nil, deadPreview("not a valid link (its signature does not hold)")
	}
	p, err := s.cfg.Store.GetPreview(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return nil, nil, previewGone(id)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := previewEnded(p, time.Now()); err != nil {
		return nil, nil, err
	}
	w, err := s.cfg.Store.GetWorkspace(ctx, p.WorkspaceID)
	if errs.Is(err, errs.NotFound) || (err == nil && w.TenantID != p.TenantID) {
		return nil, nil, deadPreview("%s: workspace %s is gone", id, p.WorkspaceID)
	}
	if err != nil {
		return nil, nil, err
	}
	if w.PoolID != "" && w.PoolState != wire.PoolLeased {
		return nil, nil, deadPreview("%s: workspace %s was returned to its pool", id, w.ID)
	}
	if w.Phase == wire.PhaseTerminating {
		return nil, nil, deadPreview("%s: workspace %s is being deleted", id, w.ID)
	}
	return p, w, nil
}

// servePreview serves a preview link on the platform's host:
// /preview/:token/*path, any method the port proxy forwards, with no API
// key. The program sees the path after the token.
func (s *server) servePreview(c *gin.Context) {
	token := c.Param("token")
	if c.Param("path") == "" {
		// Relative links of the page resolve against a directory.
		c.Redirect(http.StatusFound, "/preview/"+url.PathEscape(token)+"/")
		return
	}
	p, w, err := s.openPreview(c.Request.Context(), token)
	if err != nil {
		s.fail(c, err)
		return
	}
	w, cl, err := s.runtimeOf(c.Request.Context(), w)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, release := s.holdPreview(c.Request.Context(), p)
	defer release()
	c.Request = c.Request.WithContext(ctx)
	prefix, rest := splitPath(c.Request.URL.EscapedPath(), 3)
	s.proxyTo(c, w, cl, p.Port, prefix, rest, func(h http.Header) {
		h.Set("Content-Security-Policy", previewSandboxCSP)
		// The token is in the page's address: no link the page follows
		// may carry it to another site in a Referer.
		h.Set("Referrer-Policy", "no-referrer")
	})
}

// previewHost serves requests to a preview host ({port}-{id}.{domain} of
// Config.PreviewURL) and passes every other request on. The first visit
// carries the token in the query; it becomes a cookie of that host only,
// and the browser is sent to the same URL without it, so the token is
// neither in the program's view nor in the page's address afterwards.
func (s *server) previewHost(c *gin.Context) {
	u := s.cfg.PreviewURL
	if u == nil {
		return
	}
	host := c.Request.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	label, ok := strings.CutSuffix(strings.ToLower(host), "."+strings.ToLower(u.Hostname()))
	if !ok {
		return
	}
	c.Abort()
	portText, wsID, ok := strings.Cut(label, "-")
	port, err := strconv.Atoi(portText)
	if !ok || err != nil || port < 1 || port > 65535 || !strings.HasPrefix(wsID, "ws-") {
		s.fail(c, errs.E(errs.NotFound, "preview host %s: not {port}-{workspace id}.%s", host, u.Hostname()))
		return
	}
	q := c.Request.URL.Query()
	token, first := q.Get(wire.PreviewQuery), q.Has(wire.PreviewQuery)
	if !first {
		if ck, err := c.Request.Cookie(wire.PreviewCookie); err == nil {
			token = ck.Value
		}
	}
	if token == "" {
		s.fail(c, errs.E(errs.Forbidden, "preview host %s: no preview link (open the link's URL once)", host))
		return
	}
	p, w, err := s.openPreview(c.Request.Context(), token)
	if err == nil && (p.Port != port || p.WorkspaceID != wsID) {
		err = deadPreview("%s is for port %d of %s, not this host", p.ID, p.Port, p.WorkspaceID)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	if first {
		http.SetCookie(c.Writer, &http.Cookie{Name: wire.PreviewCookie, Value: token, Path: "/",
			Expires: p.ExpiresAt, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: u.Scheme == "https"})
		q.Del(wire.PreviewQuery)
		to := *c.Request.URL
		to.RawQuery = q.Encode()
		c.Redirect(http.StatusSeeOther, to.RequestURI())
		return
	}
	w, cl, err := s.runtimeOf(c.Request.Context(), w)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, release := s.holdPreview(c.Request.Context(), p)
	defer release()
	c.Request = c.Request.WithContext(ctx)
	s.proxyTo(c, w, cl, port, "", c.Request.URL.EscapedPath(), nil)
}
