package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// Session tools: what an agent calls through POST /v1/sessions/{id}/tools/{tool}.
// Every call that runs is recorded as one commit of the workspace's history
// (the runtime's git repository under .state), so a session's work can be
// listed, diffed and restored.
const (
	ToolExec  = "workspace__exec"
	ToolWrite = "workspace__write"
	ToolRead  = "workspace__read"
	// ToolRestore is the Primer-Tool trailer of a restore's commit.
	ToolRestore = "restore"
)

// Trailers of a tool call's commit.
const (
	TrailerSession = "Primer-Session"
	TrailerTool    = "Primer-Tool"
)

// Commit message limits: git's customary summary width, and the most of a
// call's arguments kept in the message (beyond it only their size and
// digest are).
const (
	summaryWidth      = 72
	maxRecordedArgs   = 16 << 10
	redactedValue     = "[redacted]"
	defaultAuthorName = "primer"
)

// toolNames lists the tools for the message of an unknown tool.
const toolNames = ToolExec + ", " + ToolRead + " and " + ToolWrite

// execToolArgs is the body of workspace__exec: args (a program and its
// arguments) or command (a sh -c script), not both.
type execToolArgs struct {
	Args    []string          `json:"args"`
	Command string            `json:"command"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	Timeout string            `json:"timeout"`
	Stdin   string            `json:"stdin"`
}

// execToolResult answers workspace__exec.
type execToolResult struct {
	ExitCode   int    `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	TimedOut   bool   `json:"timed_out"`
	DurationMS int64  `json:"duration_ms"`
	Signal     string `json:"signal,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	Commit     string `json:"commit"`
}

// writeToolArgs is the body of workspace__write.
type writeToolArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// Encoding of Content: "utf-8" (the default) or "base64".
	Encoding string `json:"encoding"`
	// Mode is the octal permission bits, e.g. "0644"; empty: the runtime's
	// default (0644).
	Mode string `json:"mode"`
}

// writeToolResult answers workspace__write.
type writeToolResult struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Commit string `json:"commit"`
}

// readToolArgs is the body of workspace__read.
type readToolArgs struct {
	Path string `json:"path"`
}

// readToolResult answers workspace__read. Content is the file as text when
// it is valid UTF-8 (encoding "utf-8"), else base64 (encoding "base64").
type readToolResult struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
	Size     int64  `json:"size"`
	Commit   string `json:"commit"`
}

// restoreSpec is the body of POST /v1/sessions/{id}/restore.
type restoreSpec struct {
	Commit string `json:"commit"`
}

// restoreResult answers a restore.
type restoreResult struct {
	// Commit is the new commit that records the restored files.
	Commit       string                 `json:"commit"`
	RestoredFrom string                 `json:"restored_from"`
	Changed      []protocol.StateChange `json:"changed"`
}

// historyEntry is one recorded call, as GET /v1/sessions/{id}/history lists it.
type historyEntry struct {
	Commit  string    `json:"commit"`
	Session string    `json:"session"`
	Tool    string    `json:"tool"`
	Time    time.Time `json:"time"`
	Author  string    `json:"author"`
	Summary string    `json:"summary"`
	// Arguments and Result are the JSON the call recorded: env values,
	// file contents and stdin are never in them (sizes and digests are).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
}

// historyResponse answers GET /v1/sessions/{id}/history.
type historyResponse struct {
	Items []historyEntry `json:"items"`
	// ResumedFrom is the lost session this one resumes, if any.
	ResumedFrom string `json:"resumed_from,omitempty"`
}

// diffResult answers GET /v1/sessions/{id}/diff.
type diffResult struct {
	From      string                 `json:"from"`
	To        string                 `json:"to"`
	Files     []protocol.StateChange `json:"files"`
	Patch     string                 `json:"patch"`
	Truncated bool                   `json:"truncated,omitempty"`
}

// sessionTarget is a session and its workspace's runtime.
type sessionTarget struct {
	ses *models.Session
	ws  *models.Workspace
	cl  *client.Client
}

// sessionTarget loads the session in the path and its workspace's runtime.
// With open, the session must be open (409 naming why it ended); the
// workspace must be running (409 naming its phase) in any case.
func (s *server) sessionTarget(c *gin.Context, open bool) (*sessionTarget, error) {
	ctx := c.Request.Context()
	ses, err := s.cfg.Store.GetSession(ctx, c.Param("id"))
	if err != nil {
		return nil, err
	}
	if open && ses.Status != models.SessionOpen {
		return nil, errs.E(errs.Precondition, "session %s: is ended (%s)", ses.ID, ses.EndReason)
	}
	w, cl, err := s.runtimeFor(ctx, ses.WorkspaceID)
	if errs.Is(err, errs.NotFound) {
		return nil, errs.E(errs.NotFound, "session %s: workspace %s: not found (the history went with it)", ses.ID, ses.WorkspaceID)
	}
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", ses.ID, err)
	}
	return &sessionTarget{ses: ses, ws: w, cl: cl}, nil
}

// sessionTool runs one tool call and records it as a commit.
func (s *server) sessionTool(c *gin.Context) {
	switch tool := c.Param("tool"); tool {
	case ToolExec:
		s.toolExec(c)
	case ToolWrite:
		s.toolWrite(c)
	case ToolRead:
		s.toolRead(c)
	default:
		s.fail(c, errs.E(errs.NotFound, "tool %q: not found; the tools are %s", tool, toolNames))
	}
}

func (s *server) toolExec(c *gin.Context) {
	var a execToolArgs
	if err := s.decodeJSON(c, &a, "", false); err != nil {
		s.fail(c, err)
		return
	}
	var argv []string
	switch {
	case len(a.Args) > 0 && a.Command != "":
		s.fail(c, errs.Field("args", "args and command: give one, not both"))
		return
	case len(a.Args) > 0:
		if a.Args[0] == "" {
			s.fail(c, errs.Field("args", "args[0]: must name the program"))
			return
		}
		argv = a.Args
	case a.Command != "":
		argv = []string{"sh", "-c", a.Command}
	default:
		s.fail(c, errs.Field("args", "args or command: required (args: the program and its arguments; command: a script for sh -c)"))
		return
	}
	spec := execSpec{Command: argv, Env: a.Env, Cwd: a.Cwd, Stdin: a.Stdin, Timeout: a.Timeout}
	req, err := spec.request()
	if err != nil {
		s.fail(c, err)
		return
	}
	t, err := s.sessionTarget(c, true)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	stdout := &cappedBuffer{max: s.maxExecOutput}
	stderr := &cappedBuffer{max: s.maxExecOutput}
	res, err := t.cl.Exec(ctx, req, stdout, stderr)
	if err != nil {
		s.fail(c, execError(t.ws.ID, err))
		return
	}

	rec := map[string]any{}
	if len(a.Args) > 0 {
		rec["args"] = a.Args
	} else {
		rec["command"] = a.Command
	}
	if a.Cwd != "" {
		rec["cwd"] = a.Cwd
	}
	if len(a.Env) > 0 {
		env := make(map[string]string, len(a.Env))
		for k := range a.Env {
			env[k] = redactedValue
		}
		rec["env"] = env
	}
	if a.Timeout != "" {
		rec["timeout"] = a.Timeout
	}
	if a.Stdin != "" {
		rec["stdin_bytes"] = len(a.Stdin)
		rec["stdin_sha256"] = sha256Hex([]byte(a.Stdin))
	}
	result := map[string]any{
		"exit_code":    res.ExitCode,
		"timed_out":    res.TimedOut,
		"stdout_bytes": stdout.Total(),
		"stderr_bytes": stderr.Total(),
		"duration_ms":  res.Duration.Milliseconds(),
	}
	if res.Signal != "" {
		result["signal"] = res.Signal
	}
	// A failing command (exit code not 0) is recorded like any other: it
	// ran, and it may have changed files.
	commit, err := s.recordCall(ctx, t, ToolExec, ToolExec+": "+shellJoin(argv), rec, result)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, execToolResult{
		ExitCode:   res.ExitCode,
		Stdout:     stdout.String(),
		Stderr:     stderr.String(),
		TimedOut:   res.TimedOut,
		DurationMS: res.Duration.Milliseconds(),
		Signal:     res.Signal,
		Truncated:  stdout.truncated || stderr.truncated,
		Commit:     commit,
	})
}

// toolPath checks the path of a read or write: a file inside the
// workspace, outside its history.
func toolPath(raw string) (string, error) {
	if raw == "" {
		return "", errs.Field("path", "path: required")
	}
	p, err := cleanPath("path", raw)
	if err != nil {
		return "", err
	}
	if p == "" {
		return "", errs.Field("path", "path %q: is the workspace root, not a file", raw)
	}
	if p == protocol.StateDir || strings.HasPrefix(p, protocol.StateDir+"/") {
		return "", errs.Field("path", "path %q: %s holds the workspace's history and is not open to tools", raw, protocol.StateDir)
	}
	return p, nil
}

func (s *server) toolWrite(c *gin.Context) {
	var a writeToolArgs
	// The content travels inside the JSON body, escaped (or base64): the
	// body may be larger than the file it carries. The decoded content is
	// held to MaxFileBytes below.
	if err := s.decodeJSONLimit(c, &a, "", false, s.cfg.MaxJSONBytes+2*s.cfg.MaxFileBytes); err != nil {
		s.fail(c, err)
		return
	}
	p, err := toolPath(a.Path)
	if err != nil {
		s.fail(c, err)
		return
	}
	var data []byte
	switch strings.ToLower(a.Encoding) {
	case "", "utf-8", "utf8":
		data = []byte(a.Content)
	case "base64":
		if data, err = base64.StdEncoding.DecodeString(a.Content); err != nil {
			s.fail(c, errs.Field("content", "content: not valid base64: %v", err))
			return
		}
	default:
		s.fail(c, errs.Field("encoding", "encoding: %q is not one of utf-8, base64", a.Encoding))
		return
	}
	if int64(len(data)) > s.cfg.MaxFileBytes {
		s.fail(c, errs.E(errs.TooLarge, "file %s: %d bytes is over the limit of %d", p, len(data), s.cfg.MaxFileBytes))
		return
	}
	var mode os.FileMode
	if a.Mode != "" {
		n, err := strconv.ParseUint(a.Mode, 8, 32)
		if err != nil || n > 0o777 {
			s.fail(c, errs.Field("mode", "mode: %q is not an octal permission between 0 and 0777 (e.g. \"0644\")", a.Mode))
			return
		}
		mode = os.FileMode(n)
	}
	t, err := s.sessionTarget(c, true)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	fi, err := t.cl.WriteFileInfo(ctx, p, data, mode)
	if err != nil {
		s.fail(c, fileError(t.ws, err))
		return
	}
	// Never the content: its size and digest say what was written.
	rec := map[string]any{"path": p, "content_bytes": len(data), "content_sha256": sha256Hex(data)}
	if a.Mode != "" {
		rec["mode"] = a.Mode
	}
	if a.Encoding != "" {
		rec["encoding"] = a.Encoding
	}
	result := map[string]any{"bytes_written": fi.Size}
	summary := fmt.Sprintf("%s: %s (%d bytes)", ToolWrite, p, len(data))
	commit, err := s.recordCall(ctx, t, ToolWrite, summary, rec, result)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, writeToolResult{Path: p, Size: fi.Size, Commit: commit})
}

func (s *server) toolRead(c *gin.Context) {
	var a readToolArgs
	if err := s.decodeJSON(c, &a, "", false); err != nil {
		s.fail(c, err)
		return
	}
	p, err := toolPath(a.Path)
	if err != nil {
		s.fail(c, err)
		return
	}
	t, err := s.sessionTarget(c, true)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	fi, err := t.cl.Stat(ctx, p)
	if err != nil {
		s.fail(c, fileError(t.ws, err))
		return
	}
	if fi.IsDir {
		s.fail(c, errs.Field("path", "path %q: is a directory; %s reads files (list with %s: ls)", p, ToolRead, ToolExec))
		return
	}
	if fi.Size > s.cfg.MaxFileBytes {
		s.fail(c, errs.E(errs.TooLarge, "file %s: %d bytes is over the limit of %d", p, fi.Size, s.cfg.MaxFileBytes))
		return
	}
	data, err := t.cl.ReadFile(ctx, p)
	if err != nil {
		s.fail(c, fileError(t.ws, err))
		return
	}
	out := readToolResult{Path: p, Size: int64(len(data)), Encoding: "utf-8"}
	if utf8.Valid(data) {
		out.Content = string(data)
	} else {
		out.Content, out.Encoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	rec := map[string]any{"path": p}
	result := map[string]any{"bytes_read": len(data)}
	if out.Commit, err = s.recordCall(ctx, t, ToolRead, ToolRead+": "+p, rec, result); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// recordCall commits the workspace as it is after a tool call, with a
// message describing the call, and returns the commit's id.
func (s *server) recordCall(ctx context.Context, t *sessionTarget, tool, summary string, args, result any) (string, error) {
	msg, err := callMessage(t.ses.ID, tool, summary, args, result)
	if err != nil {
		return "", err
	}
	name, email := author(t.ses)
	res, err := t.cl.StateCommit(ctx, protocol.StateCommitParams{AuthorName: name, AuthorEmail: email, Message: msg})
	if err != nil {
		// The call ran: say so, so nobody repeats it blindly.
		return "", fmt.Errorf("session %s: %s ran, but recording it in the history failed: %w", t.ses.ID, tool, err)
	}
	return res.Commit, nil
}

// author signs a session's commits: its agent (or "primer"), and an address
// naming the session.
func author(ses *models.Session) (name, email string) {
	name = strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, ses.Agent)
	if name = strings.TrimSpace(name); name == "" {
		name = defaultAuthorName
	}
	return name, ses.ID + "@sessions.primer"
}

// callMessage is the commit message of a call: a one-line summary, a body
// with the tool, its arguments and its result as JSON, and the trailers
// that tie the commit to its session and tool.
func callMessage(sessionID, tool, summary string, args, result any) (string, error) {
	var b strings.Builder
	b.WriteString(oneLine(summary, summaryWidth))
	b.WriteString("\n\nTool: ")
	b.WriteString(tool)
	if args != nil {
		js, err := compactJSON(args)
		if err != nil {
			return "", err
		}
		if len(js) > maxRecordedArgs {
			js, _ = compactJSON(map[string]any{"omitted_bytes": len(js), "sha256": sha256Hex(js)})
		}
		b.WriteString("\nArguments: ")
		b.Write(js)
	}
	if result != nil {
		js, err := compactJSON(result)
		if err != nil {
			return "", err
		}
		b.WriteString("\nResult: ")
		b.Write(js)
	}
	b.WriteString("\n\n" + TrailerSession + ": " + sessionID)
	b.WriteString("\n" + TrailerTool + ": " + tool + "\n")
	return b.String(), nil
}

// compactJSON encodes v on one line, without HTML escaping.
func compactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode commit message: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// oneLine makes s a single line of at most width characters: control
// characters become spaces, and a longer line ends in "...".
func oneLine(s string, width int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-3]) + "..."
}

// shellJoin quotes argv the way a shell would read it back.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// commitID checks a commit id given in field: 40 hex digits.
func commitID(field, id string) error {
	if id == "" {
		return errs.Field(field, "%s: required", field)
	}
	if len(id) != 40 {
		return errs.Field(field, "%s %q: want a commit id of 40 hex digits", field, id)
	}
	if _, err := hex.DecodeString(id); err != nil {
		return errs.Field(field, "%s %q: want a commit id of 40 hex digits", field, id)
	}
	return nil
}

// sessionHistory lists the session's recorded calls, newest first. With
// ?include_resumed=true the calls of the lost sessions it resumes (and
// those they resumed) are listed too.
func (s *server) sessionHistory(c *gin.Context) {
	t, err := s.sessionTarget(c, false)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	sessions := map[string]bool{t.ses.ID: true}
	params := protocol.StateLogParams{TrailerKey: TrailerSession, TrailerValue: t.ses.ID}
	if boolQuery(c, "include_resumed") && t.ses.ResumedFrom != "" {
		// The chain is short (a session is resumed at most once); the
		// bound only guards against a cycle in bad data.
		for id, hops := t.ses.ResumedFrom, 0; id != "" && hops < 64 && !sessions[id]; hops++ {
			sessions[id] = true
			prev, err := s.cfg.Store.GetSession(ctx, id)
			if err != nil {
				break
			}
			id = prev.ResumedFrom
		}
		// One walk of the history for every session of the chain.
		params.TrailerValue = ""
	}
	res, err := t.cl.StateLog(ctx, params)
	if err != nil {
		s.fail(c, fmt.Errorf("session %s: workspace %s: %w", t.ses.ID, t.ws.ID, err))
		return
	}
	out := historyResponse{Items: []historyEntry{}, ResumedFrom: t.ses.ResumedFrom}
	for _, cm := range res.Commits {
		if !sessions[cm.Trailers[TrailerSession]] {
			continue
		}
		out.Items = append(out.Items, entryOf(cm))
	}
	c.JSON(http.StatusOK, out)
}

// entryOf reads a recorded call back from its commit.
func entryOf(cm protocol.StateCommit) historyEntry {
	e := historyEntry{
		Commit:  cm.Commit,
		Session: cm.Trailers[TrailerSession],
		Tool:    cm.Trailers[TrailerTool],
		Time:    cm.Time,
		Author:  cm.AuthorName,
	}
	lines := strings.Split(cm.Message, "\n")
	e.Summary = lines[0]
	for _, l := range lines[1:] {
		switch {
		case strings.HasPrefix(l, "Arguments: "):
			e.Arguments = rawOrString(strings.TrimPrefix(l, "Arguments: "))
		case strings.HasPrefix(l, "Result: "):
			e.Result = rawOrString(strings.TrimPrefix(l, "Result: "))
		}
	}
	return e
}

// rawOrString is v as JSON when it is JSON, else v as a JSON string (a
// message written by hand).
func rawOrString(v string) json.RawMessage {
	if json.Valid([]byte(v)) {
		return json.RawMessage(v)
	}
	b, _ := json.Marshal(v)
	return b
}

// sessionDiff compares two commits of the session's workspace: ?commit=X
// (X against its parent) or ?from=A&to=B.
func (s *server) sessionDiff(c *gin.Context) {
	commit, from, to := c.Query("commit"), c.Query("from"), c.Query("to")
	switch {
	case commit != "" && (from != "" || to != ""):
		s.fail(c, errs.Field("commit", "commit: give commit, or from and to, not both"))
		return
	case commit != "":
		if err := commitID("commit", commit); err != nil {
			s.fail(c, err)
			return
		}
		to = commit
	case from == "" && to == "":
		s.fail(c, errs.Field("commit", "commit (or from and to): required"))
		return
	}
	for _, q := range []struct{ field, v string }{{"from", from}, {"to", to}} {
		if q.v == "" {
			continue
		}
		if err := commitID(q.field, q.v); err != nil {
			s.fail(c, err)
			return
		}
	}
	t, err := s.sessionTarget(c, false)
	if err != nil {
		s.fail(c, err)
		return
	}
	res, err := t.cl.StateDiff(c.Request.Context(), protocol.StateDiffParams{From: from, To: to})
	if err != nil {
		s.fail(c, fmt.Errorf("session %s: workspace %s: %w", t.ses.ID, t.ws.ID, err))
		return
	}
	files := res.Files
	if files == nil {
		files = []protocol.StateChange{}
	}
	c.JSON(http.StatusOK, diffResult{From: res.From, To: res.To, Files: files, Patch: res.Patch, Truncated: res.Truncated})
}

// sessionRestore makes the workspace's files those of a commit, recorded
// as a new commit of the session.
func (s *server) sessionRestore(c *gin.Context) {
	var spec restoreSpec
	if err := s.decodeJSON(c, &spec, "", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := commitID("commit", spec.Commit); err != nil {
		s.fail(c, err)
		return
	}
	t, err := s.sessionTarget(c, true)
	if err != nil {
		s.fail(c, err)
		return
	}
	// The message is written before the restore, so it has no result.
	msg, err := callMessage(t.ses.ID, ToolRestore, ToolRestore+": "+spec.Commit, map[string]string{"commit": spec.Commit}, nil)
	if err != nil {
		s.fail(c, err)
		return
	}
	name, email := author(t.ses)
	res, err := t.cl.StateRestore(c.Request.Context(), protocol.StateRestoreParams{
		Commit:            spec.Commit,
		StateCommitParams: protocol.StateCommitParams{AuthorName: name, AuthorEmail: email, Message: msg},
	})
	if err != nil {
		s.fail(c, fmt.Errorf("session %s: workspace %s: %w", t.ses.ID, t.ws.ID, err))
		return
	}
	s.log.Info("session restored", "session_id", t.ses.ID, "workspace_id", t.ws.ID, "restored_from", res.RestoredFrom, "commit", res.Commit)
	changed := res.Changed
	if changed == nil {
		changed = []protocol.StateChange{}
	}
	c.JSON(http.StatusOK, restoreResult{Commit: res.Commit, RestoredFrom: res.RestoredFrom, Changed: changed})
}
