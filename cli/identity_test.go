package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// identityCall is one request the identity fake saw.
type identityCall struct {
	method, path, query, auth string
	body                      map[string]any
}

// identityAPI fakes /v1/tenants, /v1/apikeys and /v1/audit.
type identityAPI struct {
	*httptest.Server
	mu    sync.Mutex
	calls []identityCall
	// onAfter is called for an audit request with ?after=.
	onAfter func()
}

func newIdentityAPI(t *testing.T) *identityAPI {
	f := &identityAPI{}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := identityCall{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, auth: r.Header.Get("Authorization")}
		if data, _ := io.ReadAll(r.Body); len(data) > 0 {
			_ = json.Unmarshal(data, &c.body)
		}
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		reply := func(status int, v any) {
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(v)
		}
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/apikeys":
			reply(201, map[string]any{"id": "key-1", "tenant_id": "team", "role": c.body["role"], "created_at": created,
				"key": "pmr.key-1." + strings.Repeat("a", 64), "e2b_key": "e2b_" + strings.Repeat("b", 80)})
		case r.Method == "GET" && r.URL.Path == "/v1/apikeys":
			reply(200, map[string]any{"items": []wire.APIKey{
				{ID: "key-1", TenantID: "team", Role: "member", Name: "alice", CreatedAt: created},
				{ID: "key-2", TenantID: "team", Role: "viewer", CreatedAt: created, RevokedAt: &created},
			}})
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/revoke"):
			reply(200, wire.APIKey{ID: "key-1", RevokedAt: &created})
		case r.Method == "GET" && r.URL.Path == "/v1/tenants/team":
			reply(200, map[string]any{"id": "team", "description": "the team",
				"quota": wire.Quota{MaxWorkspaces: 3, MaxPools: 2}, "usage": wire.Usage{Workspaces: 1}})
		case r.Method == "PUT" && r.URL.Path == "/v1/tenants/team", r.Method == "POST" && r.URL.Path == "/v1/tenants":
			reply(200, map[string]any{"id": "team"})
		case r.Method == "GET" && r.URL.Path == "/v1/tenants":
			reply(200, map[string]any{"items": []wire.Tenant{{ID: "team", Quota: wire.Quota{MaxWorkspaces: 3}}}})
		case r.Method == "DELETE" && r.URL.Path == "/v1/tenants/team":
			w.WriteHeader(204)
		case r.URL.Path == "/v1/audit" && r.URL.Query().Get("after") == "":
			reply(200, map[string]any{"items": []wire.AuditEntry{
				{ID: 2, Action: "workspaces.delete", Resource: "workspaces/ws-1", Status: 200, Result: "ok", CreatedAt: created},
				{ID: 1, Action: "workspaces.create", Resource: "workspaces/ws-1", Status: 201, Result: "ok", CreatedAt: created},
			}})
		case r.URL.Path == "/v1/audit":
			items := []wire.AuditEntry{}
			if r.URL.Query().Get("after") == "2" {
				items = append(items, wire.AuditEntry{ID: 3, Action: "tenants.create", Resource: "tenants/x", Status: 201, Result: "ok", CreatedAt: created})
			} else if f.onAfter != nil {
				f.onAfter()
			}
			reply(200, map[string]any{"items": items})
		default:
			reply(404, map[string]any{"error": map[string]any{"code": "not_found", "message": "no route"}})
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *identityAPI) last() identityCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[len(f.calls)-1]
}

func (f *identityAPI) all() []identityCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]identityCall(nil), f.calls...)
}

// isolate points primectl's config and data lookups at empty directories.
func isolate(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("PRIMER_CONFIG", "")
	t.Setenv("PRIMER_TOKEN", "")
	t.Setenv("PRIMER_URL", "")
	t.Setenv("PRIMER_DATA_DIR", filepath.Join(dir, "nodata"))
	t.Chdir(dir)
	return dir
}

func runCtl(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(ctx, args, nil, &out, &errb)
	return code, out.String(), errb.String()
}

func TestConfigFile(t *testing.T) {
	f := newIdentityAPI(t)
	other := newIdentityAPI(t)
	dir := isolate(t)
	cfg := filepath.Join(dir, "config", "primer", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("url: "+f.URL+"\ntoken: from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name     string
		env      map[string]string
		args     []string
		server   *identityAPI
		auth     string
		warnMode bool
	}{
		{name: "the XDG config file", server: f, auth: "Bearer from-file"},
		{name: "PRIMER_TOKEN over the file", env: map[string]string{"PRIMER_TOKEN": "from-env"}, server: f, auth: "Bearer from-env"},
		{name: "--token over PRIMER_TOKEN", env: map[string]string{"PRIMER_TOKEN": "from-env"}, args: []string{"--token", "from-flag"}, server: f, auth: "Bearer from-flag"},
		{name: "PRIMER_URL over the file", env: map[string]string{"PRIMER_URL": other.URL}, server: other, auth: "Bearer from-file"},
		{name: "--url over PRIMER_URL", env: map[string]string{"PRIMER_URL": "http://127.0.0.1:1"}, args: []string{"--url", other.URL}, server: other, auth: "Bearer from-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, stderr := runCtl(t, context.Background(), append(tc.args, "tenant", "list")...)
			if code != 0 {
				t.Fatalf("code %d stderr %q", code, stderr)
			}
			if got := tc.server.last(); got.path != "/v1/tenants" || got.auth != tc.auth {
				t.Errorf("request %+v, want /v1/tenants with %q", got, tc.auth)
			}
			if stderr != "" {
				t.Errorf("stderr %q, want none (mode 0600)", stderr)
			}
		})
	}

	// PRIMER_CONFIG names another file; one others may read is used with a
	// warning.
	open := filepath.Join(dir, "open.yaml")
	if err := os.WriteFile(open, []byte("url: "+other.URL+"\ntoken: open-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PRIMER_CONFIG", open)
	code, _, stderr := runCtl(t, context.Background(), "tenant", "list")
	if code != 0 || !strings.Contains(stderr, "warning: config file "+open+": mode 0644") || !strings.Contains(stderr, "chmod 600") {
		t.Errorf("code %d stderr %q, want a mode warning", code, stderr)
	}
	if got := other.last(); got.auth != "Bearer open-file" {
		t.Errorf("auth %q, want the PRIMER_CONFIG file's", got.auth)
	}
	if strings.Contains(stderr, "open-file") {
		t.Errorf("the warning shows the key: %q", stderr)
	}

	// A malformed file is a warning and ignored.
	if err := os.WriteFile(open, []byte("url: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCtl(t, context.Background(), "--url", f.URL, "tenant", "list")
	if code != 0 || !strings.Contains(stderr, "ignoring it") || f.last().auth != "" {
		t.Errorf("malformed config: code %d stderr %q auth %q", code, stderr, f.last().auth)
	}
}

func TestAPIKeyCommands(t *testing.T) {
	f := newIdentityAPI(t)
	isolate(t)
	t.Setenv("PRIMER_URL", f.URL)
	ctx := context.Background()

	code, stdout, stderr := runCtl(t, ctx, "apikey", "create", "--tenant", "team", "--role", "member", "--name", "alice", "--ttl", "90d")
	if code != 0 {
		t.Fatalf("create: code %d stderr %q", code, stderr)
	}
	if want := "pmr.key-1." + strings.Repeat("a", 64) + "\n"; stdout != want {
		t.Errorf("stdout %q, want the key alone", stdout)
	}
	if !strings.Contains(stderr, "apikey/key-1 created for tenant team, role member") || !strings.Contains(stderr, "shown only this once") ||
		!strings.Contains(stderr, "E2B_API_KEY=e2b_"+strings.Repeat("b", 80)+"\n") {
		t.Errorf("stderr %q", stderr)
	}
	if b := f.last().body; b["tenant_id"] != "team" || b["role"] != "member" || b["name"] != "alice" || b["ttl"] != "90d" {
		t.Errorf("create body %v", b)
	}

	code, _, stderr = runCtl(t, ctx, "apikey", "create", "--role", "viewer", "--expires", "2027-01-31T00:00:00Z")
	if b := f.last().body; code != 0 || b["expires_at"] != "2027-01-31T00:00:00Z" || b["tenant_id"] != nil {
		t.Errorf("--expires: code %d body %v stderr %q", code, b, stderr)
	}
	for _, bad := range [][]string{
		{"apikey", "create", "--name", "x"},
		{"apikey", "create", "--role", "viewer", "--ttl", "1h", "--expires", "2027-01-31T00:00:00Z"},
		{"apikey", "create", "--role", "viewer", "--expires", "tomorrow"},
	} {
		if code, _, _ := runCtl(t, ctx, bad...); code != ExitUsage {
			t.Errorf("%v: code %d, want %d", bad, code, ExitUsage)
		}
	}

	code, stdout, _ = runCtl(t, ctx, "apikey", "list", "--tenant", "team")
	if code != 0 || f.last().query != "tenant=team" {
		t.Fatalf("list: code %d query %q", code, f.last().query)
	}
	for _, want := range []string{"key-1", "alice", "active", "key-2", "revoked", "never"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("list output lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = runCtl(t, ctx, "apikey", "revoke", "key-1", "key-2")
	if code != 0 || stdout != "apikey/key-1 revoked\napikey/key-2 revoked\n" || f.last().path != "/v1/apikeys/key-2/revoke" {
		t.Errorf("revoke: code %d stdout %q last %+v", code, stdout, f.last())
	}
}

func TestTenantCommands(t *testing.T) {
	f := newIdentityAPI(t)
	isolate(t)
	t.Setenv("PRIMER_URL", f.URL)
	ctx := context.Background()

	code, stdout, stderr := runCtl(t, ctx, "tenant", "create", "team", "--description", "the team", "--max-workspaces", "5", "--max-cpu-cores", "2.5")
	if code != 0 || stdout != "tenant/team created\n" {
		t.Fatalf("create: code %d stdout %q stderr %q", code, stdout, stderr)
	}
	if b := f.last().body; b["id"] != "team" || b["description"] != "the team" ||
		b["quota"].(map[string]any)["max_workspaces"] != 5.0 || b["quota"].(map[string]any)["max_cpu_cores"] != 2.5 {
		t.Errorf("create body %v", b)
	}

	// Update changes only the flags given: the rest comes from the tenant.
	if code, _, stderr := runCtl(t, ctx, "tenant", "update", "team", "--max-pools", "0", "--max-memory-bytes", "1024"); code != 0 {
		t.Fatalf("update: code %d stderr %q", code, stderr)
	}
	put := f.last()
	q := put.body["quota"].(map[string]any)
	if put.method != "PUT" || put.body["description"] != "the team" || q["max_workspaces"] != 3.0 || q["max_memory_bytes"] != 1024.0 || q["max_pools"] != nil {
		t.Errorf("update sent %s %v", put.method, put.body)
	}

	code, stdout, _ = runCtl(t, ctx, "tenant", "get", "team")
	if code != 0 || !strings.Contains(stdout, "workspaces") || !strings.Contains(stdout, "1") || !strings.Contains(stdout, "none") {
		t.Errorf("get: code %d\n%s", code, stdout)
	}
	if code, stdout, _ = runCtl(t, ctx, "tenant", "list"); code != 0 || !strings.Contains(stdout, "team") {
		t.Errorf("list: code %d\n%s", code, stdout)
	}
	if code, stdout, _ = runCtl(t, ctx, "tenant", "delete", "team"); code != 0 || stdout != "tenant/team deleted\n" {
		t.Errorf("delete: code %d stdout %q", code, stdout)
	}
}

func TestAuditCommand(t *testing.T) {
	f := newIdentityAPI(t)
	isolate(t)
	t.Setenv("PRIMER_URL", f.URL)

	code, stdout, _ := runCtl(t, context.Background(), "audit", "--tenant", "team", "--limit", "2")
	if code != 0 || f.last().query != "limit=2&tenant=team" {
		t.Fatalf("audit: code %d query %q", code, f.last().query)
	}
	if i, j := strings.Index(stdout, "workspaces.create"), strings.Index(stdout, "workspaces.delete"); i < 0 || j < i {
		t.Errorf("audit not oldest first:\n%s", stdout)
	}

	// --follow prints what comes after the last entry, until interrupted.
	defer func(d time.Duration) { auditPoll = d }(auditPoll)
	auditPoll = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.onAfter = cancel // the poll after the new entry: nothing more, stop
	code, stdout, stderr := runCtl(t, ctx, "audit", "--follow", "-o", "json")
	if code != 0 {
		t.Fatalf("follow: code %d stderr %q", code, stderr)
	}
	var ids []uint64
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var e wire.AuditEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		ids = append(ids, e.ID)
	}
	if len(ids) != 3 || ids[0] != 1 || ids[1] != 2 || ids[2] != 3 {
		t.Errorf("follow printed ids %v, want [1 2 3]", ids)
	}
	var afters []string
	for _, c := range f.all() {
		if strings.Contains(c.query, "after=") {
			afters = append(afters, c.query)
		}
	}
	if len(afters) < 2 || !strings.Contains(afters[0], "after=2") || !strings.Contains(afters[1], "after=3") {
		t.Errorf("follow polled %v", afters)
	}
}
