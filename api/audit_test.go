package api

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// withLogs sends the server's logs, debug included, to buf.
func withLogs(buf *syncBuffer) harnessOpt {
	return func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

func TestAuditWalkthrough(t *testing.T) {
	logs := &syncBuffer{}
	h := newHarness(t, withLogs(logs))
	adminID := keyIDOf(t, h.adminKey)
	w, _ := h.runningWorkspace()

	// Every response after the member key's creation, searched at the end.
	var seen []string
	do := func(method, path string, body any, header ...string) response {
		t.Helper()
		r := h.do(method, path, body, header...)
		seen = append(seen, string(r.body), headerText(r.header))
		return r
	}

	do("POST", "/v1/tenants", `{"id":"team"}`).expect(t, 201)
	var member wire.CreatedAPIKey
	h.do("POST", "/v1/apikeys", `{"tenant_id":"team","role":"member","name":"dev"}`).expect(t, 201).decode(t, &member)
	viewer := h.newKey("team", wire.RoleViewer)
	viewerID := keyIDOf(t, viewer)

	const content, envValue = "FILE-CONTENT-7f3a", "ENV-VALUE-91bc"
	do("PUT", "/v1/workspaces/"+w.ID+"/files/notes/todo.txt", content).expect(t, 200)
	do("POST", "/v1/workspaces/"+w.ID+"/exec", map[string]any{"command": []string{"true"}, "env": map[string]string{"SECRET_ENV": envValue}}).expect(t, 200)
	do("GET", "/v1/workspaces/"+w.ID, nil).expect(t, 200) // a read: not recorded
	do("POST", "/v1/apikeys", `{"role":"admin"}`, bearer(member.Key)...).expect(t, 403)
	do("POST", "/v1/apikeys", `{"role":"viewer"}`, bearer(viewer)...).expect(t, 403)
	do("POST", "/v1/tenants", `{"id":"x"}`, "Authorization", "Bearer pmr."+member.ID+"."+strings.Repeat("0", 64)).expect(t, 401)
	do("PUT", "/v1/tenants/team", `{"description":"the team"}`).expect(t, 200)
	do("DELETE", "/v1/workspaces/"+w.ID+"/files/notes/todo.txt", nil).expect(t, 204)
	do("POST", "/v1/apikeys/"+member.ID+"/revoke", nil, bearer(member.Key)...).expect(t, 200)

	want := []wire.AuditEntry{
		{KeyID: adminID, TenantID: "default", Action: "tenants.create", Resource: "tenants/team", Status: 201, Result: "ok"},
		{KeyID: adminID, TenantID: "default", Action: "apikeys.create", Resource: "apikeys/" + member.ID, Status: 201, Result: "ok"},
		{KeyID: adminID, TenantID: "default", Action: "workspaces.files.update", Resource: "workspaces/" + w.ID + "/files/notes/todo.txt", Status: 200, Result: "ok"},
		{KeyID: adminID, TenantID: "default", Action: "workspaces.exec", Resource: "workspaces/" + w.ID, Status: 200, Result: "ok"},
		{KeyID: member.ID, TenantID: "team", Action: "apikeys.create", Resource: "apikeys", Status: 403, Result: "forbidden"},
		{KeyID: viewerID, TenantID: "team", Action: "apikeys.create", Resource: "apikeys", Status: 403, Result: "forbidden"},
		{Action: "tenants.create", Resource: "tenants", Status: 401, Result: "unauthenticated"},
		{KeyID: adminID, TenantID: "default", Action: "tenants.update", Resource: "tenants/team", Status: 200, Result: "ok"},
		{KeyID: adminID, TenantID: "default", Action: "workspaces.files.delete", Resource: "workspaces/" + w.ID + "/files/notes/todo.txt", Status: 204, Result: "ok"},
		{KeyID: member.ID, TenantID: "team", Action: "apikeys.revoke", Resource: "apikeys/" + member.ID, Status: 200, Result: "ok"},
	}
	var got wire.Items[wire.AuditEntry]
	r := do("GET", "/v1/audit", nil)
	r.expect(t, 200).decode(t, &got)
	if len(got.Items) != len(want) {
		t.Fatalf("%d audit entries, want %d: %s", len(got.Items), len(want), r.body)
	}
	for i, w := range want {
		g := got.Items[len(got.Items)-1-i] // newest first
		if g.KeyID != w.KeyID || g.TenantID != w.TenantID || g.Action != w.Action || g.Resource != w.Resource ||
			g.Status != w.Status || g.Result != w.Result || g.Address != "127.0.0.1" || g.CreatedAt.IsZero() {
			t.Errorf("entry %d = %+v\nwant %+v", i, g, w)
		}
	}

	// ?after= follows oldest first; a member (even revoked now: use the
	// viewer) sees only its tenant's.
	var after wire.Items[wire.AuditEntry]
	do("GET", "/v1/audit?after="+strconv.FormatUint(got.Items[2].ID, 10), nil).expect(t, 200).decode(t, &after)
	if len(after.Items) != 2 || after.Items[0].ID != got.Items[1].ID || after.Items[1].ID != got.Items[0].ID {
		t.Errorf("after %d: %+v", got.Items[2].ID, after.Items)
	}
	var own wire.Items[wire.AuditEntry]
	do("GET", "/v1/audit?tenant=default&limit=1000", nil, bearer(viewer)...).expect(t, 200).decode(t, &own)
	if len(own.Items) != 3 {
		t.Errorf("viewer of team sees %d entries, want its tenant's 3: %+v", len(own.Items), own.Items)
	}
	for _, e := range own.Items {
		if e.TenantID != "team" {
			t.Errorf("viewer of team sees %+v", e)
		}
	}
	do("GET", "/v1/audit?limit=0", nil).expectError(t, 400, "invalid", "limit", "")
	do("GET", "/v1/audit?after=x", nil).expectError(t, 400, "invalid", "after", "")

	// No key material, file content or env value anywhere: not in any
	// response after creation, not in the audit log, not in the logs.
	h.srv.bg.Wait()
	haystacks := map[string]string{"logs": logs.String(), "responses": strings.Join(seen, "\n")}
	secrets := map[string]string{
		"member key": member.Key, "member secret": member.Key[strings.LastIndex(member.Key, ".")+1:],
		"member hash": models.HashAPIKey(member.Key), "admin key": h.adminKey, "viewer key": viewer,
		"file content": content, "env value": envValue,
	}
	for where, text := range haystacks {
		for what, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("%s contain the %s", where, what)
			}
		}
	}
	if !strings.Contains(logs.String(), "api key created") {
		t.Error("the logs were not captured")
	}
}

// headerText is a response's headers as text, for searching.
func headerText(h http.Header) string {
	var b strings.Builder
	_ = h.Write(&b)
	return b.String()
}

func TestAuditAction(t *testing.T) {
	for _, tc := range []struct {
		method, route, path string
		action, resource    string
	}{
		{"POST", "/v1/workspaces", "/v1/workspaces", "workspaces.create", "workspaces"},
		{"DELETE", "/v1/workspaces/:id", "/v1/workspaces/ws-1a2b", "workspaces.delete", "workspaces/ws-1a2b"},
		{"PUT", "/v1/templates/:id", "/v1/templates/py", "templates.update", "templates/py"},
		{"POST", "/v1/workspaces/:id/exec", "/v1/workspaces/ws-1a2b/exec", "workspaces.exec", "workspaces/ws-1a2b"},
		{"PUT", "/v1/workspaces/:id/files/*path", "/v1/workspaces/ws-1/files/a/b.txt", "workspaces.files.update", "workspaces/ws-1/files/a/b.txt"},
		{"POST", "/v1/suites/:id/schedule/pause", "/v1/suites/nightly/schedule/pause", "suites.schedule.pause", "suites/nightly"},
		{"POST", "/v1/suites/:id/runs", "/v1/suites/nightly/runs", "suites.runs.create", "suites/nightly"},
		{"POST", "/v1/sessions/:id/tools/:tool", "/v1/sessions/ses-1/tools/read_file", "sessions.tools.read_file", "sessions/ses-1"},
		{"POST", "/v1/sessions/:id/tools/:tool", "/v1/sessions/ses-1/tools/Evil%20Tool", "sessions.tools.unknown", "sessions/ses-1"},
		{"POST", "/v1/pools/:id/lease", "/v1/pools/p/lease", "pools.lease", "pools/p"},
		{"POST", "/v1/apikeys/:id/revoke", "/v1/apikeys/key-1/revoke", "apikeys.revoke", "apikeys/key-1"},
		{"DELETE", "/v1/apikeys/:id", "/v1/apikeys/key-1", "apikeys.delete", "apikeys/key-1"},
	} {
		t.Run(tc.method+" "+tc.route, func(t *testing.T) {
			gin.SetMode(gin.ReleaseMode)
			r := gin.New()
			var action, resource string
			r.Handle(tc.method, tc.route, func(c *gin.Context) { action, resource = auditAction(c), resourceOf(c) })
			r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(tc.method, tc.path, nil))
			if action != tc.action || resource != tc.resource {
				t.Errorf("action %q resource %q, want %q %q", action, resource, tc.action, tc.resource)
			}
		})
	}
}
