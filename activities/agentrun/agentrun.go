package agentrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/activities/llm"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/sessiontool"
	"github.com/primerhq/primer/wire"
)

// Agent runs (workflows.SessionRunWorkflow). The activities read and write
// the session's transcript in the database: workflow history carries only
// the session id, turn numbers, transcript sequence numbers and tool names.
// The provider's key is read from the store in ModelCall and goes nowhere
// but the model request's header.

// Error types of a model call that failed.
const (
	ErrModelRetryable = "ModelRetryable" // 429, 5xx, no answer: retried
	ErrModelFailed    = "ModelFailed"    // other answers: the run fails with the message
)

// agentToolLimits bound an agent's tool calls: what a result hands back to
// the model is kept small, the files as large as the files API allows.
var agentToolLimits = sessiontool.Limits{
	MaxFileBytes:       64 << 20,
	MaxOutput:          64 << 10,
	DefaultExecTimeout: 10 * time.Minute,
	MaxExecTimeout:     24 * time.Hour,
}

// StartRunInput names the session whose run starts.
type StartRunInput struct {
	SessionID string
}

// StartRunOutput is the run's limits, read from its agent; Ended is the
// session's end reason if it has already ended.
type StartRunOutput struct {
	MaxTurns int
	Timeout  time.Duration
	Ended    string `json:",omitempty"`
}

// ModelCallInput is one model call of a run: turn is 1-based.
type ModelCallInput struct {
	SessionID string
	Turn      int
}

// ToolCallRef is a tool call the model asked for: its transcript entry.
type ToolCallRef struct {
	Seq  int
	Name string
}

// ModelCallOutput is the turn's tool calls (none: the run is complete) and
// its token usage; Ended is the session's end reason if it ended meanwhile
// (workspace_lost).
type ModelCallOutput struct {
	ToolCalls    []ToolCallRef `json:",omitempty"`
	InputTokens  int
	OutputTokens int
	Ended        string `json:",omitempty"`
}

// ToolCallInput is one tool call: the transcript entry the model call made.
type ToolCallInput struct {
	SessionID string
	Seq       int
}

// ToolCallOutput says how the call went; Ended as in ModelCallOutput.
type ToolCallOutput struct {
	IsError bool   `json:",omitempty"`
	Doubt   bool   `json:",omitempty"` // found started: may or may not have run
	Ended   string `json:",omitempty"`
}

// EndRunInput ends a run and its session.
type EndRunInput struct {
	SessionID string
	Reason    string
	Error     string `json:",omitempty"`
	Turns     int
}

// EndRunOutput is empty.
type EndRunOutput struct{}

// ResumeRunInput names a run that ended workspace_lost.
type ResumeRunInput struct {
	SessionID string
}

// ResumeRunOutput names the session that resumes it, once there is one;
// that session has the run (agent and transcript) to continue.
type ResumeRunOutput struct {
	Successor string `json:",omitempty"`
}

// ResumeRun looks for the session that resumes a lost one (the workspace's
// recovery makes it) and gives it the lost session's run.
func (a *Activities) ResumeRun(ctx context.Context, in ResumeRunInput) (ResumeRunOutput, error) {
	next, err := a.Store.ResumedSession(ctx, in.SessionID)
	if errs.Is(err, errs.NotFound) {
		return ResumeRunOutput{}, nil
	}
	if err != nil {
		return ResumeRunOutput{}, activities.Classify(err)
	}
	if _, err := a.Store.ResumeSessionRun(ctx, in.SessionID, next.ID); err != nil {
		return ResumeRunOutput{}, activities.Classify(err)
	}
	a.logger().Info("agent run resumed", "session_id", next.ID, "resumed_from", in.SessionID)
	return ResumeRunOutput{Successor: next.ID}, nil
}

// StartRun reads the run's agent for its limits.
func (a *Activities) StartRun(ctx context.Context, in StartRunInput) (StartRunOutput, error) {
	ses, ag, err := a.runOf(ctx, in.SessionID)
	if err != nil {
		return StartRunOutput{}, activities.Classify(err)
	}
	if ses.Status != wire.SessionOpen {
		return StartRunOutput{Ended: ses.EndReason}, nil
	}
	timeout, err := time.ParseDuration(ag.Timeout)
	if err != nil || timeout <= 0 {
		timeout, _ = time.ParseDuration(wire.DefaultAgentTimeout)
	}
	maxTurns := ag.MaxTurns
	if maxTurns <= 0 {
		maxTurns = wire.DefaultAgentMaxTurns
	}
	return StartRunOutput{MaxTurns: maxTurns, Timeout: timeout}, nil
}

// EndRun records how the run ended and ends its session (a session that
// already ended, as a lost workspace's, keeps its reason).
func (a *Activities) EndRun(ctx context.Context, in EndRunInput) (EndRunOutput, error) {
	r, err := a.Store.EndSessionRun(ctx, in.SessionID, in.Reason, in.Error, in.Turns)
	if err != nil {
		return EndRunOutput{}, activities.Classify(err)
	}
	a.logger().Info("agent run ended", "session_id", in.SessionID, "reason", r.EndReason, "turns", r.Turns)
	return EndRunOutput{}, nil
}

func (a *Activities) runOf(ctx context.Context, sessionID string) (*wire.Session, *wire.Agent, error) {
	ses, err := a.Store.GetSession(ctx, sessionID)
	if err != nil {
		return nil, nil, err
	}
	run, err := a.Store.GetSessionRun(ctx, sessionID)
	if err != nil {
		return nil, nil, err
	}
	ag, err := a.Store.GetAgent(ctx, run.AgentID)
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: %w", sessionID, err)
	}
	return ses, ag, nil
}

// sessionTarget connects to the session's workspace runtime.
func (a *Activities) sessionTarget(ctx context.Context, ses *wire.Session) (sessiontool.Target, error) {
	ws, err := a.Store.GetWorkspace(ctx, ses.WorkspaceID)
	if err != nil {
		return sessiontool.Target{}, fmt.Errorf("session %s: %w", ses.ID, err)
	}
	if ws.Phase != wire.PhaseRunning {
		// Not a lasting state: a failing workspace ends the session
		// workspace_lost, which the next attempt sees.
		return sessiontool.Target{}, errs.E(errs.Unavailable, "session %s: workspace %s: is %s, not running", ses.ID, ws.ID, ws.Phase)
	}
	cl, err := a.Connector.Client(ctx, ws)
	if err != nil {
		return sessiontool.Target{}, errs.E(errs.Unavailable, "session %s: workspace %s: runtime: %w", ses.ID, ws.ID, err)
	}
	return sessiontool.Target{Session: ses, Workspace: ws, Client: cl, History: a.Store}, nil
}

// ModelCall makes turn in.Turn's model call: the request is built from the
// transcript, the answer appended to it and recorded as a .state commit.
// A turn already in the transcript (a retry after the answer was stored)
// is not asked again.
func (a *Activities) ModelCall(ctx context.Context, in ModelCallInput) (ModelCallOutput, error) {
	// Heartbeats: a worker killed mid-call is noticed within the heartbeat
	// timeout, and a canceled run's cancel reaches the call.
	defer activities.KeepAliveInterruptible(ctx)()
	ses, ag, err := a.runOf(ctx, in.SessionID)
	if err != nil {
		return ModelCallOutput{}, activities.Classify(err)
	}
	if ses.Status != wire.SessionOpen {
		return ModelCallOutput{Ended: ses.EndReason}, nil
	}
	es, err := a.Store.Transcript(ctx, ses.ID, 0)
	if err != nil {
		return ModelCallOutput{}, activities.Classify(err)
	}
	turn := turnEntries(es, in.Turn)
	if len(turn) == 0 {
		if turn, err = a.askModel(ctx, ses, ag, es, in.Turn); err != nil {
			var end *sessionEnded
			if errors.As(err, &end) {
				return ModelCallOutput{Ended: end.reason}, nil
			}
			return ModelCallOutput{}, err
		}
	}
	asst := &turn[0]
	if asst.Commit == "" {
		t, err := a.sessionTarget(ctx, ses)
		if err != nil {
			return ModelCallOutput{}, activities.Classify(err)
		}
		var names []string
		for _, e := range turn[1:] {
			names = append(names, e.ToolName)
		}
		if asst.Commit, err = sessiontool.RecordAssistant(ctx, t, in.Turn, asst.Content, names); err != nil {
			return ModelCallOutput{}, activities.Classify(err)
		}
		if err := a.Store.UpdateTranscriptEntry(ctx, asst); err != nil {
			return ModelCallOutput{}, activities.Classify(err)
		}
	}
	out := ModelCallOutput{InputTokens: asst.InputTokens, OutputTokens: asst.OutputTokens}
	for _, e := range turn[1:] {
		out.ToolCalls = append(out.ToolCalls, ToolCallRef{Seq: e.Seq, Name: e.ToolName})
	}
	return out, nil
}

// sessionEnded is a session found ended during a model call.
type sessionEnded struct{ reason string }

func (e *sessionEnded) Error() string { return "session ended: " + e.reason }

// turnEntries returns turn's assistant entry and its tool calls, or nil.
func turnEntries(es []wire.TranscriptEntry, turn int) []wire.TranscriptEntry {
	for i, e := range es {
		if e.Turn == turn && e.Role == wire.RoleAssistant {
			j := i + 1
			for j < len(es) && es[j].Turn == turn && es[j].Role == wire.RoleTool {
				j++
			}
			return es[i:j]
		}
	}
	return nil
}

// askModel calls the agent's model and appends its answer to the
// transcript.
func (a *Activities) askModel(ctx context.Context, ses *wire.Session, ag *wire.Agent, es []wire.TranscriptEntry, turn int) ([]wire.TranscriptEntry, error) {
	prov, err := a.Store.GetLLMProvider(ctx, ag.Model.ProviderID)
	if err != nil {
		return nil, activities.Classify(fmt.Errorf("agent %s: %w", ag.ID, err))
	}
	// An agent calls only with its own tenant's key: a provider of another
	// tenant (made so by an admin, or left by a deleted tenant) is refused.
	if prov.TenantID != ag.TenantID {
		return nil, activities.Classify(errs.E(errs.Forbidden, "agent %s: llm provider %s belongs to another tenant", ag.ID, prov.ID))
	}
	key, err := models.LLMKey(prov)
	if err != nil {
		return nil, activities.Classify(err)
	}
	req := llm.Request{
		Model:       ag.Model.ModelName,
		System:      strings.Join(ag.SystemPrompt, "\n"),
		Messages:    messages(es),
		Tools:       workspaceTools,
		MaxTokens:   ag.Model.MaxTokens,
		Temperature: ag.Model.Temperature,
		TopP:        ag.Model.TopP,
	}
	res, err := llm.Complete(ctx, a.outboundClient(), llm.Endpoint{Kind: prov.Kind, BaseURL: prov.BaseURL, APIKey: key}, req)
	if err != nil {
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) {
			return nil, temporal.NewApplicationError(activities.Redact(err.Error(), key), ErrModelRetryable)
		}
		msg := activities.Redact(fmt.Sprintf("llm provider %s: %s", prov.ID, apiErr.Error()), key)
		if apiErr.Retryable() {
			return nil, temporal.NewApplicationErrorWithOptions(msg, ErrModelRetryable, temporal.ApplicationErrorOptions{NextRetryDelay: apiErr.RetryAfter})
		}
		return nil, temporal.NewNonRetryableApplicationError(msg, ErrModelFailed, nil)
	}
	add := []wire.TranscriptEntry{{
		Turn: turn, Role: wire.RoleAssistant, Content: res.Message.Content,
		InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens,
	}}
	if len(res.Message.ToolCalls) > 0 {
		if add[0].ToolCalls, err = json.Marshal(res.Message.ToolCalls); err != nil {
			return nil, activities.Classify(err)
		}
	}
	for _, tc := range res.Message.ToolCalls {
		add = append(add, wire.TranscriptEntry{
			Turn: turn, Role: wire.RoleTool, ToolCallID: tc.ID, ToolName: tc.Name, ToolArgs: tc.Arguments, State: wire.ToolPending,
		})
	}
	// The session may have ended while the model answered (its workspace
	// lost): the answer is dropped, and the run that resumes the session
	// asks again.
	if now, err := a.Store.GetSession(ctx, ses.ID); err != nil {
		return nil, activities.Classify(err)
	} else if now.Status != wire.SessionOpen {
		return nil, &sessionEnded{reason: now.EndReason}
	}
	out, err := a.Store.AppendTranscript(ctx, ses.ID, add)
	if err != nil {
		return nil, activities.Classify(err)
	}
	return out, nil
}

// messages is the conversation the transcript holds, as the model reads it.
func messages(es []wire.TranscriptEntry) []llm.Message {
	ms := make([]llm.Message, 0, len(es))
	for _, e := range es {
		switch e.Role {
		case wire.RoleUser:
			ms = append(ms, llm.Message{Role: llm.RoleUser, Content: e.Content})
		case wire.RoleAssistant:
			m := llm.Message{Role: llm.RoleAssistant, Content: e.Content}
			if len(e.ToolCalls) > 0 {
				_ = json.Unmarshal(e.ToolCalls, &m.ToolCalls)
			}
			ms = append(ms, m)
		case wire.RoleTool:
			content := string(e.ToolResult)
			if e.State != wire.ToolFinished {
				content = `{"error":"the call did not run: the run ended before it"}`
			}
			ms = append(ms, llm.Message{Role: llm.RoleTool, ToolCallID: e.ToolCallID, Content: content})
		}
	}
	return ms
}

// ToolCall runs one tool call through the session tool path. It records
// the call started before it runs and finished with its result after; a
// call found started (a crash or a lost answer in between) is not run
// again: its result tells the model what is known.
func (a *Activities) ToolCall(ctx context.Context, in ToolCallInput) (ToolCallOutput, error) {
	defer activities.KeepAliveInterruptible(ctx)()
	ses, err := a.Store.GetSession(ctx, in.SessionID)
	if err != nil {
		return ToolCallOutput{}, activities.Classify(err)
	}
	e, err := a.Store.TranscriptEntryAt(ctx, in.SessionID, in.Seq)
	if err != nil {
		return ToolCallOutput{}, activities.Classify(err)
	}
	switch {
	case e.State == wire.ToolFinished:
		return ToolCallOutput{IsError: e.IsError}, nil
	case ses.Status != wire.SessionOpen:
		return ToolCallOutput{Ended: ses.EndReason}, nil
	}
	t, err := a.sessionTarget(ctx, ses)
	if err != nil {
		return ToolCallOutput{}, activities.Classify(err)
	}
	doubt := e.State == wire.ToolStarted
	if doubt && e.ToolName != sessiontool.Read {
		e.ToolResult, e.IsError = a.doubtResult(ctx, t, e), true
	} else {
		e.State = wire.ToolStarted
		if err := a.Store.UpdateTranscriptEntry(ctx, e); err != nil {
			return ToolCallOutput{}, activities.Classify(err)
		}
		res, commit, err := sessiontool.Call(ctx, t, agentToolLimits, e.ToolName, e.ToolArgs)
		switch {
		case err == nil:
			e.ToolResult, e.Commit = res, commit
		case errs.KindOf(err) == errs.Invalid:
			// The call's own fault: the model reads why.
			e.ToolResult, _ = json.Marshal(map[string]string{"error": err.Error()})
			e.IsError = true
		default:
			return ToolCallOutput{}, activities.Classify(err)
		}
	}
	e.State = wire.ToolFinished
	if err := a.Store.UpdateTranscriptEntry(ctx, e); err != nil {
		return ToolCallOutput{}, activities.Classify(err)
	}
	return ToolCallOutput{IsError: e.IsError, Doubt: doubt}, nil
}

// doubtResult is what the model is told of a call that was started but
// whose end was never recorded: it may or may not have run, and what the
// workspace shows now.
func (a *Activities) doubtResult(ctx context.Context, t sessiontool.Target, e *wire.TranscriptEntry) json.RawMessage {
	res := map[string]any{
		"error": fmt.Sprintf("%s was started but the platform was interrupted before its result was recorded: it may or may not have run, and it was not run again", e.ToolName),
	}
	if e.ToolName == sessiontool.Write {
		var w sessiontool.WriteArgs
		if json.Unmarshal(e.ToolArgs, &w) == nil {
			if want, err := sessiontool.WriteContent(w); err == nil {
				got, err := sessiontool.FileSHA256(ctx, t.Client, w.Path)
				switch {
				case err != nil:
					res["file"] = "could not be read: " + err.Error()
				case got == sessiontool.SHA256(want):
					res["file"] = fmt.Sprintf("%s now has exactly the content this call writes", w.Path)
				case got == "":
					res["file"] = fmt.Sprintf("%s does not exist", w.Path)
				default:
					res["file"] = fmt.Sprintf("%s exists with other content than this call writes", w.Path)
				}
			}
		}
	}
	if e.ToolName == sessiontool.Exec {
		res["hint"] = "check the workspace (e.g. the files the command writes) before running it again"
	}
	b, _ := json.Marshal(res)
	return b
}

// workspaceTools are the implicit tools of a workspace-bound session.
var workspaceTools = []llm.Tool{
	{
		Name:        sessiontool.Write,
		Description: "Write a file in the workspace (created or replaced). Paths are relative to the workspace root.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file path relative to the workspace root"},` +
			`"content":{"type":"string","description":"the file's content"},"encoding":{"type":"string","enum":["utf-8","base64"]}},"required":["path","content"]}`),
	},
	{
		Name:        sessiontool.Exec,
		Description: "Run a command in the workspace: command (a sh -c script) or args (a program and its arguments). Returns exit_code, stdout and stderr.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"a script for sh -c"},` +
			`"args":{"type":"array","items":{"type":"string"}},"cwd":{"type":"string"},"timeout":{"type":"string","description":"a Go duration, e.g. 30s"},` +
			`"stdin":{"type":"string"}}}`),
	},
	{
		Name:        sessiontool.Read,
		Description: "Read a file of the workspace. Paths are relative to the workspace root.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
	},
}
