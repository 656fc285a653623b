package e2b

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/primerhq/primer/errs"
)

// Headers of an envd request: which sandbox, and its access token.
const (
	sandboxIDHeader   = "E2b-Sandbox-Id"
	accessTokenHeader = "X-Access-Token"
)

// accessTokenPrefix marks an envd access token, so one pasted in the wrong
// place is recognisable.
const accessTokenPrefix = "e2bat_"

// accessToken is the envd access token of sandbox id: an HMAC of its id
// under the platform's secret (models.Store.PlatformSecret). Nothing per
// sandbox is stored, it is not the runtime's token (nor derived from it),
// and it stops working with the sandbox: the router admits a request only
// for a workspace that exists and is not being deleted, and workspace ids
// are never reused.
func (d *Door) accessToken(ctx context.Context, id string) (string, error) {
	key, err := d.tokenSecret(ctx)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("e2b envd access token\x00" + id))
	return accessTokenPrefix + hex.EncodeToString(m.Sum(nil)), nil
}

// serveEnvd routes an envd request by its E2b-Sandbox-Id to the sandbox's
// in-sandbox API, once its X-Access-Token proves the caller was handed the
// sandbox by a create or a connect. The token is checked first, from the id
// alone (it is an HMAC of it), so a caller without a sandbox's token learns
// nothing about it: an id that names no sandbox and one that names
// another's get the same 401, in the same time (no read). Only a caller
// with the right token is told the sandbox is gone (404: killed, or being
// killed). Refusals use E2B's error body and never echo the token.
func (d *Door) serveEnvd(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := strings.TrimSpace(r.Header.Get(sandboxIDHeader))
	if id == "" {
		d.fail(w, errs.E(errs.Invalid, "envd: header %s: missing; it names the sandbox", sandboxIDHeader))
		return
	}
	got := r.Header.Get(accessTokenHeader)
	if got == "" {
		d.fail(w, errs.E(errs.Unauthenticated, "envd: sandbox %s: header %s: missing; send the envdAccessToken of the create or connect", id, accessTokenHeader))
		return
	}
	want, err := d.accessToken(ctx, id)
	if err != nil {
		d.fail(w, err)
		return
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		d.fail(w, errs.E(errs.Unauthenticated, "envd: sandbox %s: wrong access token", id))
		return
	}
	ws, err := d.cfg.Store.GetWorkspace(ctx, id)
	if errs.Is(err, errs.NotFound) || (err == nil && gone(ws)) {
		d.fail(w, notFound(id))
		return
	}
	if err != nil {
		d.fail(w, err)
		return
	}
	if d.cfg.Envd == nil {
		writeJSON(w, http.StatusNotImplemented, apiError{Code: http.StatusNotImplemented,
			Message: "envd: the in-sandbox API is not served by this Primer yet"})
		return
	}
	sreq := r.Clone(ctx)
	sreq.URL.Path = strings.TrimPrefix(r.URL.Path, envdPrefix)
	if sreq.URL.RawPath != "" {
		sreq.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, envdPrefix)
	}
	if sreq.URL.Path == "" {
		sreq.URL.Path = "/"
	}
	// The token has done its work; the in-sandbox API never sees it.
	sreq.Header.Del(accessTokenHeader)
	d.cfg.Envd.ServeEnvd(w, sreq, ws)
}
