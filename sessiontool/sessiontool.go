// Package sessiontool runs a session's workspace tools (write, exec, read)
// for an agent run, each call recorded as a commit of the workspace's .state
// history in the format the session tools API records (api/tool_commits.go):
// the same summary, Tool/Arguments/Result lines and Primer-Session and
// Primer-Tool trailers, so GET /v1/sessions/{id}/history lists both alike.
package sessiontool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// Tool names, as the model calls them and as the Primer-Tool trailer.
const (
	Exec  = "workspace__exec"
	Write = "workspace__write"
	Read  = "workspace__read"
	// Assistant is the Primer-Tool trailer of an assistant turn's commit.
	Assistant = "assistant"
)

// Commit trailers and message limits (as api/tool_commits.go).
const (
	TrailerSession = "Primer-Session"
	TrailerTool    = "Primer-Tool"
	// SummaryWidth is the widest a commit's summary line gets.
	SummaryWidth    = 72
	maxRecordedArgs = 16 << 10
	redacted        = "[redacted]"
)

// Limits bound a call: the largest file written or read, and the stdout
// and stderr an exec keeps.
type Limits struct {
	MaxFileBytes int64
	MaxOutput    int
	// DefaultExecTimeout and MaxExecTimeout bound an exec.
	DefaultExecTimeout, MaxExecTimeout time.Duration
}

// Target is a session and its workspace's runtime.
type Target struct {
	Session   *models.Session
	Workspace *models.Workspace
	Client    *client.Client
}

// ExecArgs are workspace__exec's arguments: args or command, not both.
type ExecArgs struct {
	Args    []string          `json:"args"`
	Command string            `json:"command"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	Timeout string            `json:"timeout"`
	Stdin   string            `json:"stdin"`
}

// WriteArgs are workspace__write's arguments.
type WriteArgs struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
}

// ReadArgs are workspace__read's arguments.
type ReadArgs struct {
	Path string `json:"path"`
}

// Call runs the named tool with the model's JSON arguments and returns its
// result as JSON. Errors of kind Invalid are the call's own (bad arguments,
// a missing file or program): the model is told of them. Any other error
// is the platform's.
func Call(ctx context.Context, t Target, lim Limits, tool string, raw json.RawMessage) (json.RawMessage, string, error) {
	var (
		res    any
		commit string
		err    error
	)
	switch tool {
	case Exec:
		var a ExecArgs
		if err = decode(raw, &a); err == nil {
			res, commit, err = runExec(ctx, t, lim, a)
		}
	case Write:
		var a WriteArgs
		if err = decode(raw, &a); err == nil {
			res, commit, err = runWrite(ctx, t, lim, a)
		}
	case Read:
		var a ReadArgs
		if err = decode(raw, &a); err == nil {
			res, commit, err = runRead(ctx, t, lim, a)
		}
	default:
		return nil, "", errs.E(errs.Invalid, "tool %q: not found; the tools are %s, %s and %s", tool, Exec, Read, Write)
	}
	if err != nil {
		return nil, "", err
	}
	b, err := json.Marshal(res)
	return b, commit, err
}

func decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errs.E(errs.Invalid, "arguments: %v", err)
	}
	return nil
}

func runExec(ctx context.Context, t Target, lim Limits, a ExecArgs) (any, string, error) {
	var argv []string
	switch {
	case len(a.Args) > 0 && a.Command != "":
		return nil, "", errs.Field("args", "args and command: give one, not both")
	case len(a.Args) > 0:
		argv = a.Args
	case a.Command != "":
		argv = []string{"sh", "-c", a.Command}
	default:
		return nil, "", errs.Field("args", "args or command: required (args: the program and its arguments; command: a script for sh -c)")
	}
	if argv[0] == "" {
		return nil, "", errs.Field("args", "args[0]: must name the program")
	}
	cwd, err := cleanPath("cwd", a.Cwd)
	if err != nil {
		return nil, "", err
	}
	timeout := lim.DefaultExecTimeout
	if a.Timeout != "" {
		d, err := time.ParseDuration(a.Timeout)
		if err != nil || d <= 0 || (lim.MaxExecTimeout > 0 && d > lim.MaxExecTimeout) {
			return nil, "", errs.Field("timeout", "timeout: %q is not a duration above 0 and at most %s", a.Timeout, lim.MaxExecTimeout)
		}
		timeout = d
	}
	req := protocol.ExecRequest{Args: argv, Env: a.Env, Cwd: cwd, Timeout: timeout}
	if a.Stdin != "" {
		req.Stdin = []byte(a.Stdin)
	}
	stdout, stderr := &capped{max: lim.MaxOutput}, &capped{max: lim.MaxOutput}
	res, err := t.Client.Exec(ctx, req, stdout, stderr)
	if err != nil {
		if errs.Is(err, errs.NotFound) {
			return nil, "", errs.E(errs.Invalid, "workspace %s: %w", t.Workspace.ID, err)
		}
		return nil, "", fmt.Errorf("workspace %s: %w", t.Workspace.ID, err)
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
			env[k] = redacted
		}
		rec["env"] = env
	}
	if a.Timeout != "" {
		rec["timeout"] = a.Timeout
	}
	if a.Stdin != "" {
		rec["stdin_bytes"] = len(a.Stdin)
		rec["stdin_sha256"] = SHA256([]byte(a.Stdin))
	}
	result := map[string]any{
		"exit_code":    res.ExitCode,
		"timed_out":    res.TimedOut,
		"stdout_bytes": stdout.total,
		"stderr_bytes": stderr.total,
		"duration_ms":  res.Duration.Milliseconds(),
	}
	if res.Signal != "" {
		result["signal"] = res.Signal
	}
	commit, err := Record(ctx, t, Exec, Exec+": "+ShellJoin(argv), rec, result)
	if err != nil {
		return nil, "", err
	}
	out := map[string]any{
		"exit_code":   res.ExitCode,
		"stdout":      string(stdout.buf),
		"stderr":      string(stderr.buf),
		"timed_out":   res.TimedOut,
		"duration_ms": res.Duration.Milliseconds(),
		"commit":      commit,
	}
	if res.Signal != "" {
		out["signal"] = res.Signal
	}
	if stdout.truncated || stderr.truncated {
		out["truncated"] = true
	}
	return out, commit, nil
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

// WriteContent decodes a write's content.
func WriteContent(a WriteArgs) ([]byte, error) {
	switch strings.ToLower(a.Encoding) {
	case "", "utf-8", "utf8":
		return []byte(a.Content), nil
	case "base64":
		data, err := base64.StdEncoding.DecodeString(a.Content)
		if err != nil {
			return nil, errs.Field("content", "content: not valid base64: %v", err)
		}
		return data, nil
	}
	return nil, errs.Field("encoding", "encoding: %q is not one of utf-8, base64", a.Encoding)
}

func runWrite(ctx context.Context, t Target, lim Limits, a WriteArgs) (any, string, error) {
	p, err := toolPath(a.Path)
	if err != nil {
		return nil, "", err
	}
	data, err := WriteContent(a)
	if err != nil {
		return nil, "", err
	}
	if lim.MaxFileBytes > 0 && int64(len(data)) > lim.MaxFileBytes {
		return nil, "", errs.E(errs.Invalid, "file %s: %d bytes is over the limit of %d", p, len(data), lim.MaxFileBytes)
	}
	fi, err := t.Client.WriteFileInfo(ctx, p, data, 0)
	if err != nil {
		return nil, "", fmt.Errorf("workspace %s: %w", t.Workspace.ID, err)
	}
	rec := map[string]any{"path": p, "content_bytes": len(data), "content_sha256": SHA256(data)}
	if a.Encoding != "" {
		rec["encoding"] = a.Encoding
	}
	commit, err := Record(ctx, t, Write, fmt.Sprintf("%s: %s (%d bytes)", Write, p, len(data)), rec, map[string]any{"bytes_written": fi.Size})
	if err != nil {
		return nil, "", err
	}
	return map[string]any{"path": p, "size": fi.Size, "commit": commit}, commit, nil
}

func runRead(ctx context.Context, t Target, lim Limits, a ReadArgs) (any, string, error) {
	p, err := toolPath(a.Path)
	if err != nil {
		return nil, "", err
	}
	fi, err := t.Client.Stat(ctx, p)
	if err != nil {
		return nil, "", fileError(t, err)
	}
	if fi.IsDir {
		return nil, "", errs.Field("path", "path %q: is a directory; %s reads files (list with %s: ls)", p, Read, Exec)
	}
	if lim.MaxFileBytes > 0 && fi.Size > lim.MaxFileBytes {
		return nil, "", errs.E(errs.Invalid, "file %s: %d bytes is over the limit of %d", p, fi.Size, lim.MaxFileBytes)
	}
	data, err := t.Client.ReadFile(ctx, p)
	if err != nil {
		return nil, "", fileError(t, err)
	}
	out := map[string]any{"path": p, "size": len(data), "encoding": "utf-8"}
	if utf8.Valid(data) {
		out["content"] = string(data)
	} else {
		out["content"], out["encoding"] = base64.StdEncoding.EncodeToString(data), "base64"
	}
	commit, err := Record(ctx, t, Read, Read+": "+p, map[string]any{"path": p}, map[string]any{"bytes_read": len(data)})
	if err != nil {
		return nil, "", err
	}
	out["commit"] = commit
	return out, commit, nil
}

// fileError names the workspace; a missing file is the call's fault.
func fileError(t Target, err error) error {
	if errs.Is(err, errs.NotFound) {
		return errs.E(errs.Invalid, "workspace %s: %w", t.Workspace.ID, err)
	}
	return fmt.Errorf("workspace %s: %w", t.Workspace.ID, err)
}

// FileSHA256 is the digest of a workspace file, "" if it does not exist.
func FileSHA256(ctx context.Context, cl *client.Client, p string) (string, error) {
	data, err := cl.ReadFile(ctx, p)
	if errs.Is(err, errs.NotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return SHA256(data), nil
}

// Record commits the workspace as it is after a call, with a message
// describing it, and returns the commit's id.
func Record(ctx context.Context, t Target, tool, summary string, args, result any) (string, error) {
	msg, err := CallMessage(t.Session.ID, tool, summary, "", args, result)
	if err != nil {
		return "", err
	}
	return commit(ctx, t, tool, msg)
}

// RecordAssistant commits an assistant turn: its text in the message body.
func RecordAssistant(ctx context.Context, t Target, turn int, text string, toolCalls []string) (string, error) {
	summary := fmt.Sprintf("assistant: turn %d", turn)
	if line, _, _ := strings.Cut(strings.TrimSpace(text), "\n"); line != "" {
		summary += ": " + line
	}
	var result any
	if len(toolCalls) > 0 {
		result = map[string]any{"tool_calls": toolCalls}
	}
	msg, err := CallMessage(t.Session.ID, Assistant, summary, text, map[string]any{"turn": turn}, result)
	if err != nil {
		return "", err
	}
	return commit(ctx, t, Assistant, msg)
}

func commit(ctx context.Context, t Target, tool, msg string) (string, error) {
	name, email := Author(t.Session)
	res, err := t.Client.StateCommit(ctx, protocol.StateCommitParams{AuthorName: name, AuthorEmail: email, Message: msg})
	if err != nil {
		return "", fmt.Errorf("session %s: %s ran, but recording it in the history failed: %w", t.Session.ID, tool, err)
	}
	return res.Commit, nil
}

// Author signs a session's commits: its agent (or "primer"), and an
// address naming the session.
func Author(ses *models.Session) (name, email string) {
	name = strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, ses.Agent)
	if name = strings.TrimSpace(name); name == "" {
		name = "primer"
	}
	return name, ses.ID + "@sessions.primer"
}

// CallMessage is the commit message of a call: a one-line summary, an
// optional text, the tool, its arguments and result as JSON, and the
// trailers.
func CallMessage(sessionID, tool, summary, text string, args, result any) (string, error) {
	var b strings.Builder
	b.WriteString(oneLine(summary, SummaryWidth))
	if text != "" {
		b.WriteString("\n\n")
		b.WriteString(strings.TrimRight(text, "\n"))
	}
	b.WriteString("\n\nTool: ")
	b.WriteString(tool)
	if args != nil {
		js, err := compactJSON(args)
		if err != nil {
			return "", err
		}
		if len(js) > maxRecordedArgs {
			js, _ = compactJSON(map[string]any{"omitted_bytes": len(js), "sha256": SHA256(js)})
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

func compactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode commit message: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

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

// ShellJoin quotes argv the way a shell would read it back.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes s for a shell when it needs it.
func ShellQuote(s string) string {
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

// SHA256 is the hex digest of b.
func SHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// cleanPath checks and cleans a workspace-relative path given in field.
func cleanPath(field, raw string) (string, error) {
	if strings.IndexByte(raw, 0) >= 0 {
		return "", errs.Field(field, "%s %q: contains a NUL byte", field, raw)
	}
	if strings.HasPrefix(raw, "/") {
		return "", errs.Field(field, "%s %q: absolute paths are not allowed; paths are relative to the workspace root", field, raw)
	}
	if raw == "" {
		return "", nil
	}
	p := path.Clean(raw)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", errs.Field(field, "%s %q: escapes the workspace root", field, raw)
	}
	if p == "." {
		return "", nil
	}
	return p, nil
}

// capped keeps the first max bytes written and counts them all.
type capped struct {
	mu        sync.Mutex
	buf       []byte
	max       int
	truncated bool
	total     int64
}

func (b *capped) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	room := b.max - len(b.buf)
	if room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf = append(b.buf, p[:room]...)
		}
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}
