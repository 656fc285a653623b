package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// TestSnapshotsPauseResume signs in against a fake API and checks the
// workspace page's Pause, Resume and Snapshot buttons by phase, that each
// posts to its /v1 route, and the Snapshots page's list and delete.
func TestSnapshotsPauseResume(t *testing.T) {
	keyID, key, hash := models.NewAPIKey()
	// A console session lives only while its key works in the store.
	st := testSessions(t)
	if err := st.CreateTenant(context.Background(), &wire.Tenant{ID: wire.DefaultTenantID}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateAPIKey(context.Background(), &wire.APIKey{ID: keyID, TenantID: wire.DefaultTenantID, Role: wire.RoleMember, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls []string
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/apikeys/{id}", func(w http.ResponseWriter, r *http.Request) {
		out(w, 200, wire.APIKey{ID: keyID, TenantID: "default", Role: wire.RoleMember})
	})
	mux.HandleFunc("GET /v1/workspaces/{id}", func(w http.ResponseWriter, r *http.Request) {
		phase := map[string]string{"ws-run": wire.PhaseRunning, "ws-pau": wire.PhasePaused, "ws-pen": wire.PhasePending}[r.PathValue("id")]
		out(w, 200, wire.Workspace{ID: r.PathValue("id"), Phase: phase, TemplateID: "default", CreatedAt: t0})
	})
	mux.HandleFunc("GET /v1/workspaces/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		out(w, 200, map[string]any{"items": []wire.Event{}})
	})
	mux.HandleFunc("GET /v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		out(w, 200, map[string]any{"items": []wire.Session{}})
	})
	mux.HandleFunc("GET /v1/agents", func(w http.ResponseWriter, r *http.Request) {
		out(w, 200, map[string]any{"items": []wire.Agent{}})
	})
	record := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		mu.Unlock()
	}
	mux.HandleFunc("POST /v1/workspaces/{id}/pause", func(w http.ResponseWriter, r *http.Request) {
		record(w, r)
		out(w, 202, wire.Workspace{ID: r.PathValue("id"), Phase: wire.PhaseRunning})
	})
	mux.HandleFunc("POST /v1/workspaces/{id}/resume", func(w http.ResponseWriter, r *http.Request) {
		record(w, r)
		out(w, 202, wire.Workspace{ID: r.PathValue("id"), Phase: wire.PhasePaused})
	})
	mux.HandleFunc("POST /v1/workspaces/{id}/snapshots", func(w http.ResponseWriter, r *http.Request) {
		record(w, r)
		out(w, 202, wire.Snapshot{ID: "snap-new", WorkspaceID: r.PathValue("id"), Phase: wire.SnapshotCreating})
	})
	mux.HandleFunc("GET /v1/snapshots", func(w http.ResponseWriter, r *http.Request) {
		out(w, 200, map[string]any{"items": []wire.Snapshot{
			{ID: "snap-1", WorkspaceID: "ws-run", Mode: "filesystem", Phase: wire.SnapshotReady, Bytes: 12345, CreatedAt: t0},
			{ID: "snap-2", WorkspaceID: "ws-pau", Mode: "filesystem", Phase: wire.SnapshotDeleting, CreatedAt: t0},
		}})
	})
	mux.HandleFunc("DELETE /v1/snapshots/{id}", func(w http.ResponseWriter, r *http.Request) {
		record(w, r)
		out(w, 202, wire.Snapshot{ID: r.PathValue("id"), Phase: wire.SnapshotDeleting})
	})
	c, err := New(Config{API: mux, Sessions: st, SessionsPerKey: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.Handler()

	req := httptest.NewRequest(http.MethodPost, "/signin", strings.NewReader("api_key="+url.QueryEscape(key)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var cookie *http.Cookie
	for _, ck := range rec.Result().Cookies() {
		if ck.Name == cookieName {
			cookie = ck
		}
	}
	if rec.Code != http.StatusSeeOther || cookie == nil {
		t.Fatalf("sign in: status %d, body %s", rec.Code, rec.Body)
	}
	get := func(path string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("GET %s: status %d, body %s", path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	post := func(path string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader("csrf="+url.QueryEscape(csrfOf(cookie.Value))))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("POST %s: status %d, body %s", path, rec.Code, rec.Body)
		}
		return rec.Header().Get("Location")
	}

	buttons := []string{`action="/workspaces/%s/pause"`, `action="/workspaces/%s/resume"`, `action="/workspaces/%s/snapshot"`}
	for _, tt := range []struct {
		id   string
		want []bool // pause, resume, snapshot
	}{
		{"ws-run", []bool{true, false, true}},
		{"ws-pau", []bool{false, true, true}},
		{"ws-pen", []bool{false, false, false}},
	} {
		body := get("/workspaces/" + tt.id)
		for i, b := range buttons {
			if has := strings.Contains(body, strings.ReplaceAll(b, "%s", tt.id)); has != tt.want[i] {
				t.Errorf("workspace %s: button %s shown %v, want %v", tt.id, b, has, tt.want[i])
			}
		}
	}

	if loc := post("/workspaces/ws-run/pause"); !strings.HasPrefix(loc, "/workspaces/ws-run?notice=") {
		t.Errorf("pause went to %q", loc)
	}
	post("/workspaces/ws-pau/resume")
	if loc := post("/workspaces/ws-run/snapshot"); !strings.HasPrefix(loc, "/snapshots?notice=") || !strings.Contains(loc, "snap-new") {
		t.Errorf("snapshot went to %q", loc)
	}
	page := get("/snapshots")
	for _, want := range []string{`data-id="snap-1"`, `href="/workspaces/ws-run"`, "12345", "2026-01-02 03:04:05Z", `action="/snapshots/snap-1/delete"`} {
		if !strings.Contains(page, want) {
			t.Errorf("snapshots page lacks %s", want)
		}
	}
	if strings.Contains(page, `action="/snapshots/snap-2/delete"`) {
		t.Errorf("a deleting snapshot has a Delete button")
	}
	post("/snapshots/snap-1/delete")
	mu.Lock()
	defer mu.Unlock()
	want := "POST /v1/workspaces/ws-run/pause,POST /v1/workspaces/ws-pau/resume,POST /v1/workspaces/ws-run/snapshots,DELETE /v1/snapshots/snap-1"
	if got := strings.Join(calls, ","); got != want {
		t.Errorf("API calls %s, want %s", got, want)
	}
}
