package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// sdkSignature is the SDKs' getSignature: "v1_" + base64 (no padding) of
// SHA-256 of "path:operation:user:token[:expiration]".
func sdkSignature(path, op, user, token string, exp int64) string {
	raw := path + ":" + op + ":" + user + ":" + token
	if exp != 0 {
		raw += ":" + strconv.FormatInt(exp, 10)
	}
	sum := sha256.Sum256([]byte(raw))
	return "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// TestE2BSignedFiles: a presigned /files URL (Sandbox.uploadUrl,
// downloadUrl: at the host's root, no sandbox header) reaches the sandbox
// whose token signed it, for its operation only, until it expires or the
// sandbox is killed; anything else is 401 and names no sandbox.
func TestE2BSignedFiles(t *testing.T) {
	h := newHarness(t)
	h.expectColdStart()
	var sb e2bSandbox
	h.e2b(h.adminKey, "POST", "/v2/sandboxes", jsCreateBody).expect(t, 201).decode(t, &sb)
	h.workspace(wire.PhaseRunning) // another live sandbox, tried too

	signed := func(method, path, user, op string, exp int64, tok string) response {
		q := url.Values{"path": {path}, "signature": {sdkSignature(path, op, user, tok, exp)}}
		if user != "" {
			q.Set("username", user)
		}
		if exp != 0 {
			q.Set("signature_expiration", strconv.FormatInt(exp, 10))
		}
		return h.do(method, "/files?"+q.Encode(), "", "Authorization", "")
	}
	future, past := time.Now().Add(time.Hour).Unix(), time.Now().Add(-time.Minute).Unix()
	tok := sb.EnvdAccessToken
	// Routed to the sandbox: the harness's placeholder in-sandbox API
	// answers 501.
	for _, r := range []response{
		signed("GET", "/home/user/a.txt", "", "read", 0, tok),
		signed("POST", "a.txt", "root", "write", future, tok),
	} {
		if r.status != http.StatusNotImplemented {
			t.Fatalf("a signed URL: status %d %s, want it routed to the sandbox", r.status, r.body)
		}
	}
	tests := []struct {
		name   string
		r      response
		status int
		msg    string
	}{
		{"write signature used to read", signed("GET", "a.txt", "", "write", 0, tok), 401, "matches no"},
		{"another token", signed("GET", "a.txt", "", "read", 0, tok+"0"), 401, "matches no"},
		{"expired", signed("GET", "a.txt", "", "read", past, tok), 401, "expired"},
		{"no signature", h.do("GET", "/files?path=a.txt", "", "Authorization", ""), 401, "presigned"},
		{"other method", signed("PUT", "a.txt", "", "write", 0, tok), 405, "PUT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.r.e2bError(t, tt.status, tt.msg) })
	}
	// A killed sandbox's URLs stop working.
	if err := h.store.SetWorkspacePhase(context.Background(), sb.SandboxID, wire.PhaseTerminating, "deleted by user"); err != nil {
		t.Fatal(err)
	}
	signed("GET", "/home/user/a.txt", "", "read", 0, tok).e2bError(t, 401, "matches no")
}
