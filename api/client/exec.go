package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// ExecRequest is a command to run in a workspace.
type ExecRequest struct {
	WorkspaceID string
	Command     []string // argv; must not be empty
	Env         map[string]string
	// Cwd is relative to the workspace root (empty: the root), or absolute
	// on a workspace whose backend isolates it.
	Cwd string
	// User is the sandbox user the command runs as; empty: the
	// template's, else root.
	User    string
	Stdin   string
	Timeout time.Duration // 0: the server's default (10m)
}

func (r ExecRequest) body(stream bool) wire.ExecSpec {
	b := wire.ExecSpec{Command: r.Command, Env: r.Env, Cwd: r.Cwd, User: r.User, Stdin: r.Stdin, Stream: stream}
	if r.Timeout > 0 {
		b.Timeout = r.Timeout.String()
	}
	return b
}

func (r ExecRequest) check() error {
	if r.WorkspaceID == "" {
		return errs.Field("workspace_id", "exec: workspace id is empty")
	}
	if len(r.Command) == 0 {
		return errs.Field("command", "workspace %s: exec: command is empty", r.WorkspaceID)
	}
	return nil
}

// Exec runs a command in a workspace and returns its exit code and output
// once it ends. A non-zero exit code is not an error. The call has no
// request timeout (the command may run up to req.Timeout); ctx bounds it, and
// canceling ctx cancels the command.
func (c *Client) Exec(ctx context.Context, req ExecRequest) (*wire.ExecResponse, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(req.body(false))
	if err != nil {
		return nil, wrap(errs.Invalid, err, "workspace %s: exec: encode body", req.WorkspaceID)
	}
	resp, err := c.send(ctx, c.stream, request{
		method: http.MethodPost, path: "/v1/workspaces/" + seg(req.WorkspaceID) + "/exec",
		body: bytes.NewReader(b), contentType: "application/json", accept: "application/json",
	})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out wire.ExecResponse
	if err := decodeBody(resp, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// execLine is one line of the NDJSON exec stream.
type execLine struct {
	Stream string             `json:"stream"`
	Data   string             `json:"data"`
	Exit   *wire.ExecResponse `json:"exit"`
	Error  *struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

// ExecStream runs a command in a workspace, copying its output to stdout and
// stderr as it arrives (either may be nil to drop that stream), and returns
// its exit code once it ends. A non-zero exit code is not an error; an error
// the server reports mid-stream is an *Error. Canceling ctx cancels the
// command.
func (c *Client) ExecStream(ctx context.Context, req ExecRequest, stdout, stderr io.Writer) (*wire.ExecResponse, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(req.body(true))
	if err != nil {
		return nil, wrap(errs.Invalid, err, "workspace %s: exec: encode body", req.WorkspaceID)
	}
	resp, err := c.send(ctx, c.stream, request{
		method: http.MethodPost, path: "/v1/workspaces/" + seg(req.WorkspaceID) + "/exec",
		body: bytes.NewReader(b), contentType: "application/json", accept: "application/x-ndjson",
	})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	// ReadBytes, not a Scanner: one output chunk may be longer than any
	// fixed line limit.
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, rerr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var l execLine
			if err := json.Unmarshal(line, &l); err != nil {
				return nil, wrap(errs.Other, err, "workspace %s: exec: bad stream line %.80q", req.WorkspaceID, line)
			}
			switch {
			case l.Exit != nil:
				return l.Exit, nil
			case l.Error != nil:
				e := &Error{Status: resp.StatusCode, Code: l.Error.Code, Message: l.Error.Message}
				if f, ok := l.Error.Details["field"].(string); ok {
					e.Field = f
				}
				if e.Code == "" {
					e.Code = errs.Other.String()
				}
				return nil, e
			case l.Stream == "stdout":
				if _, err := io.WriteString(stdout, l.Data); err != nil {
					return nil, wrap(errs.Other, err, "workspace %s: exec: write stdout", req.WorkspaceID)
				}
			case l.Stream == "stderr":
				if _, err := io.WriteString(stderr, l.Data); err != nil {
					return nil, wrap(errs.Other, err, "workspace %s: exec: write stderr", req.WorkspaceID)
				}
			}
			// Lines of other shapes come from newer servers; skip them.
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return nil, errs.E(errs.Unavailable, "workspace %s: exec: stream ended before the exit status", req.WorkspaceID)
			}
			return nil, transportError(ctx, request{method: http.MethodPost, path: resp.Request.URL.Path}, rerr)
		}
	}
}
