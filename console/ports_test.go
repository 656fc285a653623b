package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// TestWorkspacePorts signs in against a fake API and checks the workspace
// page's Ports table: each listening port with an Open button that makes
// a preview link of that port and sends the browser to it (a link on the
// API's own host by its path, a preview host's whole); a failed listing
// says why; a viewer sees the ports without Open.
func TestWorkspacePorts(t *testing.T) {
	st := testSessions(t)
	if err := st.CreateTenant(context.Background(), &wire.Tenant{ID: wire.DefaultTenantID}); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, role := range []string{wire.RoleMember, wire.RoleViewer} {
		id, key, hash := models.NewAPIKey()
		if err := st.CreateAPIKey(context.Background(), &wire.APIKey{ID: id, TenantID: wire.DefaultTenantID, Role: role, Hash: hash}); err != nil {
			t.Fatal(err)
		}
		keys[role] = key
	}
	out := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	var made []wire.PreviewRequest
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/apikeys/{id}", func(w http.ResponseWriter, r *http.Request) {
		role := wire.RoleMember
		if k, _ := st.GetAPIKey(r.Context(), r.PathValue("id")); k != nil {
			role = k.Role
		}
		out(w, 200, wire.APIKey{ID: r.PathValue("id"), TenantID: "default", Role: role})
	})
	mux.HandleFunc("GET /v1/workspaces/{id}", func(w http.ResponseWriter, r *http.Request) {
		out(w, 200, wire.Workspace{ID: r.PathValue("id"), Phase: wire.PhaseRunning, TemplateID: "default", CreatedAt: time.Now()})
	})
	for _, p := range []string{"GET /v1/workspaces/{id}/events", "GET /v1/sessions", "GET /v1/agents"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { out(w, 200, map[string]any{"items": []any{}}) })
	}
	mux.HandleFunc("GET /v1/workspaces/{id}/ports", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "ws-old" {
			out(w, 501, wire.ErrorEnvelope{Error: wire.ErrorBody{Code: "not_implemented", Message: "workspace ws-old: the workspace's runtime predates listing ports"}})
			return
		}
		out(w, 200, wire.Items[protocol.ListeningPort]{Items: []protocol.ListeningPort{{Port: 3000, Address: "0.0.0.0"}, {Port: 8000, Address: "127.0.0.1"}}})
	})
	mux.HandleFunc("POST /v1/workspaces/{id}/previews", func(w http.ResponseWriter, r *http.Request) {
		var req wire.PreviewRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		made = append(made, req)
		u := "http://api.internal/preview/pv-1.sig/"
		if r.PathValue("id") == "ws-host" {
			u = "https://8000-ws-host.preview.example.com/?primer_preview=pv-1.sig"
		}
		out(w, 201, wire.PreviewLink{Preview: wire.Preview{ID: "pv-1", WorkspaceID: r.PathValue("id"), Port: req.Port}, URL: u})
	})
	c, err := New(Config{API: mux, Sessions: st, SessionsPerKey: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.Handler()
	signIn := func(key string) *http.Cookie {
		req := httptest.NewRequest(http.MethodPost, "/signin", strings.NewReader("api_key="+url.QueryEscape(key)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		for _, ck := range rec.Result().Cookies() {
			if ck.Name == cookieName {
				return ck
			}
		}
		t.Fatalf("sign in: status %d, body %s", rec.Code, rec.Body)
		return nil
	}
	member, viewer := signIn(keys[wire.RoleMember]), signIn(keys[wire.RoleViewer])
	get := func(ck *http.Cookie, path string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.AddCookie(ck)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("GET %s: status %d, body %s", path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	open := func(ws, port string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/workspaces/"+ws+"/preview",
			strings.NewReader("port="+port+"&csrf="+url.QueryEscape(csrfOf(member.Value))))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(member)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("Open: status %d, body %s", rec.Code, rec.Body)
		}
		return rec.Header().Get("Location")
	}

	page := get(member, "/workspaces/ws-run")
	for _, want := range []string{`data-port="3000"`, `data-port="8000"`, "0.0.0.0", `action="/workspaces/ws-run/preview" target="_blank"`, `name="port" value="8000"`} {
		if !strings.Contains(page, want) {
			t.Errorf("workspace page lacks %s", want)
		}
	}
	if vp := get(viewer, "/workspaces/ws-run"); !strings.Contains(vp, `data-port="8000"`) || strings.Contains(vp, `/preview"`) {
		t.Errorf("a viewer's page: ports listed %v, Open shown %v; want listed without Open",
			strings.Contains(vp, `data-port="8000"`), strings.Contains(vp, `/preview"`))
	}
	if old := get(member, "/workspaces/ws-old"); !strings.Contains(old, "Ports cannot be listed") || !strings.Contains(old, "predates listing ports") {
		t.Errorf("a runtime without ports.list: the page does not say why no ports show")
	}
	if loc := open("ws-run", "8000"); loc != "/preview/pv-1.sig/" {
		t.Errorf("Open went to %q, want the link's path on this host", loc)
	}
	if loc := open("ws-host", "8000"); loc != "https://8000-ws-host.preview.example.com/?primer_preview=pv-1.sig" {
		t.Errorf("Open on a preview host went to %q, want the link whole", loc)
	}
	if len(made) != 2 || made[0].Port != 8000 {
		t.Errorf("preview requests %+v, want two for port 8000", made)
	}
}
