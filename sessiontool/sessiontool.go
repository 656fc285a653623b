// Package sessiontool runs a session's workspace tools (write, exec, read):
// the one code path of POST /v1/sessions/{id}/tools/{tool} (api/tools.go)
// and of an agent run's tool calls (activities/agentrun). Prepare
// checks a call's arguments, Run runs it and records it as a commit of the
// workspace's .state history (a summary, Tool/Arguments/Result lines and
// Primer-Session and Primer-Tool trailers), so GET /v1/sessions/{id}/history
// lists both alike.
package sessiontool

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
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
	Session   *wire.Session
	Workspace *wire.Workspace
	Client    *client.Client
	// History, when set, keeps the session's last commit outside the
	// sandbox and hears of a rewritten history (integrity.go).
	History History
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
// of its history. The result is an *wire.ToolExecResult, *wire.ToolWriteResult or
// *wire.ToolReadResult; the string is the commit.
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
