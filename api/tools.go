package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
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
	ses, err := s.sessionOf(c, c.Param("id"))
	if err != nil {
		return nil, err
	}
	if open && ses.Status != models.SessionOpen {
		return nil, errs.E(errs.Precondition, "session %s: is ended (%s)", ses.ID, ses.EndReason)
	}
	w, cl, err := s.runtimeFor(c, ses.WorkspaceID)
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
