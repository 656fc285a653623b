package client

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"
	"unicode/utf8"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Session tools (docs/API.md, "Session tools"). Every call that runs is
// recorded as one commit of the workspace's history, named in the answer.
const (
	ToolExec  = "workspace__exec"
	ToolWrite = "workspace__write"
	ToolRead  = "workspace__read"
)

// ToolExecRequest is a workspace__exec call: Args (a program and its
// arguments) or Command (a script for sh -c), not both.
type ToolExecRequest struct {
	Args    []string          `json:"args,omitempty"`
	Command string            `json:"command,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Stdin   string            `json:"stdin,omitempty"`
	// Timeout is the command's; 0: the server's default (10m).
	Timeout time.Duration `json:"-"`
}

// ToolFile is what ToolRead gives back: workspace__read's answer with
// Content as the file's bytes, decoded from the wire's text or base64.
type ToolFile struct {
	Path    string `json:"path"`
	Content []byte `json:"-"`
	Size    int64  `json:"size"`
	Commit  string `json:"commit"`
}

// DiffOptions names the commits to compare: Commit against its parent, or
// From and To.
type DiffOptions struct {
	Commit   string
	From, To string
}

func toolPath(sessionID, tool string) string {
	return "/v1/sessions/" + seg(sessionID) + "/tools/" + seg(tool)
}

// CallTool calls any session tool with args (marshalled as the JSON body)
// and decodes the answer into out. It has no request timeout: ctx bounds it.
func (c *Client) CallTool(ctx context.Context, sessionID, tool string, args, out any) error {
	if args == nil {
		args = struct{}{}
	}
	return c.doJSONWith(ctx, c.stream, http.MethodPost, toolPath(sessionID, tool), nil, args, out)
}

// ToolExec runs a command for a session and records it.
func (c *Client) ToolExec(ctx context.Context, sessionID string, req ToolExecRequest) (*wire.ToolExecResult, error) {
	body := struct {
		ToolExecRequest
		Timeout string `json:"timeout,omitempty"`
	}{ToolExecRequest: req}
	if req.Timeout > 0 {
		body.Timeout = req.Timeout.String()
	}
	var out wire.ToolExecResult
	if err := c.CallTool(ctx, sessionID, ToolExec, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ToolWrite writes data to path for a session (mode 0: the server's
// default, 0644) and records it.
func (c *Client) ToolWrite(ctx context.Context, sessionID, path string, data []byte, mode os.FileMode) (*wire.ToolWriteResult, error) {
	body := map[string]string{"path": path}
	if utf8.Valid(data) {
		body["content"] = string(data)
	} else {
		body["content"], body["encoding"] = base64.StdEncoding.EncodeToString(data), "base64"
	}
	if mode != 0 {
		body["mode"] = fmt.Sprintf("%04o", mode.Perm())
	}
	var out wire.ToolWriteResult
	if err := c.CallTool(ctx, sessionID, ToolWrite, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ToolRead reads the file at path for a session and records it.
func (c *Client) ToolRead(ctx context.Context, sessionID, path string) (*ToolFile, error) {
	var got wire.ToolReadResult
	if err := c.CallTool(ctx, sessionID, ToolRead, map[string]string{"path": path}, &got); err != nil {
		return nil, err
	}
	out := ToolFile{Path: got.Path, Size: got.Size, Commit: got.Commit}
	switch got.Encoding {
	case "base64":
		b, err := base64.StdEncoding.DecodeString(got.Content)
		if err != nil {
			return nil, wrap(errs.Other, err, "session %s: read %s: decode content", sessionID, path)
		}
		out.Content = b
	default:
		out.Content = []byte(got.Content)
	}
	return &out, nil
}

// SessionHistory lists the session's recorded calls, newest first; with
// includeResumed, also those of the lost sessions it resumes.
func (c *Client) SessionHistory(ctx context.Context, sessionID string, includeResumed bool) (*wire.History, error) {
	var q url.Values
	if includeResumed {
		q = url.Values{"include_resumed": {"true"}}
	}
	return doInto[wire.History](ctx, c, http.MethodGet, "/v1/sessions/"+seg(sessionID)+"/history", q, nil)
}

// SessionDiff compares two commits of the session's workspace.
func (c *Client) SessionDiff(ctx context.Context, sessionID string, opts DiffOptions) (*wire.Diff, error) {
	q := query("commit", opts.Commit, "from", opts.From, "to", opts.To)
	return doInto[wire.Diff](ctx, c, http.MethodGet, "/v1/sessions/"+seg(sessionID)+"/diff", q, nil)
}

// RestoreSession makes the session's workspace files those of commit,
// recorded as a new commit.
func (c *Client) RestoreSession(ctx context.Context, sessionID, commit string) (*wire.Restore, error) {
	body := map[string]string{"commit": commit}
	return doInto[wire.Restore](ctx, c, http.MethodPost, "/v1/sessions/"+seg(sessionID)+"/restore", nil, body)
}
