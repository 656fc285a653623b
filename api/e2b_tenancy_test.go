package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/primerhq/primer/api/e2b"
	"github.com/primerhq/primer/models"
)

// TestTenancyE2BRouteMatrix runs every REST route of the E2B door
// (enumerated by e2b.Routes, so a new one cannot skip it) as the /v1 matrix
// does: bad keys in X-API-KEY are 401, a viewer's write is 403, and another
// tenant's member on tenant A's sandbox (or naming A's template in a
// create) gets exactly the answer an unknown id gets, a 404. Tenant B's
// lists never show A's sandbox.
func TestTenancyE2BRouteMatrix(t *testing.T) {
	h := tenancyHarness(t)
	fx := newTenancyFixture(h)
	wsA, wsU := fx.ids["workspaces"], fx.unknown["workspaces"]
	tmplA, tmplU := fx.ids["templates"], fx.unknown["templates"]
	bodies := map[string]string{
		"POST /sandboxes":                 `{"templateID":"` + tmplA + `","timeout":60}`,
		"POST /v2/sandboxes":              `{"templateID":"` + tmplA + `","timeout":60}`,
		"POST /sandboxes/{id}/timeout":    `{"timeout":60}`,
		"POST /sandboxes/{id}/connect":    `{"timeout":60}`,
		"POST /v2/sandboxes/{id}/connect": `{"timeout":60}`,
		"POST /sandboxes/{id}/pause":      `{}`,
	}
	// X-API-KEY forms of the bad keys (the /v1 matrix's, without the
	// Bearer scheme), and e2b_ forms of the wrong and revoked ones.
	var bad []badKey
	for _, k := range fx.badKeys {
		if key, ok := strings.CutPrefix(k.header, "Bearer "); ok || k.header == "" {
			bad = append(bad, badKey{k.name, key})
			if ek, ok := models.E2BKey(key); ok {
				bad = append(bad, badKey{k.name + " (e2b_ form)", ek})
			}
		}
	}
	bad = append(bad, badKey{"malformed e2b_ key", "e2b_0123"})

	send := func(key, method, path, body string) reply {
		t.Helper()
		r := h.e2b(key, method, path, body)
		var e e2bErr
		out := reply{status: r.status, body: string(r.body)}
		if r.status >= 400 {
			r.decode(t, &e)
			if e.Code != r.status {
				t.Errorf("%s %s: body code %d, status %d", method, path, e.Code, r.status)
			}
			out.code, out.msg = http.StatusText(e.Code), e.Message
		}
		return out
	}
	for _, rt := range e2b.Routes() {
		method, pattern, _ := strings.Cut(rt, " ")
		path := strings.ReplaceAll(pattern, "{id}", wsA)
		upath := strings.ReplaceAll(pattern, "{id}", wsU)
		body, hasBody := bodies[rt]
		write := method != http.MethodGet
		if write && method != http.MethodDelete && !hasBody {
			t.Errorf("%s: no body in the matrix; add a valid one", rt)
			continue
		}
		for _, k := range bad {
			if r := send(k.header, method, path, body); r.status != http.StatusUnauthorized {
				t.Errorf("%s: %s: status %d (%s), want 401", rt, k.name, r.status, r.msg)
			}
		}
		if write {
			if r := send(fx.viewerB, method, path, body); r.status != http.StatusForbidden {
				t.Errorf("%s: viewer write: status %d (%s), want 403", rt, r.status, r.msg)
			}
		}
		switch {
		case strings.Contains(pattern, "{id}"):
			r := send(fx.memberB, method, path, body)
			u := send(fx.memberB, method, upath, body)
			checkHidden(func(route, f string, a ...any) { t.Errorf(route+": "+f, a...) }, rt, "tenant B on A's sandbox", r, wsA, u, wsU)
		case method == http.MethodPost:
			r := send(fx.memberB, method, path, body)
			u := send(fx.memberB, method, path, strings.ReplaceAll(body, tmplA, tmplU))
			checkHidden(func(route, f string, a ...any) { t.Errorf(route+": "+f, a...) }, rt, "tenant B's create naming A's template", r, tmplA, u, tmplU)
		default:
			r := send(fx.memberB, method, path, "")
			if r.status != http.StatusOK || strings.Contains(r.body, wsA) {
				t.Errorf("%s: tenant B's list: status %d, shows A's sandbox: %v", rt, r.status, strings.Contains(r.body, wsA))
			}
		}
	}
	// The envd router: B holds no token for A's sandbox; a guess is 401.
	r := h.e2b("", "GET", "/envd/health", "", "E2b-Sandbox-Id", wsA, "X-Access-Token", "e2bat_"+strings.Repeat("0", 64))
	if r.status != http.StatusUnauthorized {
		t.Errorf("envd with a guessed token: status %d %s", r.status, r.body)
	}
}
