package api

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/sessiontool"
	"github.com/primerhq/primer/wire"
)

// session opens a session on workspace w through the API.
func (h *harness) session(w *wire.Workspace, agent string) *wire.Session {
	h.t.Helper()
	var ses wire.Session
	h.do("POST", "/v1/sessions", fmt.Sprintf(`{"workspace_id":%q,"agent":%q}`, w.ID, agent)).expect(h.t, 201).decode(h.t, &ses)
	return &ses
}

func TestSessionToolsErrors(t *testing.T) {
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	ses := h.session(w, "claude")
	ended := h.session(w, "claude")
	if _, err := h.store.EndSession(context.Background(), ended.ID, wire.ReasonWorkspaceLost); err != nil {
		t.Fatal(err)
	}
	pending := h.workspace(wire.PhasePending)
	onPending := h.session(pending, "")
	base := "/v1/sessions/" + ses.ID

	tests := []struct {
		name, method, path, body string
		status                   int
		code, field, msg         string
	}{
		{"unknown tool", "POST", base + "/tools/workspace__delete", `{}`, 404, "not_found", "", `"workspace__delete"`},
		{"unknown session", "POST", "/v1/sessions/ses-0000000000000000/tools/workspace__read", `{"path":"a"}`, 404, "not_found", "", "ses-0000000000000000"},
		{"ended session", "POST", "/v1/sessions/" + ended.ID + "/tools/workspace__exec", `{"command":"true"}`, 409, "failed_precondition", "", "is ended (workspace_lost)"},
		{"workspace not running", "POST", "/v1/sessions/" + onPending.ID + "/tools/workspace__exec", `{"command":"true"}`, 409, "failed_precondition", "", "is pending, not running"},
		{"malformed", "POST", base + "/tools/workspace__exec", `{"command":`, 400, "invalid", "", "malformed"},
		{"unknown field", "POST", base + "/tools/workspace__exec", `{"cmd":"ls"}`, 400, "invalid", "cmd", "unknown field"},
		{"no command", "POST", base + "/tools/workspace__exec", `{}`, 400, "invalid", "args", "required"},
		{"args and command", "POST", base + "/tools/workspace__exec", `{"args":["ls"],"command":"ls"}`, 400, "invalid", "args", "not both"},
		{"bad timeout", "POST", base + "/tools/workspace__exec", `{"command":"true","timeout":"soon"}`, 400, "invalid", "timeout", ""},
		{"cwd escapes", "POST", base + "/tools/workspace__exec", `{"command":"true","cwd":"../x"}`, 400, "invalid", "cwd", "escapes"},
		{"write escapes", "POST", base + "/tools/workspace__write", `{"path":"../x","content":"a"}`, 400, "invalid", "path", "escapes"},
		{"write absolute", "POST", base + "/tools/workspace__write", `{"path":"/etc/passwd","content":"a"}`, 400, "invalid", "path", "absolute"},
		{"write history", "POST", base + "/tools/workspace__write", `{"path":".state/HEAD","content":"a"}`, 400, "invalid", "path", ".state"},
		{"write bad mode", "POST", base + "/tools/workspace__write", `{"path":"a","content":"a","mode":"rwx"}`, 400, "invalid", "mode", ""},
		{"write bad base64", "POST", base + "/tools/workspace__write", `{"path":"a","content":"!!","encoding":"base64"}`, 400, "invalid", "content", "base64"},
		{"write too large", "POST", base + "/tools/workspace__write", `{"path":"a","content":"` + strings.Repeat("a", 64<<10+1) + `"}`, 413, "too_large", "", "limit"},
		{"read missing", "POST", base + "/tools/workspace__read", `{"path":"nope.txt"}`, 404, "not_found", "", ""},
		{"read no path", "POST", base + "/tools/workspace__read", `{}`, 400, "invalid", "path", "required"},
		{"diff without commit", "GET", base + "/diff", ``, 400, "invalid", "commit", "required"},
		{"diff bad commit", "GET", base + "/diff?commit=abc", ``, 400, "invalid", "commit", "40 hex"},
		{"diff unknown commit", "GET", base + "/diff?commit=" + strings.Repeat("a", 40), ``, 404, "not_found", "", ""},
		{"restore missing commit", "POST", base + "/restore", `{}`, 400, "invalid", "commit", "required"},
		{"restore bad commit", "POST", base + "/restore", `{"commit":"HEAD"}`, 400, "invalid", "commit", "40 hex"},
		{"restore unknown commit", "POST", base + "/restore", `{"commit":"` + strings.Repeat("b", 40) + `"}`, 404, "not_found", "", ""},
		{"restore ended session", "POST", "/v1/sessions/" + ended.ID + "/restore", `{"commit":"` + strings.Repeat("b", 40) + `"}`, 409, "failed_precondition", "", "ended"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.body != "" {
				body = tt.body
			}
			h.do(tt.method, tt.path, body).expectError(t, tt.status, tt.code, tt.field, tt.msg)
		})
	}
	// An oversized body of a JSON-only tool is 413 like any JSON body.
	big := `{"command":"` + strings.Repeat("a", DefaultMaxJSONBytes) + `"}`
	h.do("POST", base+"/tools/workspace__exec", big).expectError(t, 413, "too_large", "", "limit")

	// None of the refused calls recorded anything.
	var hist wire.History
	h.do("GET", base+"/history", nil).expect(t, 200).decode(t, &hist)
	if len(hist.Items) != 0 {
		t.Fatalf("refused calls left history %+v", hist.Items)
	}
}

func TestSessionToolsRoundTrip(t *testing.T) {
	h := newHarness(t)
	w, dir := h.runningWorkspace()
	ses := h.session(w, "claude")
	other := h.session(w, "")
	base := "/v1/sessions/" + ses.ID
	const secret = "sk-env-secret-value"
	const content = "top secret file body\n"

	// exec: a command that writes a file and fails.
	var ex execToolResult
	h.do("POST", base+"/tools/workspace__exec", map[string]any{
		"command": "echo made > made.txt; echo $TOKEN | wc -c; exit 3",
		"env":     map[string]string{"TOKEN": secret},
	}).expect(t, 200).decode(t, &ex)
	if ex.ExitCode != 3 || strings.TrimSpace(ex.Stdout) != fmt.Sprint(len(secret)+1) || len(ex.Commit) != 40 {
		t.Fatalf("exec = %+v", ex)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "made.txt")); err != nil || string(data) != "made\n" {
		t.Fatalf("made.txt = %q (%v)", data, err)
	}

	// write, then read it back.
	var wr writeToolResult
	h.do("POST", base+"/tools/workspace__write", map[string]any{"path": "notes/a.txt", "content": content, "mode": "0600"}).
		expect(t, 200).decode(t, &wr)
	if wr.Path != "notes/a.txt" || wr.Size != int64(len(content)) || len(wr.Commit) != 40 || wr.Commit == ex.Commit {
		t.Fatalf("write = %+v", wr)
	}
	if fi, err := os.Stat(filepath.Join(dir, "notes/a.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("written file: %v %v", fi, err)
	}
	var rd readToolResult
	h.do("POST", base+"/tools/workspace__read", `{"path":"notes/a.txt"}`).expect(t, 200).decode(t, &rd)
	if rd.Content != content || rd.Encoding != "utf-8" || rd.Size != int64(len(content)) || len(rd.Commit) != 40 {
		t.Fatalf("read = %+v", rd)
	}

	// Another session's call is in the workspace's history, not in ours.
	h.do("POST", "/v1/sessions/"+other.ID+"/tools/workspace__exec", `{"args":["true"]}`).expect(t, 200)

	// History: our three calls, newest first, with what they did.
	var hist wire.History
	h.do("GET", base+"/history", nil).expect(t, 200).decode(t, &hist)
	if len(hist.Items) != 3 {
		t.Fatalf("history = %+v", hist.Items)
	}
	wantTools := []string{ToolRead, ToolWrite, ToolExec}
	wantCommits := []string{rd.Commit, wr.Commit, ex.Commit}
	for i, e := range hist.Items {
		if e.Tool != wantTools[i] || e.Commit != wantCommits[i] || e.Session != ses.ID || e.Author != "claude" || e.Time.IsZero() {
			t.Fatalf("history[%d] = %+v", i, e)
		}
	}
	exe := hist.Items[2]
	if !strings.HasPrefix(exe.Summary, "workspace__exec: sh -c 'echo made") || len(exe.Summary) > 72 {
		t.Errorf("exec summary %q", exe.Summary)
	}
	var args struct {
		Command string            `json:"command"`
		Env     map[string]string `json:"env"`
	}
	var res struct {
		ExitCode    int `json:"exit_code"`
		StdoutBytes int `json:"stdout_bytes"`
	}
	if json.Unmarshal(exe.Arguments, &args) != nil || args.Env["TOKEN"] != "[redacted]" || !strings.Contains(args.Command, "made.txt") {
		t.Errorf("exec arguments %s", exe.Arguments)
	}
	if json.Unmarshal(exe.Result, &res) != nil || res.ExitCode != 3 || res.StdoutBytes != len(ex.Stdout) {
		t.Errorf("exec result %s", exe.Result)
	}
	if !strings.Contains(string(hist.Items[1].Arguments), `"content_sha256"`) || !strings.Contains(string(hist.Items[1].Result), fmt.Sprintf(`"bytes_written":%d`, len(content))) {
		t.Errorf("write entry %+v", hist.Items[1])
	}

	// The raw commits: the trailers, and never an env value or the content.
	stored, err := h.store.GetWorkspace(context.Background(), w.ID)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := h.srv.cfg.Connector.Client(context.Background(), stored)
	if err != nil {
		t.Fatal(err)
	}
	log, err := cl.StateLog(context.Background(), protocol.StateLogParams{})
	if err != nil || len(log.Commits) != 4 {
		t.Fatalf("state log: %d commits (%v)", len(log.Commits), err)
	}
	for _, c := range log.Commits {
		if strings.Contains(c.Message, secret) || strings.Contains(c.Message, strings.TrimSpace(content)) {
			t.Errorf("commit %s message leaks a secret or the content:\n%s", c.Commit, c.Message)
		}
		if c.Trailers[TrailerSession] == "" || c.Trailers[TrailerTool] == "" ||
			!strings.HasSuffix(c.AuthorEmail, "@sessions.primer") || c.AuthorEmail != c.Trailers[TrailerSession]+"@sessions.primer" {
			t.Errorf("commit %s: trailers %v author %s <%s>", c.Commit, c.Trailers, c.AuthorName, c.AuthorEmail)
		}
	}
	if a := log.Commits[0]; a.AuthorName != "primer" || a.Trailers[TrailerSession] != other.ID {
		t.Errorf("other session's commit: %+v", a)
	}

	// Diff of the write: the file, added.
	var d wire.Diff
	h.do("GET", base+"/diff?commit="+wr.Commit, nil).expect(t, 200).decode(t, &d)
	if len(d.Files) != 1 || d.Files[0].Path != "notes/a.txt" || d.Files[0].Change != protocol.ChangeAdded ||
		!strings.Contains(d.Patch, "+top secret file body") || d.To != wr.Commit || d.From != ex.Commit {
		t.Fatalf("diff = %+v", d)
	}
	// from/to spans the exec and the write.
	h.do("GET", base+"/diff?from="+ex.Commit+"&to="+rd.Commit, nil).expect(t, 200).decode(t, &d)
	if len(d.Files) != 1 || d.Files[0].Path != "notes/a.txt" {
		t.Fatalf("diff from..to = %+v", d)
	}
	h.do("GET", base+"/diff?commit="+wr.Commit+"&from="+ex.Commit, nil).expectError(t, 400, "invalid", "commit", "not both")

	// Change the file, then restore the commit of the write.
	h.do("POST", base+"/tools/workspace__write", `{"path":"notes/a.txt","content":"overwritten"}`).expect(t, 200)
	h.do("POST", base+"/tools/workspace__exec", `{"args":["rm","made.txt"]}`).expect(t, 200)
	var rs wire.Restore
	h.do("POST", base+"/restore", fmt.Sprintf(`{"commit":%q}`, wr.Commit)).expect(t, 200).decode(t, &rs)
	if rs.RestoredFrom != wr.Commit || len(rs.Commit) != 40 || len(rs.Changed) != 2 {
		t.Fatalf("restore = %+v", rs)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "notes/a.txt")); err != nil || string(data) != content {
		t.Fatalf("restored notes/a.txt = %q (%v)", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "made.txt")); err != nil || string(data) != "made\n" {
		t.Fatalf("restored made.txt = %q (%v)", data, err)
	}
	h.do("GET", base+"/history", nil).expect(t, 200).decode(t, &hist)
	if len(hist.Items) != 6 || hist.Items[0].Tool != ToolRestore || hist.Items[0].Commit != rs.Commit ||
		!strings.Contains(string(hist.Items[0].Arguments), wr.Commit) {
		t.Fatalf("history after restore = %+v", hist.Items)
	}

	// Binary content goes in and out as base64.
	h.do("POST", base+"/tools/workspace__write", `{"path":"bin","content":"AAH//g==","encoding":"base64"}`).expect(t, 200).decode(t, &wr)
	h.do("POST", base+"/tools/workspace__read", `{"path":"bin"}`).expect(t, 200).decode(t, &rd)
	if wr.Size != 4 || rd.Encoding != "base64" || rd.Content != "AAH//g==" {
		t.Fatalf("binary: write %+v read %+v", wr, rd)
	}
}

func TestSessionHistoryIncludesResumed(t *testing.T) {
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	lost := h.session(w, "agent")
	h.do("POST", "/v1/sessions/"+lost.ID+"/tools/workspace__exec", `{"args":["true"]}`).expect(t, 200)
	ctx := context.Background()
	if _, err := h.store.EndSession(ctx, lost.ID, wire.ReasonWorkspaceLost); err != nil {
		t.Fatal(err)
	}
	resumed, err := h.store.ResumeLostSessions(ctx, w.ID, lost.CreatedAt.Add(-1))
	if err != nil || len(resumed) != 1 {
		t.Fatalf("resume: %+v %v", resumed, err)
	}
	next := resumed[0]
	h.do("POST", "/v1/sessions/"+next.ID+"/tools/workspace__read", `{"path":"nope"}`).expect(t, 404)
	h.do("POST", "/v1/sessions/"+next.ID+"/tools/workspace__write", `{"path":"x","content":"y"}`).expect(t, 200)

	var hist wire.History
	h.do("GET", "/v1/sessions/"+next.ID+"/history", nil).expect(t, 200).decode(t, &hist)
	if hist.ResumedFrom != lost.ID || len(hist.Items) != 1 || hist.Items[0].Tool != ToolWrite {
		t.Fatalf("history = %+v", hist)
	}
	h.do("GET", "/v1/sessions/"+next.ID+"/history?include_resumed=true", nil).expect(t, 200).decode(t, &hist)
	if len(hist.Items) != 2 || hist.Items[1].Session != lost.ID || hist.Items[0].Session != next.ID {
		t.Fatalf("history with resumed = %+v", hist.Items)
	}
	// The lost session's history is still readable; it cannot call tools.
	h.do("GET", "/v1/sessions/"+lost.ID+"/history", nil).expect(t, 200).decode(t, &hist)
	if len(hist.Items) != 1 {
		t.Fatalf("lost session history = %+v", hist.Items)
	}
}

// TestSessionToolsOnePath: the same bad call gets the same refusal through
// the API and through sessiontool.Call as an agent run makes it: the same
// message and field; the API answers with its status, the agent's error is
// the call's own (Invalid) for the model to read. None of them commits.
func TestSessionToolsOnePath(t *testing.T) {
	h := newHarness(t)
	w, dir := h.runningWorkspace()
	ses := h.session(w, "claude")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w, err := h.store.GetWorkspace(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := h.srv.cfg.Connector.Client(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	target := sessiontool.Target{Session: ses, Workspace: w, Client: cl}

	tests := []struct {
		name, tool, args string
		status           int
		field            string
	}{
		{"write path leaves the workspace", ToolWrite, `{"path":"notes/../../escape.txt","content":"a"}`, 400, "path"},
		{"read path leaves the workspace", ToolRead, `{"path":"../../etc/passwd"}`, 400, "path"},
		{"exec cwd leaves the workspace", ToolExec, `{"command":"true","cwd":"sub/../.."}`, 400, "cwd"},
		{"absolute path", ToolRead, `{"path":"/etc/passwd"}`, 400, "path"},
		{"history path", ToolWrite, `{"path":".state/config","content":"a"}`, 400, "path"},
		{"write without path", ToolWrite, `{"content":"a"}`, 400, "path"},
		{"read without path", ToolRead, `{}`, 400, "path"},
		{"exec without program", ToolExec, `{"cwd":"sub"}`, 400, "args"},
		{"unknown argument", ToolRead, `{"path":"a","offset":3}`, 400, "offset"},
		{"wrong type", ToolExec, `{"args":"ls"}`, 400, "args"},
		{"bad timeout", ToolExec, `{"command":"true","timeout":"-1s"}`, 400, "timeout"},
		{"bad mode", ToolWrite, `{"path":"a","content":"a","mode":"rwx"}`, 400, "mode"},
		{"too large", ToolWrite, `{"path":"a","content":"` + strings.Repeat("a", 64<<10+1) + `"}`, 413, ""},
		// Refused by the workspace, after the arguments passed.
		{"missing file", ToolRead, `{"path":"nope.txt"}`, 404, ""},
		{"directory", ToolRead, `{"path":"sub"}`, 400, "path"},
		{"missing program", ToolExec, `{"args":["no-such-program-xyz"]}`, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do("POST", "/v1/sessions/"+ses.ID+"/tools/"+tt.tool, tt.args)
			if r.status != tt.status {
				t.Fatalf("API status %d, want %d; body %s", r.status, tt.status, r.body)
			}
			apiErr := r.envelope(t)
			_, _, err := sessiontool.Call(ctx, target, h.srv.toolLimits(), tt.tool, json.RawMessage(tt.args))
			if err == nil {
				t.Fatal("sessiontool.Call: no error")
			}
			if err.Error() != apiErr.Message {
				t.Errorf("messages differ:\n API:   %s\n agent: %s", apiErr.Message, err)
			}
			if f := errs.FieldOf(err); f != tt.field || apiErr.Details["field"] != f {
				t.Errorf("fields: API %v, agent %q, want %q", apiErr.Details["field"], f, tt.field)
			}
			if !errs.Is(err, errs.Invalid) {
				t.Errorf("agent error kind %v, want Invalid (the model is told)", errs.KindOf(err))
			}
		})
	}
	var hist wire.History
	h.do("GET", "/v1/sessions/"+ses.ID+"/history", nil).expect(t, 200).decode(t, &hist)
	if len(hist.Items) != 0 {
		t.Fatalf("refused calls left history %+v", hist.Items)
	}
}
