package e2b

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// SignedFilesPath is where the SDKs send a presigned file URL
// (Sandbox.uploadUrl, downloadUrl): /files at the root of the sandbox URL's
// host, since they build it as new URL("/files", E2B_SANDBOX_URL). The API
// mounts ServeSignedFiles there.
const SignedFilesPath = "/files"

// signatureVersion prefixes an envd URL signature.
const signatureVersion = "v1_"

// ServeSignedFiles serves a presigned /files URL. It carries no sandbox id
// and no header, only the path, the user, the operation's signature and
// its optional expiry: the signature is envd's, "v1_" + base64 of
// SHA-256("path:operation:user:token[:expiry]") under the sandbox's access
// token, so the sandbox is the live one whose token makes it. Every live
// sandbox's token is derived (an HMAC, nothing read per sandbox but its id)
// and tried, in constant time each; a URL whose signature matches none, or
// has expired, is 401 and says nothing of any sandbox. A match is served
// as the sandbox's own /files (download on GET, upload on POST), so a
// killed sandbox's URLs stop working with it.
func (d *Door) ServeSignedFiles(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	var op string
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		op = "read"
	case http.MethodPost:
		op = "write"
	default:
		w.Header().Set("Allow", "GET, POST")
		writeJSON(w, http.StatusMethodNotAllowed, apiError{Code: http.StatusMethodNotAllowed,
			Message: "files: method " + r.Method + " not allowed; use GET (download) or POST (upload)"})
		return
	}
	sig := q.Get("signature")
	if !strings.HasPrefix(sig, signatureVersion) {
		d.fail(w, errs.E(errs.Unauthenticated, "files: a presigned URL needs its signature (Sandbox.uploadUrl, downloadUrl); other calls go to %s with the sandbox's headers", "/e2b"+envdPrefix+"/files"))
		return
	}
	suffix := ""
	if exp := q.Get("signature_expiration"); exp != "" {
		at, err := strconv.ParseInt(exp, 10, 64)
		if err != nil {
			d.fail(w, errs.E(errs.Unauthenticated, "files: signature_expiration %q is not a Unix time", exp))
			return
		}
		if time.Now().Unix() > at {
			d.fail(w, errs.E(errs.Unauthenticated, "files: the signed URL expired at %s", time.Unix(at, 0).UTC().Format(time.RFC3339)))
			return
		}
		suffix = ":" + exp
	}
	ws, err := d.signedBy(r, sig, q.Get("path")+":"+op+":"+q.Get("username")+":", suffix)
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
	sreq.URL.Path, sreq.URL.RawPath = "/files", ""
	d.cfg.Envd.ServeEnvd(w, sreq, ws)
}

// signedBy finds the live sandbox whose access token signs
// prefix+token+suffix as sig.
func (d *Door) signedBy(r *http.Request, sig, prefix, suffix string) (*wire.Workspace, error) {
	ctx := r.Context()
	// Only running sandboxes serve files: the others need no signature
	// tried (and the scan of an unauthenticated request stays as small as
	// the platform's running set).
	live, err := d.cfg.Store.ListWorkspaces(ctx, models.WorkspaceFilter{Phase: wire.PhaseRunning})
	if err != nil {
		return nil, err
	}
	var found *wire.Workspace
	for i := range live {
		ws := &live[i]
		if gone(ws) {
			continue
		}
		tok, err := d.accessToken(ctx, ws.ID)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256([]byte(prefix + tok + suffix))
		want := signatureVersion + base64.RawStdEncoding.EncodeToString(sum[:])
		if subtle.ConstantTimeCompare([]byte(sig), []byte(want)) == 1 && found == nil {
			found = ws
		}
	}
	if found == nil {
		return nil, errs.E(errs.Unauthenticated, "files: the signature matches no live sandbox's access token for this path, user and operation")
	}
	return found, nil
}
