package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

// seedYAML is DESIGN.md's example, verbatim.
const seedYAML = `kind: workspace_provider
spec:
  id: docker-local
  provider: container
  config:
    kind: container
    runtime: docker            # or podman
    connection: {kind: socket, socket_path: /var/run/docker.sock}
    reachability: {kind: host_port, bind_host: 127.0.0.1}
---
kind: workspace_template
spec:
  id: code-sandbox
  provider_id: docker-local
  backend:
    kind: container
    image: primer/workspace-runtime:1.0
    cpu_cores: 1
    memory_bytes: 536870912
    network: {egress: deny_all}
`

// jsonEqual compares two JSON documents by value.
func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("bad JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

func TestParseManifests(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		kinds   []string
		lines   []int
		wantErr []string // substrings of the error
	}{
		{name: "seed example", in: seedYAML, kinds: []string{kindProvider, kindTemplate}, lines: []int{1, 11}},
		{
			name: "multi-doc with markers, comments and empty documents",
			in: "---\n# only a comment\n---\nkind: workspace_provider\nspec: {id: p, provider: local, config: {root_path: /tmp/p}}\n" +
				"--- # next\n\n---\nkind: workspace_template\nspec: {id: t, provider_id: p, backend: {kind: local}}\n" +
				"...\nkind: workspace\nspec:\n  template_id: t\n  labels: {team: evals}\n",
			kinds: []string{kindProvider, kindTemplate, kindWorkspace},
			lines: []int{4, 9, 12},
		},
		{
			name:    "unknown kind names the document and kind",
			in:      seedYAML + "---\nkind: workspace_pod\nspec: {id: x}\n",
			wantErr: []string{"document 3 (line 22)", `unknown kind "workspace_pod"`},
		},
		{
			name:  "pool document",
			in:    "kind: workspace_pool\nspec: {id: warm, template_id: code-sandbox, size: 5}\n",
			kinds: []string{kindPool}, lines: []int{1},
		},
		{
			name:    "unknown pool spec key",
			in:      "kind: workspace_pool\nspec: {id: warm, template: code-sandbox}\n",
			wantErr: []string{"document 1", "workspace_pool", `unknown field "template"`},
		},
		{
			name:    "syntax error gives the file line",
			in:      seedYAML + "---\nkind: workspace_template\nspec:\n  id: [broken\n  provider_id: x\n",
			wantErr: []string{"document 3 (line 22)", "line 24:"},
		},
		{
			name:    "bad indentation",
			in:      "kind: workspace_provider\nspec:\n  id: a\n provider: local\n",
			wantErr: []string{"document 1", "line 3:"},
		},
		{
			name:    "unknown top-level key",
			in:      "kind: workspace_provider\nmetadata: {name: x}\nspec: {id: a, provider: local}\n",
			wantErr: []string{"document 1", `unknown top-level key "metadata"`},
		},
		{
			name:    "unknown spec key",
			in:      seedYAML + "---\nkind: workspace_template\nspec: {id: t, provider: docker-local}\n",
			wantErr: []string{"document 3", "workspace_template", `unknown field "provider"`},
		},
		{
			name:    "wrong spec type",
			in:      "kind: workspace\nspec: {template_id: 7}\n",
			wantErr: []string{"document 1", "spec.template_id", "string"},
		},
		{
			name:    "duplicate key",
			in:      "kind: workspace_provider\nspec: {id: a, provider: local}\nkind: workspace_template\n",
			wantErr: []string{"document 1", "line 3", `"kind" already set`},
		},
		{name: "missing kind", in: "spec: {id: a}\n", wantErr: []string{"document 1", "missing kind"}},
		{name: "missing spec", in: "kind: workspace_provider\n", wantErr: []string{"missing spec"}},
		{name: "spec not a mapping", in: "kind: workspace_provider\nspec: [a]\n", wantErr: []string{"spec must be a mapping"}},
		{name: "not a mapping", in: "- a\n- b\n", wantErr: []string{"document 1", "mapping"}},
		{name: "empty file", in: "# nothing\n", wantErr: []string{"no documents"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := ParseManifests(strings.NewReader(tt.in))
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, parsed %+v", ms)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			var lines []int
			for _, m := range ms {
				kinds, lines = append(kinds, m.Kind), append(lines, m.Line)
			}
			if !reflect.DeepEqual(kinds, tt.kinds) || !reflect.DeepEqual(lines, tt.lines) {
				t.Errorf("kinds %v lines %v, want %v %v", kinds, lines, tt.kinds, tt.lines)
			}
		})
	}
}

func TestParseSeedSpecs(t *testing.T) {
	ms, err := ParseManifests(strings.NewReader(seedYAML))
	if err != nil {
		t.Fatal(err)
	}
	p, tpl := ms[0].Provider, ms[1].Template
	if p == nil || p.ID != "docker-local" || p.Provider != "container" {
		t.Fatalf("provider spec = %+v", p)
	}
	if !jsonEqual(t, p.Config, `{"kind":"container","runtime":"docker",
		"connection":{"kind":"socket","socket_path":"/var/run/docker.sock"},
		"reachability":{"kind":"host_port","bind_host":"127.0.0.1"}}`) {
		t.Errorf("provider config = %s", p.Config)
	}
	if tpl == nil || tpl.ID != "code-sandbox" || tpl.ProviderID != "docker-local" {
		t.Fatalf("template spec = %+v", tpl)
	}
	// memory_bytes must stay an exact integer, not 5.36870912e+08.
	if !bytes.Contains(tpl.Backend, []byte(`"memory_bytes":536870912`)) {
		t.Errorf("backend = %s", tpl.Backend)
	}
	if !jsonEqual(t, tpl.Backend, `{"kind":"container","image":"primer/workspace-runtime:1.0","cpu_cores":1,
		"memory_bytes":536870912,"network":{"egress":"deny_all"}}`) {
		t.Errorf("backend = %s", tpl.Backend)
	}
}

// fakeAPI is an httptest server with canned Primer API answers that records
// every request.
type fakeAPI struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []fakeReq

	// phases is the script GET /v1/workspaces/ws-1 follows, one entry per
	// call; "gone" answers 404. The last entry repeats.
	phases []string
	polls  int
	// warmFrom, when set, makes a create answer warm from that pool.
	warmFrom string
	// snapPhases is the script GET /v1/snapshots/snap-1 follows, as
	// phases is for ws-1.
	snapPhases []string
	snapPolls  int
}

type fakeReq struct {
	Method, Path, Query string
	Body                []byte
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{phases: []string{"running"}, snapPhases: []string{"ready"}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/providers", func(w http.ResponseWriter, r *http.Request) {
		var p wire.Provider
		if err := strictDecode(r.Body, &p); err != nil {
			apiErr(w, 400, "invalid", err.Error(), "")
			return
		}
		p.CreatedAt = t0
		jsonOut(w, 201, p)
	})
	mux.HandleFunc("POST /v1/templates", func(w http.ResponseWriter, r *http.Request) {
		var tp wire.Template
		if err := strictDecode(r.Body, &tp); err != nil {
			apiErr(w, 400, "invalid", err.Error(), "")
			return
		}
		if tp.ProviderID == "missing" {
			apiErr(w, 400, "invalid", "template "+tp.ID+": provider_id: provider missing not found", "provider_id")
			return
		}
		jsonOut(w, 201, tp)
	})
	mux.HandleFunc("GET /v1/providers", func(w http.ResponseWriter, r *http.Request) {
		jsonOut(w, 200, map[string]any{"items": []wire.Provider{{ID: "local", Provider: "local", Config: json.RawMessage(`{"root_path":"/tmp"}`), CreatedAt: t0}}})
	})
	mux.HandleFunc("POST /v1/workspaces", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			TemplateID string            `json:"template_id"`
			Labels     map[string]string `json:"labels"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.TemplateID == "nope" {
			apiErr(w, 400, "invalid", "workspace: template_id: template nope not found", "template_id")
			return
		}
		created := wire.Created{Workspace: &wire.Workspace{ID: "ws-1", TemplateID: req.TemplateID, Labels: req.Labels, Phase: "pending", CreatedAt: t0}, Source: client.LeaseCold}
		if f.warmFrom != "" {
			created.Phase, created.PoolID, created.Source = "running", f.warmFrom, client.LeaseWarm
		}
		jsonOut(w, 201, created)
	})
	mux.HandleFunc("GET /v1/workspaces", func(w http.ResponseWriter, r *http.Request) {
		jsonOut(w, 200, map[string]any{"items": []wire.Workspace{
			{ID: "ws-1", TemplateID: "default", Backend: "local", Phase: "running", CreatedAt: t0},
			{ID: "ws-2", TemplateID: "default", Backend: "local", Phase: "failed", Reason: "probe: 3 misses", CreatedAt: t0},
		}})
	})
	mux.HandleFunc("GET /v1/workspaces/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "ws-1" {
			apiErr(w, 404, "not_found", "workspace "+r.PathValue("id")+": not found", "")
			return
		}
		f.mu.Lock()
		phase := f.phases[min(f.polls, len(f.phases)-1)]
		f.polls++
		f.mu.Unlock()
		if phase == "gone" {
			apiErr(w, 404, "not_found", "workspace ws-1: not found", "")
			return
		}
		ws := wire.Workspace{ID: "ws-1", TemplateID: "default", Backend: "local", Phase: phase, CreatedAt: t0}
		if phase == "failed" {
			ws.Reason = "provision: root_path not writable"
		}
		jsonOut(w, 200, ws)
	})
	mux.HandleFunc("DELETE /v1/workspaces/{id}", func(w http.ResponseWriter, r *http.Request) {
		jsonOut(w, 202, wire.Workspace{ID: r.PathValue("id"), Phase: "terminating"})
	})
	mux.HandleFunc("POST /v1/workspaces/{id}/exec", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Command []string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/x-ndjson")
		lines := []string{
			`{"stream":"stdout","data":"hi\n"}`,
			`{"stream":"stderr","data":"oops\n"}`,
			`{"exit":{"exit_code":7,"duration_ms":2}}`,
		}
		switch req.Command[0] {
		case "sleep":
			lines = []string{`{"exit":{"exit_code":-1,"duration_ms":1000,"timed_out":true,"signal":"killed"}}`}
		case "lost":
			lines = []string{`{"stream":"stdout","data":"partial"}`, `{"error":{"code":"unavailable","message":"workspace ws-1: runtime: connection lost"}}`}
		}
		for _, l := range lines {
			_, _ = io.WriteString(w, l+"\n")
		}
	})
	mux.HandleFunc("GET /v1/workspaces/{id}/files/{path...}", func(w http.ResponseWriter, r *http.Request) {
		p := r.PathValue("path")
		switch {
		case r.URL.Query().Get("stat") == "true" && (p == "" || p == "dir"):
			jsonOut(w, 200, map[string]any{"name": "dir", "path": p, "size": 4096, "mode": 0o755, "mod_time": t0, "is_dir": true})
		case r.URL.Query().Get("stat") == "true":
			jsonOut(w, 200, map[string]any{"name": "blob.bin", "path": p, "size": 6, "mode": 0o644, "mod_time": t0})
		case p == "" || p == "dir":
			jsonOut(w, 200, map[string]any{"path": p, "items": []map[string]any{
				{"name": "sub", "path": "dir/sub", "size": 4096, "mode": 0o755, "mod_time": t0, "is_dir": true},
				{"name": "blob.bin", "path": "dir/blob.bin", "size": 6, "mode": 0o644, "mod_time": t0},
			}})
		default:
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(blob)
		}
	})
	mux.HandleFunc("PUT /v1/workspaces/{id}/files/{path...}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mode := uint64(0o644)
		if h := r.Header.Get("X-Primer-File-Mode"); h != "" {
			mode, _ = strconv.ParseUint(h, 8, 32)
		}
		jsonOut(w, 200, map[string]any{"name": filepath.Base(r.PathValue("path")), "path": r.PathValue("path"), "size": len(b), "mode": mode})
	})
	mux.HandleFunc("DELETE /v1/workspaces/{id}/files/{path...}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	mux.HandleFunc("GET /v1/workspaces/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		evs := []wire.Event{
			{ID: 1, WorkspaceID: "ws-1", Type: wire.EventProvisioned, Data: json.RawMessage(`{"workspace_type":"local","workspace_path":"/tmp/ws-1"}`), CreatedAt: t0},
			{ID: 2, WorkspaceID: "ws-1", Type: wire.EventPhaseChanged, Data: json.RawMessage(`{"from":"pending","to":"running"}`), CreatedAt: t0},
			{ID: 3, WorkspaceID: "ws-1", Type: wire.EventDestroyed, Data: json.RawMessage(`{"workspace_type":"local"}`), CreatedAt: t0},
		}
		if r.URL.Query().Get("follow") != "true" {
			jsonOut(w, 200, map[string]any{"items": evs[:2]})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range evs {
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.ID, ev.Type, b)
		}
	})
	mux.HandleFunc("POST /v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		var s wire.Session
		_ = json.NewDecoder(r.Body).Decode(&s)
		s.ID, s.Status, s.CreatedAt = "ses-1", "open", t0
		jsonOut(w, 201, s)
	})
	mux.HandleFunc("POST /v1/sessions/{id}/end", func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Reason string }
		_ = json.NewDecoder(r.Body).Decode(&b)
		if b.Reason == "" {
			b.Reason = "ended_by_user"
		}
		jsonOut(w, 200, wire.Session{ID: r.PathValue("id"), Status: "ended", EndReason: b.Reason})
	})
	addPoolAndToolRoutes(mux)
	f.addSnapshotRoutes(mux)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.mu.Lock()
		f.reqs = append(f.reqs, fakeReq{r.Method, r.URL.Path, r.URL.RawQuery, body})
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// blob is a file's raw bytes, with the bytes text handling would mangle.
var blob = []byte{0, 'a', '\r', '\n', 0xff, 0xfe}

func strictDecode(r io.Reader, v any) error {
	d := json.NewDecoder(r)
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func jsonOut(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func apiErr(w http.ResponseWriter, status int, code, msg, field string) {
	e := map[string]any{"code": code, "message": msg}
	if field != "" {
		e["details"] = map[string]any{"field": field}
	}
	jsonOut(w, status, map[string]any{"error": e})
}

// requests returns the recorded requests with method and path.
func (f *fakeAPI) requests(method, path string) []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeReq
	for _, r := range f.reqs {
		if r.Method == method && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// result is one primectl run.
type result struct {
	code           int
	stdout, stderr string
}

// run runs primectl against f with stdin.
func (f *fakeAPI) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--url", f.URL}, args...)
	code := Run(context.Background(), full, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

func TestCreateFromFile(t *testing.T) {
	f := newFakeAPI(t)
	file := filepath.Join(t.TempDir(), "seed.yaml")
	if err := os.WriteFile(file, []byte(seedYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	r := f.run(t, "", "create", "-f", file)
	if r.code != 0 || r.stdout != "workspace_provider/docker-local created\nworkspace_template/code-sandbox created\n" {
		t.Fatalf("create -f: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	provs := f.requests("POST", "/v1/providers")
	tpls := f.requests("POST", "/v1/templates")
	if len(provs) != 1 || len(tpls) != 1 {
		t.Fatalf("posted %d providers, %d templates", len(provs), len(tpls))
	}
	if !jsonEqual(t, provs[0].Body, `{"id":"docker-local","provider":"container","config":{"kind":"container","runtime":"docker",
		"connection":{"kind":"socket","socket_path":"/var/run/docker.sock"},"reachability":{"kind":"host_port","bind_host":"127.0.0.1"}}}`) {
		t.Errorf("provider body = %s", provs[0].Body)
	}
	if !jsonEqual(t, tpls[0].Body, `{"id":"code-sandbox","provider_id":"docker-local","backend":{"kind":"container",
		"image":"primer/workspace-runtime:1.0","cpu_cores":1,"memory_bytes":536870912,"network":{"egress":"deny_all"}}}`) {
		t.Errorf("template body = %s", tpls[0].Body)
	}
}

func TestCreateFromStdinStopsAtFirstError(t *testing.T) {
	f := newFakeAPI(t)
	in := "kind: workspace_provider\nspec: {id: p1, provider: local, config: {root_path: /tmp/p1}}\n---\n" +
		"kind: workspace_template\nspec: {id: t1, provider_id: missing, backend: {kind: local}}\n---\n" +
		"kind: workspace\nspec: {template_id: t1}\n"
	r := f.run(t, in, "create", "-f", "-")
	if r.code != 1 {
		t.Fatalf("code %d, want 1 (stderr %q)", r.code, r.stderr)
	}
	if r.stdout != "workspace_provider/p1 created\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	for _, w := range []string{
		"error: stdin: document 2 (workspace_template/t1): template t1: provider_id: provider missing not found (invalid)",
		"created before the error: workspace_provider/p1",
	} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q lacks %q", r.stderr, w)
		}
	}
	if n := len(f.requests("POST", "/v1/workspaces")); n != 0 {
		t.Errorf("%d workspaces posted after the failure", n)
	}

	// A bad document is found before anything is created.
	f2 := newFakeAPI(t)
	r = f2.run(t, seedYAML+"---\nkind: nope\nspec: {}\n", "create", "-f", "-")
	if r.code != 1 || !strings.Contains(r.stderr, `document 3 (line 22): unknown kind "nope"`) {
		t.Errorf("code %d stderr %q", r.code, r.stderr)
	}
	if len(f2.reqs) != 0 {
		t.Errorf("%d requests sent for an invalid file", len(f2.reqs))
	}
}

func TestCreateWorkspace(t *testing.T) {
	t.Run("wait until running", func(t *testing.T) {
		f := newFakeAPI(t)
		f.phases = []string{"pending", "pending", "running"}
		r := f.run(t, "", "create", "workspace", "--set", "template_id=default", "--set", "labels.team=evals", "--wait")
		if r.code != 0 || r.stdout != "workspace/ws-1 created (cold)\n" {
			t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		if r.stderr != "workspace/ws-1 pending\nworkspace/ws-1 running\n" {
			t.Errorf("progress %q", r.stderr)
		}
		if body := f.requests("POST", "/v1/workspaces")[0].Body; !jsonEqual(t, body, `{"template_id":"default","labels":{"team":"evals"}}`) {
			t.Errorf("body %s", body)
		}
	})
	t.Run("ends failed", func(t *testing.T) {
		f := newFakeAPI(t)
		f.phases = []string{"pending", "failed"}
		r := f.run(t, "", "create", "ws", "--set", "template_id=default", "--wait")
		if r.code != 1 || !strings.Contains(r.stderr, "error: workspace ws-1: failed: provision: root_path not writable") {
			t.Fatalf("code %d stderr %q", r.code, r.stderr)
		}
	})
	t.Run("wait timeout", func(t *testing.T) {
		f := newFakeAPI(t)
		f.phases = []string{"pending"}
		r := f.run(t, "", "create", "workspace", "--set", "template_id=default", "--wait", "--wait-timeout", "300ms")
		if r.code != 1 || !strings.Contains(r.stderr, "not running after 300ms (still pending)") {
			t.Fatalf("code %d stderr %q", r.code, r.stderr)
		}
	})
	t.Run("json output", func(t *testing.T) {
		f := newFakeAPI(t)
		r := f.run(t, "", "create", "workspace", "--set", "template_id=default", "-o", "json")
		var ws wire.Created
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ws) != nil || ws.ID != "ws-1" || ws.Phase != "pending" || ws.Source != "cold" {
			t.Fatalf("code %d stdout %q", r.code, r.stdout)
		}
	})
	t.Run("warm from a pool", func(t *testing.T) {
		f := newFakeAPI(t)
		f.warmFrom = "py-warm"
		r := f.run(t, "", "create", "workspace", "--set", "template_id=default")
		if r.code != 0 || r.stdout != "workspace/ws-1 created (warm, from workspace_pool/py-warm)\n" {
			t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		r = f.run(t, "", "create", "workspace", "--set", "template_id=default", "-o", "yaml")
		if r.code != 0 || !strings.Contains(r.stdout, "source: warm\n") {
			t.Fatalf("-o yaml: code %d stdout %q", r.code, r.stdout)
		}
	})
	t.Run("api error", func(t *testing.T) {
		f := newFakeAPI(t)
		r := f.run(t, "", "create", "workspace", "--set", "template_id=nope")
		if r.code != 1 || r.stderr != "error: workspace: template_id: template nope not found (invalid)\n" {
			t.Fatalf("code %d stderr %q", r.code, r.stderr)
		}
	})
}

func TestOutputFormats(t *testing.T) {
	f := newFakeAPI(t)

	r := f.run(t, "", "list", "workspaces")
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 3 {
		t.Fatalf("table: code %d stdout %q", r.code, r.stdout)
	}
	if got := strings.Fields(lines[0]); !reflect.DeepEqual(got, []string{"ID", "PHASE", "TEMPLATE", "BACKEND", "AGE", "REASON"}) {
		t.Errorf("header %q", lines[0])
	}
	if got := strings.Fields(lines[1]); len(got) != 6 || got[0] != "ws-1" || got[1] != "running" || got[3] != "local" || got[5] != "<none>" {
		t.Errorf("row %q", lines[1])
	}
	if !strings.HasSuffix(lines[2], "probe: 3 misses") || !strings.HasPrefix(lines[2], "ws-2") {
		t.Errorf("row %q", lines[2])
	}
	// Columns are aligned: PHASE starts at the same offset in every line.
	if i := strings.Index(lines[0], "PHASE"); strings.Index(lines[1], "running") != i || strings.Index(lines[2], "failed") != i {
		t.Errorf("columns not aligned:\n%s", r.stdout)
	}

	r = f.run(t, "", "ls", "ws", "-o", "json")
	var l struct{ Items []wire.Workspace }
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil || len(l.Items) != 2 || l.Items[1].Reason != "probe: 3 misses" {
		t.Fatalf("json list: %v %q", err, r.stdout)
	}

	r = f.run(t, "", "get", "workspace", "ws-1", "-o", "yaml")
	var ws wire.Workspace
	if err := yaml.Unmarshal([]byte(r.stdout), &ws); err != nil || ws.ID != "ws-1" || ws.Backend != "local" || !ws.CreatedAt.Equal(t0) {
		t.Fatalf("yaml get: %v %q", err, r.stdout)
	}
	if !strings.Contains(r.stdout, "phase: running\n") {
		t.Errorf("yaml %q", r.stdout)
	}

	r = f.run(t, "", "get", "providers", "-o", "yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "items:\n- config:\n    root_path: /tmp\n") {
		t.Errorf("yaml list %q", r.stdout)
	}

	r = f.run(t, "", "get", "prov")
	if fields := strings.Fields(r.stdout); r.code != 0 || !reflect.DeepEqual(fields[:4], []string{"ID", "PROVIDER", "AGE", "local"}) {
		t.Errorf("provider table %q", r.stdout)
	}
}

func TestErrorsAndUsage(t *testing.T) {
	f := newFakeAPI(t)
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"get", "workspace", "ws-404"}, 1, "error: workspace ws-404: not found (not_found)\n"},
		{[]string{"get", "pods", "x"}, 2, `unknown resource "pods"`},
		{[]string{"get"}, 2, "accepts between 1 and 2 arg(s)"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"workspace", "frobnicate"}, 2, `unknown command "frobnicate" for "primectl workspace"`},
		{[]string{"list", "ws", "-o", "xml"}, 2, "-o xml: want table, json or yaml"},
		{[]string{"list", "ws", "--status", "open"}, 2, "--status does not filter workspaces"},
		{[]string{"list", "ws", "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"create"}, 2, "-f FILE is required"},
		{[]string{"create", "workspace"}, 2, "--set template_id=ID (or snapshot_id=ID) is required"},
		{[]string{"create", "workspace", "--set", "image=x"}, 2, `unknown key "image"`},
		{[]string{"create", "-f", "/nonexistent/x.yaml"}, 1, "no such file"},
		{[]string{"workspace", "exec", "ws-1"}, 2, "requires at least 2 arg(s)"},
		{[]string{"workspace", "exec", "ws-1", "--env", "NOEQUALS", "--", "true"}, 2, "--env NOEQUALS: want KEY=VALUE"},
		{[]string{"session", "create"}, 2, "--workspace ID is required"},
		{[]string{"delete", "provider", "p", "--reason", "x"}, 2, "--reason applies to sessions only"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := f.run(t, "", tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("code %d stderr %q, want %d with %q", r.code, r.stderr, tt.code, tt.stderr)
			}
		})
	}

	// No server at all: a clear error and exit 1.
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"--url", "http://127.0.0.1:1", "list", "ws"}, nil, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "connection refused") {
		t.Errorf("unreachable: code %d stderr %q", code, errb.String())
	}
}

func TestURLFromEnvironment(t *testing.T) {
	f := newFakeAPI(t)
	t.Setenv("PRIMER_URL", f.URL)
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"get", "provider"}, nil, &out, &errb); code != 0 {
		t.Fatalf("code %d stderr %q", code, errb.String())
	}
	if len(f.requests("GET", "/v1/providers")) != 1 {
		t.Errorf("PRIMER_URL not used")
	}
}

func TestExec(t *testing.T) {
	f := newFakeAPI(t)
	r := f.run(t, "input data", "workspace", "exec", "ws-1", "--env", "A=1", "--cwd", "/tmp", "--user", "user", "--timeout", "30s", "-i", "--", "sh", "-c", "cat; exit 7")
	if r.code != 7 {
		t.Fatalf("exit %d, want the command's 7 (stderr %q)", r.code, r.stderr)
	}
	if r.stdout != "hi\n" || r.stderr != "oops\n" {
		t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	body := f.requests("POST", "/v1/workspaces/ws-1/exec")[0].Body
	if !jsonEqual(t, body, `{"command":["sh","-c","cat; exit 7"],"env":{"A":"1"},"cwd":"/tmp","user":"user","stdin":"input data","timeout":"30s","stream":true}`) {
		t.Errorf("exec body %s", body)
	}
	r = f.run(t, "", "ws", "exec", "ws-1", "--timeout", "1s", "--", "sleep", "60")
	if r.code != ExitTimedOut || !strings.Contains(r.stderr, "command timed out") {
		t.Errorf("timed out: code %d stderr %q", r.code, r.stderr)
	}
	r = f.run(t, "", "ws", "exec", "ws-1", "--", "lost")
	if r.code != 1 || r.stdout != "partial" || r.stderr != "error: workspace ws-1: runtime: connection lost (unavailable)\n" {
		t.Errorf("lost runtime: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	// After --, the command's own flags are the command's.
	r = f.run(t, "", "ws", "exec", "ws-1", "--", "ls", "-la")
	body = f.requests("POST", "/v1/workspaces/ws-1/exec")[3].Body
	if r.code != 7 || !jsonEqual(t, body, `{"command":["ls","-la"],"stream":true}`) {
		t.Errorf("code %d body %s", r.code, body)
	}
}

func TestFiles(t *testing.T) {
	f := newFakeAPI(t)

	r := f.run(t, "", "workspace", "files", "get", "ws-1", "dir/blob.bin", "--content")
	if r.code != 0 || !bytes.Equal([]byte(r.stdout), blob) {
		t.Fatalf("--content: code %d stdout %q, want the raw bytes %q", r.code, r.stdout, blob)
	}

	r = f.run(t, "", "workspace", "files", "get", "ws-1", "dir/blob.bin")
	if fields := strings.Fields(r.stdout); r.code != 0 || len(fields) < 9 || fields[4] != "-rw-r--r--" || fields[5] != "6" || fields[len(fields)-1] != "blob.bin" {
		t.Errorf("file info table %q", r.stdout)
	}

	r = f.run(t, "", "workspace", "files", "get", "ws-1", "dir")
	if r.code != 0 || !strings.Contains(r.stdout, "drwxr-xr-x") || !strings.Contains(r.stdout, "sub/") || !strings.Contains(r.stdout, "blob.bin") {
		t.Errorf("directory listing %q", r.stdout)
	}

	r = f.run(t, "", "workspace", "files", "ls", "ws-1", "-o", "json")
	var d struct {
		Path  string
		Items []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || len(d.Items) != 2 {
		t.Errorf("ls json: %v %q", err, r.stdout)
	}
	if got := f.requests("GET", "/v1/workspaces/ws-1/files/"); len(got) != 1 {
		t.Errorf("ls of the root requested %v", got)
	}

	r = f.run(t, string(blob), "workspace", "files", "put", "ws-1", "new/blob.bin")
	puts := f.requests("PUT", "/v1/workspaces/ws-1/files/new/blob.bin")
	if r.code != 0 || len(puts) != 1 || !bytes.Equal(puts[0].Body, blob) || r.stdout != "new/blob.bin written (6 bytes)\n" {
		t.Fatalf("put from stdin: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	local := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(local, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = f.run(t, "", "workspace", "files", "put", "ws-1", "in.txt", local)
	if puts := f.requests("PUT", "/v1/workspaces/ws-1/files/in.txt"); r.code != 0 || string(puts[0].Body) != "from a file" {
		t.Fatalf("put from a file: code %d stderr %q", r.code, r.stderr)
	}

	r = f.run(t, "#!/bin/sh\n", "workspace", "files", "put", "ws-1", "run.sh", "--mode", "0755", "-o", "json")
	var fi struct{ Mode uint32 }
	if err := json.Unmarshal([]byte(r.stdout), &fi); r.code != 0 || err != nil || fi.Mode != 0o755 {
		t.Fatalf("put --mode: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r = f.run(t, "", "workspace", "files", "put", "ws-1", "x", "--mode", "rwx"); r.code != 2 {
		t.Errorf("put --mode rwx: code %d, want 2", r.code)
	}

	r = f.run(t, "", "workspace", "files", "rm", "ws-1", "dir", "-r")
	dels := f.requests("DELETE", "/v1/workspaces/ws-1/files/dir")
	if r.code != 0 || len(dels) != 1 || dels[0].Query != "recursive=true" {
		t.Fatalf("rm -r: code %d %+v", r.code, dels)
	}
}

func TestEvents(t *testing.T) {
	f := newFakeAPI(t)
	r := f.run(t, "", "workspace", "events", "ws-1")
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 2 {
		t.Fatalf("code %d stdout %q", r.code, r.stdout)
	}
	if f := strings.Fields(lines[1]); len(f) != 3 || f[0] != "2025-01-02T03:04:05Z" || f[1] != "workspace.phase_changed" || f[2] != `{"from":"pending","to":"running"}` {
		t.Errorf("event line %q", lines[1])
	}

	r = f.run(t, "", "workspace", "events", "ws-1", "--follow", "-o", "json")
	lines = strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 3 {
		t.Fatalf("follow: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	var last wire.Event
	if err := json.Unmarshal([]byte(lines[2]), &last); err != nil || last.Type != wire.EventDestroyed {
		t.Errorf("last followed event %q: %v", lines[2], err)
	}
}

func TestDeleteAndSessions(t *testing.T) {
	f := newFakeAPI(t)
	f.phases = []string{"terminating", "terminating", "gone"}
	r := f.run(t, "", "delete", "ws", "ws-1", "--wait")
	if r.code != 0 || r.stdout != "workspace/ws-1 terminating\nworkspace/ws-1 deleted\n" || r.stderr != "workspace/ws-1 terminating\n" {
		t.Fatalf("delete --wait: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	r = f.run(t, "", "session", "create", "--workspace", "ws-1", "--agent", "claude", "--metadata", "run=7")
	if r.code != 0 || r.stdout != "session/ses-1\n" {
		t.Fatalf("session create: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if body := f.requests("POST", "/v1/sessions")[0].Body; !jsonEqual(t, body, `{"workspace_id":"ws-1","agent":"claude","metadata":{"run":"7"}}`) {
		t.Errorf("session body %s", body)
	}

	r = f.run(t, "", "session", "end", "ses-1", "--reason", "done")
	if r.code != 0 || r.stdout != "session/ses-1 ended (done)\n" {
		t.Errorf("session end: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "delete", "session", "ses-1")
	if r.code != 0 || r.stdout != "session/ses-1 ended (ended_by_user)\n" {
		t.Errorf("delete session: code %d stdout %q", r.code, r.stdout)
	}
	ends := f.requests("POST", "/v1/sessions/ses-1/end")
	if len(ends) != 2 || string(ends[1].Body) != "{}" {
		t.Errorf("end requests %+v", ends)
	}
}
