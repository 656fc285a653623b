package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/sessiontool"
	"github.com/primerhq/primer/wire"
)

// Session tools: what an agent calls through POST /v1/sessions/{id}/tools/{tool}.
// Every call that runs is recorded as one commit of the workspace's history
// (the runtime's git repository under .state), so a session's work can be
// listed, diffed and restored. The calls run through sessiontool, as an
// agent run's do: one check of the arguments, one way to run and record.
const (
	ToolExec  = sessiontool.Exec
	ToolWrite = sessiontool.Write
	ToolRead  = sessiontool.Read
	// ToolRestore is the Primer-Tool trailer of a restore's commit.
	ToolRestore = "restore"
)

// The tools' answers.
type (
	execToolResult  = wire.ToolExecResult
	writeToolResult = wire.ToolWriteResult
	readToolResult  = wire.ToolReadResult
)

// sessionTarget is a session and its workspace's runtime.
type sessionTarget struct {
	ses *wire.Session
	ws  *wire.Workspace
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
	if open && ses.Status != wire.SessionOpen {
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

// toolLimits bound the API's tool calls: files as large as the files API
// takes, output as much as a workspace exec keeps.
func (s *server) toolLimits() sessiontool.Limits {
	return sessiontool.Limits{
		MaxFileBytes:       s.cfg.MaxFileBytes,
		MaxOutput:          s.maxExecOutput,
		DefaultExecTimeout: DefaultExecTimeout,
		MaxExecTimeout:     MaxExecTimeout,
	}
}

// sessionTool runs one tool call and records it as a commit. The body is
// the call's arguments; they are checked before the session is looked at.
func (s *server) sessionTool(c *gin.Context) {
	tool := c.Param("tool")
	if err := sessiontool.CheckTool(tool); err != nil {
		s.fail(c, err)
		return
	}
	limit := s.cfg.MaxJSONBytes
	if tool == ToolWrite {
		// The content travels inside the JSON body, escaped (or base64):
		// the body may be larger than the file it carries. The decoded
		// content is held to MaxFileBytes by sessiontool. It is read into
		// memory, so it counts as an upload against the tenant's cap.
		limit += 2 * s.cfg.MaxFileBytes
		release, ok := s.openUpload(c)
		if !ok {
			return
		}
		defer release()
	}
	var raw json.RawMessage
	if err := s.decodeJSONLimit(c, &raw, "", false, limit); err != nil {
		s.fail(c, err)
		return
	}
	call, err := sessiontool.Prepare(tool, raw, s.toolLimits())
	if err != nil {
		s.fail(c, err)
		return
	}
	t, err := s.sessionTarget(c, true)
	if err != nil {
		s.fail(c, err)
		return
	}
	tg := t.target()
	tg.History = s.cfg.Store
	res, _, err := call.Run(c.Request.Context(), tg)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

// target is the session and runtime as sessiontool takes them.
func (t *sessionTarget) target() sessiontool.Target {
	return sessiontool.Target{Session: t.ses, Workspace: t.ws, Client: t.cl}
}
