package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/primerhq/primer/wire"
)

// addSnapshotRoutes gives the fake API snapshots, fork, pause and resume.
// ws-1 is the only workspace that can be snapshotted, paused or resumed;
// ws-gone answers 404 everywhere.
func (f *fakeAPI) addSnapshotRoutes(mux *http.ServeMux) {
	snap := func(id, phase string) wire.Snapshot {
		s := wire.Snapshot{ID: id, WorkspaceID: "ws-1", TemplateID: "default", Backend: "container", Mode: wire.SnapshotModeFilesystem, Phase: phase, CreatedAt: t0}
		if phase == wire.SnapshotReady {
			s.Bytes = 4096
		}
		if phase == wire.SnapshotFailed {
			s.Reason = "commit: disk full"
		}
		return s
	}
	notFound := func(w http.ResponseWriter, what, id string) {
		apiErr(w, 404, "not_found", what+" "+id+": not found", "")
	}
	mux.HandleFunc("POST /v1/workspaces/{id}/snapshots", func(w http.ResponseWriter, r *http.Request) {
		var req wire.CreateSnapshotRequest
		if err := strictDecode(r.Body, &req); err != nil {
			apiErr(w, 400, "invalid", err.Error(), "")
			return
		}
		if r.PathValue("id") != "ws-1" {
			notFound(w, "workspace", r.PathValue("id"))
			return
		}
		s := snap("snap-1", wire.SnapshotCreating)
		if req.Mode != "" {
			s.Mode = req.Mode
		}
		s.Labels = req.Labels
		jsonOut(w, 202, s)
	})
	mux.HandleFunc("GET /v1/snapshots/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "snap-1" {
			notFound(w, "snapshot", r.PathValue("id"))
			return
		}
		f.mu.Lock()
		phase := f.snapPhases[min(f.snapPolls, len(f.snapPhases)-1)]
		f.snapPolls++
		f.mu.Unlock()
		jsonOut(w, 200, snap("snap-1", phase))
	})
	mux.HandleFunc("GET /v1/snapshots", func(w http.ResponseWriter, r *http.Request) {
		items := []wire.Snapshot{snap("snap-1", wire.SnapshotReady), snap("snap-2", wire.SnapshotFailed)}
		if r.URL.Query().Get("workspace_id") == "ws-9" {
			items = []wire.Snapshot{}
		}
		jsonOut(w, 200, map[string]any{"items": items})
	})
	mux.HandleFunc("DELETE /v1/snapshots/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "snap-1" {
			notFound(w, "snapshot", r.PathValue("id"))
			return
		}
		jsonOut(w, 202, snap("snap-1", wire.SnapshotDeleting))
	})
	mux.HandleFunc("POST /v1/workspaces/{id}/fork", func(w http.ResponseWriter, r *http.Request) {
		var req wire.ForkRequest
		if err := strictDecode(r.Body, &req); err != nil {
			apiErr(w, 400, "invalid", err.Error(), "")
			return
		}
		if req.Count > 5 {
			apiErr(w, 409, "quota_exceeded", "tenant default: max_workspaces 5 would be exceeded", "")
			return
		}
		s := snap("snap-f", wire.SnapshotCreating)
		s.Implicit = true
		out := wire.Forked{Snapshot: &s}
		// A single child is ws-1, whose phases the test scripts for --wait.
		ids := []string{"ws-1"}
		if req.Count > 1 {
			ids = nil
			for i := range req.Count {
				ids = append(ids, "ws-f"+string(rune('1'+i)))
			}
		}
		for _, id := range ids {
			out.Workspaces = append(out.Workspaces, &wire.Workspace{ID: id, TemplateID: "default", Phase: wire.PhasePending, SnapshotID: s.ID, Labels: req.Labels, CreatedAt: t0})
		}
		jsonOut(w, 202, out)
	})
	mux.HandleFunc("POST /v1/workspaces/{id}/pause", func(w http.ResponseWriter, r *http.Request) {
		var req wire.PauseRequest
		if err := strictDecode(r.Body, &req); err != nil {
			apiErr(w, 400, "invalid", err.Error(), "")
			return
		}
		switch r.PathValue("id") {
		case "ws-1":
			jsonOut(w, 202, wire.Workspace{ID: "ws-1", Phase: wire.PhaseRunning})
		case "ws-p":
			apiErr(w, 409, "conflict", "workspace ws-p: is paused", "")
		default:
			notFound(w, "workspace", r.PathValue("id"))
		}
	})
	mux.HandleFunc("POST /v1/workspaces/{id}/resume", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "ws-1" {
			notFound(w, "workspace", r.PathValue("id"))
			return
		}
		jsonOut(w, 202, wire.Workspace{ID: "ws-1", Phase: wire.PhasePaused, PausedMode: wire.SnapshotModeFilesystem})
	})
}

func TestSnapshotCommands(t *testing.T) {
	f := newFakeAPI(t)
	r := f.run(t, "", "snapshot", "create", "ws-1", "--mode", "full", "--label", "step=3")
	if r.code != 0 || r.stdout != "workspace_snapshot/snap-1 creating (full of workspace/ws-1)\n" {
		t.Fatalf("create: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if body := f.requests("POST", "/v1/workspaces/ws-1/snapshots")[0].Body; !jsonEqual(t, body, `{"mode":"full","labels":{"step":"3"}}`) {
		t.Errorf("create body %s", body)
	}

	f.snapPhases = []string{"creating", "creating", "ready"}
	r = f.run(t, "", "snap", "create", "ws-1", "--wait", "-o", "json")
	var s wire.Snapshot
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &s) != nil || s.Phase != wire.SnapshotReady || s.Bytes != 4096 {
		t.Fatalf("create --wait: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if n := len(f.requests("GET", "/v1/snapshots/snap-1")); n != 3 {
		t.Errorf("create --wait polled %d times, want 3 (until ready)", n)
	}

	f.snapPhases, f.snapPolls = []string{"creating", "failed"}, 0
	r = f.run(t, "", "snapshot", "create", "ws-1", "--wait")
	if r.code != 1 || !strings.Contains(r.stderr, "snap-1 is failed: commit: disk full") {
		t.Errorf("create --wait of a failing snapshot: code %d stderr %q", r.code, r.stderr)
	}

	r = f.run(t, "", "snapshot", "list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") ||
		strings.Join(strings.Fields(lines[1])[:5], " ") != "snap-1 ws-1 filesystem ready 4096" ||
		!strings.Contains(lines[2], "commit: disk full") {
		t.Errorf("list: code %d stdout\n%s", r.code, r.stdout)
	}
	r = f.run(t, "", "snapshot", "list", "--workspace", "ws-9", "-o", "json")
	if r.code != 0 || !jsonEqual(t, []byte(r.stdout), `{"items":[]}`) {
		t.Errorf("empty list: code %d stdout %q", r.code, r.stdout)
	}
	if q := f.requests("GET", "/v1/snapshots"); q[len(q)-1].Query != "workspace_id=ws-9" {
		t.Errorf("list --workspace query %q", q[len(q)-1].Query)
	}

	f.snapPhases = []string{"ready"}
	r = f.run(t, "", "snapshot", "get", "snap-1", "-o", "json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &s) != nil || s.ID != "snap-1" || s.WorkspaceID != "ws-1" {
		t.Errorf("get: code %d stdout %q", r.code, r.stdout)
	}
	r = f.run(t, "", "snapshot", "get", "snap-x")
	if r.code != 1 || !strings.Contains(r.stderr, "snapshot snap-x: not found") {
		t.Errorf("get unknown: code %d stderr %q", r.code, r.stderr)
	}
	r = f.run(t, "", "snapshot", "delete", "snap-1")
	if r.code != 0 || r.stdout != "workspace_snapshot/snap-1 deleting\n" {
		t.Errorf("delete: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = f.run(t, "", "create", "workspace", "--set", "snapshot_id=snap-1")
	if r.code != 0 {
		t.Fatalf("create from a snapshot: code %d stderr %q", r.code, r.stderr)
	}
	if body := f.requests("POST", "/v1/workspaces")[0].Body; !jsonEqual(t, body, `{"template_id":"","snapshot_id":"snap-1"}`) {
		t.Errorf("create from a snapshot sent %s", body)
	}
	for _, bad := range [][]string{{"snapshot", "create"}, {"snapshot", "get"}, {"snapshot", "create", "ws-1", "--label", "x"}} {
		if r := f.run(t, "", bad...); r.code != 2 {
			t.Errorf("%v: code %d, want 2 (stderr %q)", bad, r.code, r.stderr)
		}
	}
}

func TestForkPauseResume(t *testing.T) {
	f := newFakeAPI(t)
	r := f.run(t, "", "workspace", "fork", "ws-1", "--count", "2", "--label", "try=b", "--ttl", "1h")
	want := "workspace/ws-1 forked from workspace_snapshot/snap-f:\nworkspace/ws-f1 pending\nworkspace/ws-f2 pending\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("fork: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if body := f.requests("POST", "/v1/workspaces/ws-1/fork")[0].Body; !jsonEqual(t, body, `{"count":2,"labels":{"try":"b"},"ttl":"1h"}`) {
		t.Errorf("fork body %s", body)
	}

	f.phases = []string{"pending", "running"}
	r = f.run(t, "", "ws", "fork", "ws-1", "--count", "1", "--wait", "-o", "json")
	var forked wire.Forked
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &forked) != nil || len(forked.Workspaces) != 1 || forked.Workspaces[0].Phase != "running" {
		t.Fatalf("fork --wait: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r.stderr != "workspace/ws-1 pending\nworkspace/ws-1 running\n" {
		t.Errorf("fork --wait progress %q", r.stderr)
	}
	r = f.run(t, "", "workspace", "fork", "ws-1", "--count", "9")
	if r.code != 1 || !strings.Contains(r.stderr, "max_workspaces 5 would be exceeded") {
		t.Errorf("fork over quota: code %d stderr %q", r.code, r.stderr)
	}
	for _, bad := range [][]string{{"workspace", "fork", "ws-1"}, {"workspace", "fork", "ws-1", "--count", "101"}} {
		if r := f.run(t, "", bad...); r.code != 2 {
			t.Errorf("%v: code %d, want 2 (stderr %q)", bad, r.code, r.stderr)
		}
	}

	r = f.run(t, "", "workspace", "pause", "ws-1", "--mode", "full")
	if r.code != 0 || r.stdout != "workspace/ws-1 pause requested (was running)\n" {
		t.Errorf("pause: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if body := f.requests("POST", "/v1/workspaces/ws-1/pause")[0].Body; !jsonEqual(t, body, `{"mode":"full"}`) {
		t.Errorf("pause body %s", body)
	}
	f.phases, f.polls = []string{"running", "paused"}, 0
	r = f.run(t, "", "workspace", "pause", "ws-1", "--wait")
	if r.code != 0 || r.stdout != "workspace/ws-1 paused\n" || r.stderr != "workspace/ws-1 running\nworkspace/ws-1 paused\n" {
		t.Errorf("pause --wait: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	f.phases, f.polls = []string{"running", "failed"}, 0
	r = f.run(t, "", "workspace", "pause", "ws-1", "--wait")
	if r.code != 1 || !strings.Contains(r.stderr, "workspace ws-1: failed, not paused") {
		t.Errorf("pause --wait of a failing workspace: code %d stderr %q", r.code, r.stderr)
	}
	r = f.run(t, "", "workspace", "pause", "ws-p")
	if r.code != 1 || !strings.Contains(r.stderr, "is paused") {
		t.Errorf("pause of a paused workspace: code %d stderr %q", r.code, r.stderr)
	}

	r = f.run(t, "", "workspace", "resume", "ws-1")
	if r.code != 0 || r.stdout != "workspace/ws-1 resume requested (was paused)\n" {
		t.Errorf("resume: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	f.phases, f.polls = []string{"paused", "pending", "running"}, 0
	r = f.run(t, "", "workspace", "resume", "ws-1", "--wait")
	if r.code != 0 || r.stdout != "workspace/ws-1 running\n" || r.stderr != "workspace/ws-1 paused\nworkspace/ws-1 pending\nworkspace/ws-1 running\n" {
		t.Errorf("resume --wait: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = f.run(t, "", "workspace", "resume", "ws-gone")
	if r.code != 1 || !strings.Contains(r.stderr, "workspace ws-gone: not found") {
		t.Errorf("resume unknown: code %d stderr %q", r.code, r.stderr)
	}
}
