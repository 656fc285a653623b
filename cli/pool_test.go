package cli

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

const (
	commitA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	commitB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// addPoolAndToolRoutes gives the fake API pools, leases, return, recover
// and the session tools.
func addPoolAndToolRoutes(mux *http.ServeMux) {
	pool := func(id string) wire.PoolView {
		return wire.PoolView{
			Pool:   wire.Pool{ID: id, TemplateID: "code-sandbox", Size: 3, CreatedAt: t0},
			Status: wire.PoolStatus{Idle: 2, Starting: 1, Leased: 1},
		}
	}
	mux.HandleFunc("POST /v1/pools", func(w http.ResponseWriter, r *http.Request) {
		var spec wire.PoolSpec
		if err := strictDecode(r.Body, &spec); err != nil {
			apiErr(w, 400, "invalid", err.Error(), "")
			return
		}
		if spec.Size > 100 {
			apiErr(w, 400, "invalid", "size: 500 is out of range: want 1 to 100 (0 or absent: 3)", "size")
			return
		}
		p := pool(spec.ID)
		p.TemplateID, p.Size, p.Status = spec.TemplateID, spec.Size, wire.PoolStatus{}
		jsonOut(w, 201, p)
	})
	mux.HandleFunc("GET /v1/pools", func(w http.ResponseWriter, r *http.Request) {
		items := []wire.PoolView{pool("py-warm")}
		if r.URL.Query().Get("template_id") == "other" {
			items = nil
		}
		jsonOut(w, 200, map[string]any{"items": nonNil(items)})
	})
	mux.HandleFunc("GET /v1/pools/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "py-warm" {
			apiErr(w, 404, "not_found", "pool "+r.PathValue("id")+": not found", "")
			return
		}
		jsonOut(w, 200, pool("py-warm"))
	})
	mux.HandleFunc("DELETE /v1/pools/{id}", func(w http.ResponseWriter, r *http.Request) {
		jsonOut(w, 202, pool(r.PathValue("id")))
	})
	mux.HandleFunc("POST /v1/pools/{id}/lease", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("id") {
		case "py-warm":
			jsonOut(w, 200, wire.Lease{Source: "warm", Workspace: &wire.Workspace{ID: "ws-9", Phase: "running", PoolID: "py-warm", PoolState: "leased"}})
		case "empty":
			var req wire.LeaseRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			// ws-1 follows the phases script of GET /v1/workspaces/ws-1.
			jsonOut(w, 201, wire.Lease{Source: "cold", Workspace: &wire.Workspace{ID: "ws-1", Phase: "pending", Labels: req.Labels}})
		default:
			apiErr(w, 404, "not_found", "pool "+r.PathValue("id")+": not found", "")
		}
	})
	mux.HandleFunc("POST /v1/workspaces/{id}/return", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "ws-9" {
			apiErr(w, 409, "failed_precondition", "workspace "+r.PathValue("id")+": not in a pool; only a workspace leased from a pool can be returned (delete it instead)", "")
			return
		}
		jsonOut(w, 202, wire.Workspace{ID: "ws-9", Phase: "running", PoolID: "py-warm", PoolState: "returning"})
	})
	mux.HandleFunc("POST /v1/workspaces/{id}/recover", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "ws-2" {
			apiErr(w, 409, "failed_precondition", "workspace "+r.PathValue("id")+": is running; only an escalated or failed workspace can be recovered", "")
			return
		}
		jsonOut(w, 202, wire.Workspace{ID: "ws-2", Phase: "escalated"})
	})
	mux.HandleFunc("POST /v1/sessions/{id}/tools/{tool}", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("tool") {
		case "workspace__exec":
			jsonOut(w, 200, map[string]any{"exit_code": 2, "stdout": "out\n", "stderr": "err\n", "timed_out": false, "commit": commitA})
		case "workspace__read":
			jsonOut(w, 200, map[string]any{"path": "a.bin", "content": "AP8=", "encoding": "base64", "size": 2, "commit": commitA})
		case "workspace__write":
			var body map[string]string
			_ = json.NewDecoder(r.Body).Decode(&body)
			jsonOut(w, 200, map[string]any{"path": body["path"], "size": len(body["content"]), "commit": commitB})
		default:
			apiErr(w, 404, "not_found", `tool "`+r.PathValue("tool")+`": not found`, "")
		}
	})
	mux.HandleFunc("GET /v1/sessions/{id}/history", func(w http.ResponseWriter, r *http.Request) {
		items := []wire.HistoryEntry{
			{Commit: commitB, Session: "ses-1", Tool: "workspace__write", Time: t0, Author: "claude", Summary: "workspace__write: a.txt (3 bytes)"},
			{Commit: commitA, Session: "ses-1", Tool: "workspace__exec", Time: t0, Author: "claude", Summary: "workspace__exec: ls"},
		}
		resumed := ""
		if r.URL.Query().Get("include_resumed") == "true" {
			resumed = "ses-0"
		}
		jsonOut(w, 200, wire.History{Items: items, ResumedFrom: resumed})
	})
	mux.HandleFunc("GET /v1/sessions/{id}/diff", func(w http.ResponseWriter, r *http.Request) {
		jsonOut(w, 200, wire.Diff{From: commitA, To: r.URL.Query().Get("commit"), Files: []protocol.StateChange{{Path: "a.txt", Change: "added"}},
			Patch: "--- /dev/null\n+++ b/a.txt\n+abc\n"})
	})
	mux.HandleFunc("POST /v1/sessions/{id}/restore", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Commit string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Commit != commitA {
			apiErr(w, 404, "not_found", "session "+r.PathValue("id")+": state.restore: commit "+body.Commit+" not found", "")
			return
		}
		jsonOut(w, 200, wire.Restore{Commit: commitB, RestoredFrom: commitA, Changed: []protocol.StateChange{{Path: "a.txt", Change: "modified"}}})
	})
}

func TestPools(t *testing.T) {
	f := newFakeAPI(t)
	file := filepath.Join(t.TempDir(), "pool.yaml")
	if err := os.WriteFile(file, []byte("kind: workspace_pool\nspec:\n  id: py-warm\n  template_id: code-sandbox\n  size: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := f.run(t, "", "create", "-f", file)
	if r.code != 0 || r.stdout != "workspace_pool/py-warm created\n" {
		t.Fatalf("create -f: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if body := f.requests("POST", "/v1/pools")[0].Body; !jsonEqual(t, body, `{"id":"py-warm","template_id":"code-sandbox","size":5}`) {
		t.Errorf("pool body %s", body)
	}
	r = f.run(t, "kind: workspace_pool\nspec: {id: big, template_id: t, size: 500}\n", "create", "-f", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "size: 500 is out of range") {
		t.Errorf("bad size: code %d stderr %q", r.code, r.stderr)
	}

	r = f.run(t, "", "get", "pool", "py-warm")
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 2 ||
		!reflect.DeepEqual(strings.Fields(lines[0]), []string{"ID", "TEMPLATE", "SIZE", "IDLE", "STARTING", "LEASED", "AGE"}) ||
		!reflect.DeepEqual(strings.Fields(lines[1])[:6], []string{"py-warm", "code-sandbox", "3", "2", "1", "1"}) {
		t.Fatalf("get pool: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "list", "pools", "--template", "other", "-o", "json")
	if r.code != 0 || !jsonEqual(t, []byte(r.stdout), `{"items":[]}`) {
		t.Errorf("list pools --template: code %d stdout %q", r.code, r.stdout)
	}
	if q := f.requests("GET", "/v1/pools"); len(q) != 1 || q[0].Query != "template_id=other" {
		t.Errorf("list requests %+v", q)
	}
	r = f.run(t, "", "list", "pools", "--phase", "running")
	if r.code != 2 || !strings.Contains(r.stderr, "--phase does not filter pools") {
		t.Errorf("list pools --phase: code %d stderr %q", r.code, r.stderr)
	}
	r = f.run(t, "", "get", "pool", "nope")
	if r.code != 1 || r.stderr != "error: pool nope: not found (not_found)\n" {
		t.Errorf("get unknown pool: code %d stderr %q", r.code, r.stderr)
	}
	r = f.run(t, "", "delete", "pool", "py-warm")
	if r.code != 0 || r.stdout != "workspace_pool/py-warm deleted (3 idle workspaces being removed, 1 leased kept)\n" {
		t.Errorf("delete pool: code %d stdout %q", r.code, r.stdout)
	}
}

func TestPoolLeaseReturnRecover(t *testing.T) {
	f := newFakeAPI(t)
	r := f.run(t, "", "pool", "lease", "py-warm")
	if r.code != 0 || r.stdout != "workspace/ws-9 leased from workspace_pool/py-warm (warm)\n" {
		t.Fatalf("warm lease: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if body := f.requests("POST", "/v1/pools/py-warm/lease")[0].Body; len(body) != 0 {
		t.Errorf("lease without labels sent %q", body)
	}

	f.phases = []string{"pending", "running"}
	r = f.run(t, "", "pool", "lease", "empty", "--label", "run=7", "--wait", "-o", "json")
	var lease wire.Lease
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &lease) != nil || lease.Source != "cold" || lease.Workspace.Phase != "running" {
		t.Fatalf("cold lease --wait: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r.stderr != "workspace/ws-1 pending\nworkspace/ws-1 running\n" {
		t.Errorf("progress %q", r.stderr)
	}
	if body := f.requests("POST", "/v1/pools/empty/lease")[0].Body; !jsonEqual(t, body, `{"labels":{"run":"7"}}`) {
		t.Errorf("lease body %s", body)
	}

	r = f.run(t, "", "workspace", "return", "ws-9")
	if r.code != 0 || r.stdout != "workspace/ws-9 returning to workspace_pool/py-warm\n" {
		t.Errorf("return: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "ws", "return", "ws-1")
	if r.code != 1 || !strings.Contains(r.stderr, "not in a pool") || !strings.Contains(r.stderr, "(failed_precondition)") {
		t.Errorf("return of a plain workspace: code %d stderr %q", r.code, r.stderr)
	}
	r = f.run(t, "", "workspace", "recover", "ws-2")
	if r.code != 0 || r.stdout != "workspace/ws-2 recovery requested (was escalated)\n" {
		t.Errorf("recover: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "workspace", "recover", "ws-1")
	if r.code != 1 || !strings.Contains(r.stderr, "is running") {
		t.Errorf("recover running: code %d stderr %q", r.code, r.stderr)
	}
	for _, bad := range [][]string{{"pool", "lease"}, {"pool", "lease", "p", "--label", "x"}, {"workspace", "return"}} {
		if r := f.run(t, "", bad...); r.code != 2 {
			t.Errorf("%v: code %d, want 2 (stderr %q)", bad, r.code, r.stderr)
		}
	}
}

func TestSessionToolsAndHistory(t *testing.T) {
	f := newFakeAPI(t)
	r := f.run(t, "", "session", "tool", "ses-1", "exec", "--env", "K=v", "--", "sh", "-c", "ls; exit 2")
	if r.code != 2 || r.stdout != "out\n" || r.stderr != "err\ncommit "+commitA+"\n" {
		t.Fatalf("tool exec: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if body := f.requests("POST", "/v1/sessions/ses-1/tools/workspace__exec")[0].Body; !jsonEqual(t, body, `{"args":["sh","-c","ls; exit 2"],"env":{"K":"v"}}`) {
		t.Errorf("exec body %s", body)
	}

	r = f.run(t, "", "session", "tool", "ses-1", "read", "a.bin")
	if r.code != 0 || r.stdout != "\x00\xff" {
		t.Errorf("tool read: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "abc", "session", "tool", "ses-1", "write", "a.txt", "--mode", "0600")
	if r.code != 0 || r.stdout != "a.txt written (3 bytes), commit "+commitB+"\n" {
		t.Errorf("tool write: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if body := f.requests("POST", "/v1/sessions/ses-1/tools/workspace__write")[0].Body; !jsonEqual(t, body, `{"path":"a.txt","content":"abc","mode":"0600"}`) {
		t.Errorf("write body %s", body)
	}

	r = f.run(t, "", "session", "history", "ses-1")
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 3 || !reflect.DeepEqual(strings.Fields(lines[0]), []string{"COMMIT", "AGE", "TOOL", "AUTHOR", "SUMMARY"}) ||
		!strings.HasPrefix(lines[1], commitB[:12]+" ") || strings.Contains(lines[1], commitB[:13]) || !strings.Contains(lines[2], "workspace__exec: ls") {
		t.Fatalf("history: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "session", "history", "ses-1", "--include-resumed")
	if r.code != 0 || r.stderr != "session/ses-1 resumes session/ses-0\n" {
		t.Errorf("history --include-resumed: code %d stderr %q", r.code, r.stderr)
	}

	r = f.run(t, "", "session", "diff", "ses-1", commitB)
	if r.code != 0 || r.stdout != "--- /dev/null\n+++ b/a.txt\n+abc\n" {
		t.Errorf("diff: code %d stdout %q", r.code, r.stdout)
	}
	if q := f.requests("GET", "/v1/sessions/ses-1/diff"); q[0].Query != "commit="+commitB {
		t.Errorf("diff query %q", q[0].Query)
	}

	r = f.run(t, "", "session", "restore", "ses-1", commitA)
	if r.code != 0 || r.stdout != "restored "+commitA[:12]+" as commit "+commitB+" (1 paths changed)\n" {
		t.Errorf("restore: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "session", "restore", "ses-1", commitB)
	if r.code != 1 || !strings.Contains(r.stderr, "not found (not_found)") {
		t.Errorf("restore unknown: code %d stderr %q", r.code, r.stderr)
	}

	for _, bad := range []struct {
		args []string
		msg  string
	}{
		{[]string{"session", "tool", "ses-1", "exec"}, "a command is required"},
		{[]string{"session", "tool", "ses-1", "fly"}, `unknown tool "fly"`},
		{[]string{"session", "tool", "ses-1", "read", "a", "--env", "A=1"}, "apply to exec only"},
		{[]string{"session", "tool", "ses-1", "exec", "x", "--", "ls"}, "before --"},
		{[]string{"session", "diff", "ses-1"}, "give COMMIT"},
		{[]string{"session", "restore", "ses-1"}, "accepts 2 arg(s)"},
	} {
		if r := f.run(t, "", bad.args...); r.code != 2 || !strings.Contains(r.stderr, bad.msg) {
			t.Errorf("%v: code %d stderr %q, want 2 with %q", bad.args, r.code, r.stderr, bad.msg)
		}
	}
}
