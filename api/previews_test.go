package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// createPreview makes a preview link as key and returns it.
func (h *harness) createPreview(wsID, key string, body string) wire.PreviewLink {
	h.t.Helper()
	res := h.do(http.MethodPost, "/v1/workspaces/"+wsID+"/previews", body, "Authorization", "Bearer "+key)
	if res.status != http.StatusCreated {
		h.t.Fatalf("create preview: status %d: %s", res.status, res.body)
	}
	var link wire.PreviewLink
	res.decode(h.t, &link)
	return link
}

// previewGet opens a preview URL with no key, as a browser would.
func previewGet(t *testing.T, u string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// TestPreviewLinks: a preview link opens the program with no key (path,
// SSE-free request and a WebSocket), sandboxed on the platform's origin
// and without the console's cookie; revoked, expired, forged and deleted
// workspace's links are 403 saying why; the token is in no log line and
// no audit entry.
func TestPreviewLinks(t *testing.T) {
	logs := &lockedBuffer{}
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	w, _ := h.runningWorkspace()
	d := startDevServer(t)
	link := h.createPreview(w.ID, h.adminKey, fmt.Sprintf(`{"port":%d,"ttl":"1h"}`, d.port))
	token := strings.TrimSuffix(strings.TrimPrefix(link.URL, h.url+"/preview/"), "/")
	if !strings.HasPrefix(link.URL, h.url+"/preview/") || !strings.HasPrefix(token, link.ID+".") || link.Port != d.port ||
		time.Until(link.ExpiresAt) < 59*time.Minute || time.Until(link.ExpiresAt) > time.Hour+time.Minute {
		t.Fatalf("link %+v", link)
	}

	t.Run("opens with no key", func(t *testing.T) {
		res := previewGet(t, link.URL+"echo/a%2Fb?x=1", "Cookie", wire.ConsoleCookie+"=secret-session; theme=dark")
		if res.status != http.StatusOK {
			t.Fatalf("status %d: %s", res.status, res.body)
		}
		var got seen
		res.decode(t, &got)
		if got.Path != "/echo/a/b" || got.RawPath != "/echo/a%2Fb" || got.Query != "x=1" || got.Cookie != "theme=dark" ||
			got.Authorization != "" || got.Prefix != "/preview/"+token {
			t.Errorf("the program saw %+v", got)
		}
		if csp := res.header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox ") || strings.Contains(csp, "allow-same-origin") {
			t.Errorf("Content-Security-Policy %q: want a sandbox without allow-same-origin", csp)
		}
		if sc := res.header.Values("Set-Cookie"); len(sc) != 1 || sc[0] != "app=1; Path=/" {
			t.Errorf("Set-Cookie %q, want only the program's own", sc)
		}
		if rp := res.header.Get("Referrer-Policy"); rp != "no-referrer" {
			t.Errorf("Referrer-Policy %q, want no-referrer (the token is in the address)", rp)
		}
		// Without the trailing slash, the link's directory is where
		// relative paths resolve.
		if res := previewGet(t, strings.TrimSuffix(link.URL, "/")); res.status != http.StatusFound || res.header.Get("Location") != "/preview/"+token+"/" {
			t.Errorf("link without slash: %d to %q", res.status, res.header.Get("Location"))
		}
	})

	t.Run("made at the port's own path", func(t *testing.T) {
		// POST /ports/{port}/preview makes a link instead of reaching the
		// program; the body is optional.
		for _, body := range []any{nil, `{"ttl":"30m"}`} {
			res := h.do(http.MethodPost, fmt.Sprintf("/v1/workspaces/%s/ports/%d/preview", w.ID, d.port), body, "Authorization", "Bearer "+h.adminKey)
			if res.status != http.StatusCreated {
				t.Fatalf("body %v: status %d: %s", body, res.status, res.body)
			}
			var l wire.PreviewLink
			res.decode(t, &l)
			if l.Port != d.port || l.ID == link.ID || !strings.HasPrefix(l.URL, h.url+"/preview/"+l.ID+".") {
				t.Fatalf("link %+v", l)
			}
			if body != nil && time.Until(l.ExpiresAt) > 31*time.Minute {
				t.Errorf("ttl 30m: expires at %s", l.ExpiresAt)
			}
			if res := previewGet(t, l.URL+"echo/x"); res.status != http.StatusOK {
				t.Fatalf("open %s: status %d: %s", l.URL, res.status, res.body)
			}
			if res := h.do(http.MethodDelete, "/v1/workspaces/"+w.ID+"/previews/"+l.ID, nil, "Authorization", "Bearer "+h.adminKey); res.status != http.StatusOK {
				t.Fatalf("revoke %s: status %d: %s", l.ID, res.status, res.body)
			}
		}
	})

	t.Run("websocket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(link.URL, "http")+"ws", nil)
		if err != nil {
			t.Fatalf("websocket through a preview link: %v", err)
		}
		defer c.CloseNow()
		if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
			t.Fatal(err)
		}
		if _, b, err := c.Read(ctx); err != nil || string(b) != "echo:hi" {
			t.Fatalf("read %q (%v)", b, err)
		}
		_ = c.Close(websocket.StatusNormalClosure, "")
	})

	t.Run("listed without its url", func(t *testing.T) {
		res := h.do(http.MethodGet, "/v1/workspaces/"+w.ID+"/previews", nil)
		var list wire.Items[wire.Preview]
		res.decode(t, &list)
		if len(list.Items) != 1 || list.Items[0].ID != link.ID || strings.Contains(string(res.body), token) {
			t.Errorf("list %s", res.body)
		}
	})

	t.Run("forged", func(t *testing.T) {
		forged := link.ID + ".AAAA" + token[len(link.ID)+5:]
		previewGet(t, h.url+"/preview/"+forged+"/echo/").expectError(t, http.StatusForbidden, "forbidden", "", "signature does not hold")
	})

	t.Run("expired", func(t *testing.T) {
		key, err := h.srv.previewKey(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p := &wire.Preview{ID: models.NewID("pv"), WorkspaceID: w.ID, Port: d.port, ExpiresAt: time.Now().Add(-time.Second)}
		if err := h.store.CreatePreview(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		previewGet(t, h.url+"/preview/"+previewToken(key, p.ID)+"/echo/").expectError(t, http.StatusForbidden, "forbidden", "", p.ID+" expired at")
	})

	t.Run("revoked", func(t *testing.T) {
		other := h.createPreview(w.ID, h.adminKey, fmt.Sprintf(`{"port":%d,"ttl":60}`, d.port))
		res := h.do(http.MethodDelete, "/v1/workspaces/"+w.ID+"/previews/"+other.ID, nil)
		var p wire.Preview
		res.decode(t, &p)
		if res.status != http.StatusOK || p.RevokedAt == nil {
			t.Fatalf("revoke: %d %s", res.status, res.body)
		}
		previewGet(t, other.URL+"echo/").expectError(t, http.StatusForbidden, "forbidden", "", other.ID+" was revoked at")
		// The first link is untouched.
		if res := previewGet(t, link.URL+"echo/"); res.status != http.StatusOK {
			t.Errorf("the other link after a revoke: %d %s", res.status, res.body)
		}
	})

	t.Run("workspace deleted", func(t *testing.T) {
		hits := d.hits.Load()
		if err := h.store.DeleteWorkspace(context.Background(), w.ID); err != nil {
			t.Fatal(err)
		}
		previewGet(t, link.URL+"echo/").expectError(t, http.StatusForbidden, "forbidden", "", "no longer exists")
		if n := d.hits.Load() - hits; n != 0 {
			t.Errorf("the program answered %d requests of dead links", n)
		}
	})

	if strings.Contains(logs.String(), token) || !strings.Contains(logs.String(), "/preview/"+link.ID) && !strings.Contains(logs.String(), "/preview/-") {
		t.Errorf("the log shows the token or no preview request at all:\n%s", logs.String())
	}
	entries, err := h.store.ListAudit(context.Background(), models.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(entries)
	if strings.Contains(string(raw), token) || !strings.Contains(string(raw), "previews/"+link.ID) {
		t.Errorf("audit entries show the token or not the preview: %s", raw)
	}
}

// TestPreviewRefusals: who may make, list and revoke links, and what a
// link may ask for.
func TestPreviewRefusals(t *testing.T) {
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	if err := h.store.CreateTenant(context.Background(), &wire.Tenant{ID: "bravo"}); err != nil {
		t.Fatal(err)
	}
	other := h.newKey("bravo", wire.RoleMember)
	viewer := h.newKey(wire.DefaultTenantID, wire.RoleViewer)
	member := h.newKey(wire.DefaultTenantID, wire.RoleMember)
	link := h.createPreview(w.ID, h.adminKey, `{"port":8080}`)
	if d := time.Until(link.ExpiresAt); d < 59*time.Minute || d > time.Hour+time.Minute {
		t.Errorf("default ttl: expires in %s, want an hour", d)
	}
	create := "/v1/workspaces/" + w.ID + "/previews"
	revoke := create + "/" + link.ID
	for _, tc := range []struct {
		name, method, path, key, body string
		status                        int
		code, msg                     string
	}{
		{"no key", http.MethodPost, create, "", `{"port":8080}`, 401, "unauthenticated", ""},
		{"another tenant", http.MethodPost, create, other, `{"port":8080}`, 404, "not_found", "workspace " + w.ID + ": not found"},
		{"another tenant lists", http.MethodGet, create, other, "", 404, "not_found", "workspace " + w.ID + ": not found"},
		{"another tenant revokes", http.MethodDelete, revoke, other, "", 404, "not_found", "workspace " + w.ID + ": not found"},
		{"viewer", http.MethodPost, create, viewer, `{"port":8080}`, 403, "forbidden", "role viewer is read only"},
		{"viewer revokes", http.MethodDelete, revoke, viewer, "", 403, "forbidden", "role viewer is read only"},
		{"member on a host backend", http.MethodPost, create, member, `{"port":8080}`, 403, "forbidden", "only an admin"},
		{"port zero", http.MethodPost, create, h.adminKey, `{"port":0}`, 400, "invalid", "want a number from 1 to 65535"},
		{"ttl too long", http.MethodPost, create, h.adminKey, `{"port":8080,"ttl":"1000h"}`, 400, "invalid", "want from 1s to"},
		{"ttl seconds too long", http.MethodPost, create, h.adminKey, `{"port":8080,"ttl":99999999999}`, 400, "invalid", "want from 1s to"},
		{"ttl not a duration", http.MethodPost, create, h.adminKey, `{"port":8080,"ttl":"soon"}`, 400, "invalid", "neither a duration"},
		{"port path: another tenant", http.MethodPost, "/v1/workspaces/" + w.ID + "/ports/8080/preview", other, "", 404, "not_found", "workspace " + w.ID + ": not found"},
		{"port path: viewer", http.MethodPost, "/v1/workspaces/" + w.ID + "/ports/8080/preview", viewer, "", 403, "forbidden", ""},
		{"port path: no key", http.MethodPost, "/v1/workspaces/" + w.ID + "/ports/8080/preview", "", "", 401, "unauthenticated", ""},
		{"port path: another port in the body", http.MethodPost, "/v1/workspaces/" + w.ID + "/ports/8080/preview", h.adminKey, `{"port":9090}`, 400, "invalid", "is not the path's port 8080"},
		{"port path: bad port", http.MethodPost, "/v1/workspaces/" + w.ID + "/ports/0/preview", h.adminKey, "", 400, "invalid", "want a number from 1 to 65535"},
		{"unknown preview", http.MethodDelete, create + "/pv-0000000000000000", h.adminKey, "", 404, "not_found", "preview pv-0000000000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth := ""
			if tc.key != "" {
				auth = "Bearer " + tc.key
			}
			var body any
			if tc.body != "" {
				body = tc.body
			}
			h.do(tc.method, tc.path, body, "Authorization", auth).expectError(t, tc.status, tc.code, "", tc.msg)
		})
	}
	// Nothing was revoked by the refused calls.
	if p, err := h.store.GetPreview(context.Background(), link.ID); err != nil || p.RevokedAt != nil {
		t.Errorf("link after refused revokes: %+v (%v)", p, err)
	}
}

// TestPreviewHost: on a preview host the first visit swaps the token in
// the query for a cookie of that host and redirects to the same URL
// without it; with the cookie the program sees its own absolute paths,
// no token and no prefix; the cookie of one port's link opens no other.
func TestPreviewHost(t *testing.T) {
	base, _ := url.Parse("http://preview.test")
	h := newHarness(t, func(c *Config) { c.PreviewURL = base })
	w, _ := h.runningWorkspace()
	d := startDevServer(t)
	link := h.createPreview(w.ID, h.adminKey, fmt.Sprintf(`{"port":%d}`, d.port))
	u, err := url.Parse(link.URL)
	if err != nil || u.Host != fmt.Sprintf("%d-%s.preview.test", d.port, w.ID) || u.Query().Get(wire.PreviewQuery) == "" {
		t.Fatalf("link url %q (%v)", link.URL, err)
	}
	token := u.Query().Get(wire.PreviewQuery)
	at := func(path string) string { return h.url + path }

	first := previewGet(t, at("/echo/x?"+u.RawQuery+"&y=2"), "Host", u.Host)
	if first.status != http.StatusSeeOther || first.header.Get("Location") != "/echo/x?y=2" {
		t.Fatalf("first visit: %d to %q: %s", first.status, first.header.Get("Location"), first.body)
	}
	var ck *http.Cookie
	for _, c := range (&http.Response{Header: first.header}).Cookies() {
		if c.Name == wire.PreviewCookie {
			ck = c
		}
	}
	if ck == nil || ck.Value != token || !ck.HttpOnly || ck.Domain != "" {
		t.Fatalf("first visit set cookie %+v, want the token, HttpOnly, this host only", ck)
	}
	res := previewGet(t, at("/echo/x?y=2"), "Host", u.Host, "Cookie", wire.PreviewCookie+"="+token+"; theme=dark")
	var got seen
	res.decode(t, &got)
	if res.status != http.StatusOK || got.Path != "/echo/x" || got.Query != "y=2" || got.Cookie != "theme=dark" || got.Prefix != "" {
		t.Errorf("status %d; the program saw %+v", res.status, got)
	}
	if res.header.Get("Content-Security-Policy") != "" {
		t.Errorf("a preview host is its own origin; no sandbox wanted, got %q", res.header.Get("Content-Security-Policy"))
	}
	otherHost := fmt.Sprintf("%d-%s.preview.test", d.port+1, w.ID)
	previewGet(t, at("/echo/x"), "Host", otherHost, "Cookie", wire.PreviewCookie+"="+token).
		expectError(t, http.StatusForbidden, "forbidden", "", "not this host")
	previewGet(t, at("/echo/x"), "Host", u.Host).expectError(t, http.StatusForbidden, "forbidden", "", "no preview link")
	// The API itself is not served on a preview host.
	previewGet(t, at("/v1/workspaces"), "Host", u.Host, "Authorization", "Bearer "+h.adminKey).
		expectError(t, http.StatusForbidden, "forbidden", "", "no preview link")
}
