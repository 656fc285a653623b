package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// maxInstructions bounds the instructions of an agent run.
const maxInstructions = 1 << 20

// checkRun checks what an agent run on workspace w needs: the agent (and
// its provider) visible to the caller, instructions, a running workspace.
func (s *server) checkRun(c *gin.Context, w *wire.Workspace, spec wire.RunAgentRequest) (*wire.Agent, error) {
	if spec.Agent == "" {
		return nil, errs.Field("agent", "agent: required with instructions (the id of a kind: agent document)")
	}
	if strings.TrimSpace(spec.Instructions) == "" {
		return nil, errs.Field("instructions", "instructions: required to run an agent")
	}
	if len(spec.Instructions) > maxInstructions {
		return nil, errs.Field("instructions", "instructions: %d bytes is over the limit of %d", len(spec.Instructions), maxInstructions)
	}
	ag, err := s.agentOf(c, spec.Agent)
	if err != nil {
		return nil, asRef(err, "agent", "agent", spec.Agent)
	}
	if _, err := s.llmProviderOf(c, ag.Model.ProviderID); err != nil {
		if errs.Is(err, errs.NotFound) {
			return nil, errs.Field("agent", "agent %s: model.provider_id: llm provider %s not found", ag.ID, ag.Model.ProviderID)
		}
		return nil, err
	}
	if w.Phase != wire.PhaseRunning {
		return nil, errs.E(errs.Precondition, "workspace %s: is %s, not running; an agent runs on a running workspace", w.ID, w.Phase)
	}
	return ag, nil
}

// runSession starts the agent run of the session in the path.
func (s *server) runSession(c *gin.Context) {
	var spec wire.RunAgentRequest
	if err := s.decodeJSONLimit(c, &spec, "", false, s.cfg.MaxJSONBytes+maxInstructions); err != nil {
		s.fail(c, err)
		return
	}
	ses, err := s.sessionOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if ses.Status != wire.SessionOpen {
		s.fail(c, errs.E(errs.Precondition, "session %s: is ended (%s)", ses.ID, ses.EndReason))
		return
	}
	w, err := s.workspaceOf(c, ses.WorkspaceID)
	if err == nil {
		err = hostWorkspace(c, w)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	ag, err := s.checkRun(c, w, spec)
	if err != nil {
		s.fail(c, err)
		return
	}
	run, err := s.cfg.Starter.StartSessionRun(c.Request.Context(), ses, ag.ID, spec.Instructions)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, run)
}

// cancelSession cancels the session's agent run.
func (s *server) cancelSession(c *gin.Context) {
	ses, err := s.sessionOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cfg.Starter.CancelSessionRun(c.Request.Context(), ses.ID); err != nil {
		if errs.Is(err, errs.NotFound) {
			err = errs.E(errs.Precondition, "session %s: has no agent run", ses.ID)
		}
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, wire.SessionCancel{SessionID: ses.ID, Status: "cancel requested"})
}

// sessionTranscript returns the session's transcript, or follows it as
// Server-Sent Events (Accept: text/event-stream or ?follow=true) until
// the run ends.
func (s *server) sessionTranscript(c *gin.Context) {
	ses, err := s.sessionOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	if c.Query("follow") == "true" || strings.Contains(c.GetHeader("Accept"), "text/event-stream") {
		// Only a run ends a stream: a session without one is refused.
		if _, err := s.cfg.Store.GetSessionRun(ctx, ses.ID); err != nil {
			if errs.Is(err, errs.NotFound) {
				err = errs.E(errs.Precondition, "session %s: has no agent run to follow", ses.ID)
			}
			s.fail(c, err)
			return
		}
		s.followTranscript(c, ses.ID)
		return
	}
	out := wire.Transcript{SessionID: ses.ID}
	if run, err := s.cfg.Store.GetSessionRun(ctx, ses.ID); err == nil {
		out.Run = run
	} else if !errs.Is(err, errs.NotFound) {
		s.fail(c, err)
		return
	}
	if out.Items, err = s.cfg.Store.Transcript(ctx, ses.ID, 0); err != nil {
		s.fail(c, err)
		return
	}
	for _, e := range out.Items {
		out.Usage.InputTokens += e.InputTokens
		out.Usage.OutputTokens += e.OutputTokens
	}
	c.JSON(http.StatusOK, out)
}

// followTranscript streams each entry once it is final (a tool call once
// it finished), in order, then an "end" event with the run when it ended.
func (s *server) followTranscript(c *gin.Context, sessionID string) {
	ctx := c.Request.Context()
	release, ok := s.startSSE(c)
	if !ok {
		return
	}
	defer release()
	after := 0
	if v := c.GetHeader("Last-Event-ID"); v != "" {
		after, _ = strconv.Atoi(v)
	}
	poll := time.NewTicker(s.eventPoll)
	defer poll.Stop()
	lastWrite := time.Now()
	for {
		wake := s.cfg.Store.WaitTranscript(sessionID)
		// The run is read first: entries read after it are all there are
		// once it has ended.
		run, rerr := s.cfg.Store.GetSessionRun(ctx, sessionID)
		es, err := s.cfg.Store.Transcript(ctx, sessionID, after)
		if err == nil && rerr != nil && !errs.Is(rerr, errs.NotFound) {
			err = rerr
		}
		if err != nil {
			if ctx.Err() == nil {
				writeSSEError(c, err)
			}
			return
		}
		ended := run != nil && run.Status == wire.AgentEnded
		for i := range es {
			e := &es[i]
			if e.Role == wire.RoleTool && e.State != wire.ToolFinished && !ended {
				break
			}
			data, _ := json.Marshal(e)
			if _, err := fmt.Fprintf(c.Writer, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Role, data); err != nil {
				return
			}
			after, lastWrite = e.Seq, time.Now()
		}
		c.Writer.Flush()
		if ended || (rerr != nil && len(es) == 0) {
			if run != nil {
				data, _ := json.Marshal(run)
				fmt.Fprintf(c.Writer, "event: end\ndata: %s\n\n", data)
				c.Writer.Flush()
			}
			return
		}
		if !s.sseWake(c, wake, poll.C, &lastWrite) {
			return
		}
	}
}
