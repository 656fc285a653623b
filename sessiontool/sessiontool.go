// Package sessiontool runs a session's workspace tools (write, exec, read):
// the one code path of POST /v1/sessions/{id}/tools/{tool} (api/tools.go)
// and of an agent run's tool calls (activities/agent_run.go). Prepare
// checks a call's arguments, Run runs it and records it as a commit of the
// workspace's .state history (a summary, Tool/Arguments/Result lines and
// Primer-Session and Primer-Tool trailers), so GET /v1/sessions/{id}/history
// lists both alike.
package sessiontool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"reflect"
	"strconv"
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
	// Mode is the octal permission bits, e.g. "0644"; empty: the
	// runtime's default (0644).
	Mode string `json:"mode"`
}

// ReadArgs are workspace__read's arguments.
type ReadArgs struct {
	Path string `json:"path"`
}

// ExecResult answers workspace__exec: stdout and stderr are cut at the
// call's MaxOutput (Truncated says so); the command ran to its end anyway.
type ExecResult struct {
	ExitCode   int    `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	TimedOut   bool   `json:"timed_out"`
	DurationMS int64  `json:"duration_ms"`
	Signal     string `json:"signal,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	Commit     string `json:"commit"`
}

// WriteResult answers workspace__write.
type WriteResult struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Commit string `json:"commit"`
}

// ReadResult answers workspace__read. Content is the file as text when it
// is valid UTF-8 (encoding "utf-8"), else base64 (encoding "base64").
type ReadResult struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
	Size     int64  `json:"size"`
	Commit   string `json:"commit"`
}

// Call runs the named tool with the model's JSON arguments and returns its
// result as JSON: Prepare, then Run. Errors of kind Invalid are the call's
// own (bad arguments, a missing file or program, a file over the limit,
// an unknown tool): the model is told of them, in the words the session
// tools API answers with. Any other error is the platform's.
func Call(ctx context.Context, t Target, lim Limits, tool string, raw json.RawMessage) (json.RawMessage, string, error) {
	p, err := Prepare(tool, raw, lim)
	if err != nil {
		return nil, "", callError(err)
	}
	res, commit, err := p.Run(ctx, t)
	if err != nil {
		return nil, "", callError(err)
	}
	b, err := json.Marshal(res)
	return b, commit, err
}

// callError gives the errors the API answers 404 or 413 to (an unknown
// tool, a missing file, a file over the limit) the kind of the call's own
// fault, keeping their message.
func callError(err error) error {
	switch errs.KindOf(err) {
	case errs.NotFound, errs.TooLarge:
		return errs.Wrap(errs.Invalid, err)
	}
	return err
}

// Prepared is a call whose arguments are checked; nothing has run yet.
type Prepared struct {
	tool string
	lim  Limits
	// exec
	exec ExecArgs
	argv []string
	req  protocol.ExecRequest
	// write and read
	path  string
	write WriteArgs
	data  []byte
	mode  os.FileMode
}

// Prepare decodes and checks a call's JSON arguments against lim: the one
// check of a session tool call, for the API and an agent run alike. An
// unknown tool is NotFound, content over lim.MaxFileBytes TooLarge, other
// bad arguments Invalid naming the field.
func Prepare(tool string, raw json.RawMessage, lim Limits) (*Prepared, error) {
	p := &Prepared{tool: tool, lim: lim}
	var err error
	switch tool {
	case Exec:
		if err = decode(raw, &p.exec); err == nil {
			p.argv, p.req, err = execRequest(p.exec, lim)
		}
	case Write:
		if err = decode(raw, &p.write); err == nil {
			p.path, p.data, p.mode, err = writeRequest(p.write, lim)
		}
	case Read:
		var a ReadArgs
		if err = decode(raw, &a); err == nil {
			p.path, err = toolPath(a.Path)
		}
	default:
		return nil, CheckTool(tool)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// CheckTool says whether tool is one of the session tools: nil if it is,
// else a NotFound error naming them.
func CheckTool(tool string) error {
	switch tool {
	case Exec, Write, Read:
		return nil
	}
	return errs.E(errs.NotFound, "tool %q: not found; the tools are %s, %s and %s", tool, Exec, Read, Write)
}

// Tool is the prepared call's tool.
func (p *Prepared) Tool() string { return p.tool }

// Run runs the prepared call on t's workspace and records it as a commit
// of its history. The result is an *ExecResult, *WriteResult or
// *ReadResult; the string is the commit.
func (p *Prepared) Run(ctx context.Context, t Target) (any, string, error) {
	switch p.tool {
	case Exec:
		return p.runExec(ctx, t)
	case Write:
		return p.runWrite(ctx, t)
	default:
		return p.runRead(ctx, t)
	}
}

// decode reads a call's arguments: one JSON object, no unknown fields.
// An error names the field at fault, as the API's body errors do.
func decode(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		if dec.More() {
			return errs.E(errs.Invalid, "arguments: unexpected data after the JSON object at offset %d", dec.InputOffset())
		}
		return nil
	case errors.As(err, &typ) && typ.Field != "":
		return errs.Field(typ.Field, "%s: expected %s, got %s", typ.Field, jsonType(typ.Type), typ.Value)
	case errors.As(err, &typ):
		return errs.E(errs.Invalid, "arguments: expected a JSON object, got %s", typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for it; its message is stable.
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return errs.Field(name, "%s: unknown field", name)
	}
	return errs.E(errs.Invalid, "arguments: malformed JSON: %v", err)
}

// jsonType names a Go type as the JSON it decodes from.
func jsonType(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "a number"
	}
	return "a " + t.String()
}

// execRequest checks an exec's arguments: the program (args, or command
// for sh -c), env, cwd inside the workspace and the timeout.
func execRequest(a ExecArgs, lim Limits) ([]string, protocol.ExecRequest, error) {
	var argv []string
	switch {
	case len(a.Args) > 0 && a.Command != "":
		return nil, protocol.ExecRequest{}, errs.Field("args", "args and command: give one, not both")
	case len(a.Args) > 0:
		if a.Args[0] == "" {
			return nil, protocol.ExecRequest{}, errs.Field("args", "args[0]: must name the program")
		}
		for i, s := range a.Args {
			if strings.IndexByte(s, 0) >= 0 {
				return nil, protocol.ExecRequest{}, errs.Field("args", "args[%d]: contains a NUL byte", i)
			}
		}
		argv = a.Args
	case a.Command != "":
		if strings.IndexByte(a.Command, 0) >= 0 {
			return nil, protocol.ExecRequest{}, errs.Field("command", "command: contains a NUL byte")
		}
		argv = []string{"sh", "-c", a.Command}
	default:
		return nil, protocol.ExecRequest{}, errs.Field("args", "args or command: required (args: the program and its arguments; command: a script for sh -c)")
	}
	req, err := ExecOptions(a.Env, a.Cwd, a.Timeout, lim)
	if err != nil {
		return nil, protocol.ExecRequest{}, err
	}
	req.Args = argv
	if a.Stdin != "" {
		req.Stdin = []byte(a.Stdin)
	}
	return argv, req, nil
}

// ExecOptions checks an exec's env (names, no NUL bytes), cwd (inside the
// workspace) and timeout (a duration within lim) and returns the request
// without its program: the session tools and the workspace exec API check
// them alike.
func ExecOptions(env map[string]string, cwd, timeout string, lim Limits) (protocol.ExecRequest, error) {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return protocol.ExecRequest{}, errs.Field("env", "env: invalid variable name %q", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return protocol.ExecRequest{}, errs.Field("env."+k, "env.%s: value contains a NUL byte", k)
		}
	}
	dir, err := CleanPath("cwd", cwd)
	if err != nil {
		return protocol.ExecRequest{}, err
	}
	d := lim.DefaultExecTimeout
	if timeout != "" {
		var err error
		d, err = time.ParseDuration(timeout)
		switch {
		case err != nil:
			return protocol.ExecRequest{}, errs.Field("timeout", "timeout: %q is not a duration (e.g. 30s, 5m)", timeout)
		case d <= 0:
			return protocol.ExecRequest{}, errs.Field("timeout", "timeout: %s must be above 0", d)
		case lim.MaxExecTimeout > 0 && d > lim.MaxExecTimeout:
			return protocol.ExecRequest{}, errs.Field("timeout", "timeout: %s must be above 0 and at most %s", d, lim.MaxExecTimeout)
		}
	}
	return protocol.ExecRequest{Env: env, Cwd: dir, Timeout: d}, nil
}

func (p *Prepared) runExec(ctx context.Context, t Target) (any, string, error) {
	a := p.exec
	stdout, stderr := NewCapped(p.lim.MaxOutput), NewCapped(p.lim.MaxOutput)
	res, err := t.Client.Exec(ctx, p.req, stdout, stderr)
	if err != nil {
		// A program or cwd that does not exist is the call's fault.
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
		"stdout_bytes": stdout.Total(),
		"stderr_bytes": stderr.Total(),
		"duration_ms":  res.Duration.Milliseconds(),
	}
	if res.Signal != "" {
		result["signal"] = res.Signal
	}
	// A failing command (exit code not 0) is recorded like any other: it
	// ran, and it may have changed files.
	commit, err := Record(ctx, t, Exec, Exec+": "+ShellJoin(p.argv), rec, result)
	if err != nil {
		return nil, "", err
	}
	return &ExecResult{
		ExitCode:   res.ExitCode,
		Stdout:     stdout.String(),
		Stderr:     stderr.String(),
		TimedOut:   res.TimedOut,
		DurationMS: res.Duration.Milliseconds(),
		Signal:     res.Signal,
		Truncated:  stdout.Truncated() || stderr.Truncated(),
		Commit:     commit,
	}, commit, nil
}

// toolPath checks the path of a read or write: a file inside the
// workspace, outside its history.
func toolPath(raw string) (string, error) {
	if raw == "" {
		return "", errs.Field("path", "path: required")
	}
	p, err := CleanPath("path", raw)
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

// writeRequest checks a write's arguments: the path, the content (within
// lim.MaxFileBytes) and the mode.
func writeRequest(a WriteArgs, lim Limits) (string, []byte, os.FileMode, error) {
	p, err := toolPath(a.Path)
	if err != nil {
		return "", nil, 0, err
	}
	data, err := WriteContent(a)
	if err != nil {
		return "", nil, 0, err
	}
	if lim.MaxFileBytes > 0 && int64(len(data)) > lim.MaxFileBytes {
		return "", nil, 0, errs.E(errs.TooLarge, "file %s: %d bytes is over the limit of %d", p, len(data), lim.MaxFileBytes)
	}
	var mode os.FileMode
	if a.Mode != "" {
		n, err := strconv.ParseUint(a.Mode, 8, 32)
		if err != nil || n > 0o777 {
			return "", nil, 0, errs.Field("mode", "mode: %q is not an octal permission between 0 and 0777 (e.g. \"0644\")", a.Mode)
		}
		mode = os.FileMode(n)
	}
	return p, data, mode, nil
}

func (p *Prepared) runWrite(ctx context.Context, t Target) (any, string, error) {
	fi, err := t.Client.WriteFileInfo(ctx, p.path, p.data, p.mode)
	if err != nil {
		return nil, "", fmt.Errorf("workspace %s: %w", t.Workspace.ID, err)
	}
	// Never the content: its size and digest say what was written.
	rec := map[string]any{"path": p.path, "content_bytes": len(p.data), "content_sha256": SHA256(p.data)}
	if p.write.Mode != "" {
		rec["mode"] = p.write.Mode
	}
	if p.write.Encoding != "" {
		rec["encoding"] = p.write.Encoding
	}
	summary := fmt.Sprintf("%s: %s (%d bytes)", Write, p.path, len(p.data))
	commit, err := Record(ctx, t, Write, summary, rec, map[string]any{"bytes_written": fi.Size})
	if err != nil {
		return nil, "", err
	}
	return &WriteResult{Path: p.path, Size: fi.Size, Commit: commit}, commit, nil
}

func (p *Prepared) runRead(ctx context.Context, t Target) (any, string, error) {
	fi, err := t.Client.Stat(ctx, p.path)
	if err != nil {
		return nil, "", fmt.Errorf("workspace %s: %w", t.Workspace.ID, err)
	}
	if fi.IsDir {
		return nil, "", errs.Field("path", "path %q: is a directory; %s reads files (list with %s: ls)", p.path, Read, Exec)
	}
	if p.lim.MaxFileBytes > 0 && fi.Size > p.lim.MaxFileBytes {
		return nil, "", errs.E(errs.TooLarge, "file %s: %d bytes is over the limit of %d", p.path, fi.Size, p.lim.MaxFileBytes)
	}
	data, err := t.Client.ReadFile(ctx, p.path)
	if err != nil {
		return nil, "", fmt.Errorf("workspace %s: %w", t.Workspace.ID, err)
	}
	out := &ReadResult{Path: p.path, Size: int64(len(data)), Encoding: "utf-8"}
	if utf8.Valid(data) {
		out.Content = string(data)
	} else {
		out.Content, out.Encoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	if out.Commit, err = Record(ctx, t, Read, Read+": "+p.path, map[string]any{"path": p.path}, map[string]any{"bytes_read": len(data)}); err != nil {
		return nil, "", err
	}
	return out, out.Commit, nil
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
func CleanPath(field, raw string) (string, error) {
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

// Capped keeps the first max bytes written to it, notes what it dropped
// and counts every byte; writes never fail, so a chatty command still runs
// to its end. The session tools and the workspace exec API cut output
// with it.
type Capped struct {
	mu        sync.Mutex
	buf       []byte
	max       int
	truncated bool
	total     int64
}

// NewCapped keeps up to max bytes.
func NewCapped(max int) *Capped { return &Capped{max: max} }

func (b *Capped) Write(p []byte) (int, error) {
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

// String is what was kept.
func (b *Capped) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Total is how many bytes were written, kept or not.
func (b *Capped) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// Truncated says some bytes were dropped.
func (b *Capped) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.truncated
}
