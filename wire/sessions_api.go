package wire

import (
	"encoding/json"
	"time"

	"github.com/primerhq/primer/runtime/protocol"
)

// CreateSessionRequest is the body of POST /v1/sessions. With Agent and
// Instructions the session starts an agent run at once.
type CreateSessionRequest struct {
	WorkspaceID  string            `json:"workspace_id"`
	Agent        string            `json:"agent,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	Instructions string            `json:"instructions,omitempty"`
}

// EndSessionRequest is the optional body of POST /v1/sessions/{id}/end.
type EndSessionRequest struct {
	Reason string `json:"reason,omitempty"`
}

// RunAgentRequest is the body of POST /v1/sessions/{id}/run.
type RunAgentRequest struct {
	Agent        string `json:"agent"`
	Instructions string `json:"instructions"`
}

// Transcript is a session's agent run and its transcript so far, with the
// tokens it used in total.
type Transcript struct {
	SessionID string            `json:"session_id"`
	Run       *SessionRun       `json:"run,omitempty"`
	Items     []TranscriptEntry `json:"items"`
	Usage     UsageTotal        `json:"usage"`
}

// UsageTotal sums a transcript's tokens.
type UsageTotal struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// HistoryEntry is one commit of a session's .state history: which tool
// made it, when, and with what arguments and result.
type HistoryEntry struct {
	Commit    string          `json:"commit"`
	Session   string          `json:"session"`
	Tool      string          `json:"tool"`
	Time      time.Time       `json:"time"`
	Author    string          `json:"author"`
	Summary   string          `json:"summary"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
}

// History answers a session's history, newest first; ResumedFrom names
// the lost session it continues.
type History struct {
	Items       []HistoryEntry `json:"items"`
	ResumedFrom string         `json:"resumed_from,omitempty"`
}

// RestoreRequest is the body of a restore: the commit to go back to.
type RestoreRequest struct {
	Commit string `json:"commit"`
}

// Restore answers a restore: the new commit and what it changed.
type Restore struct {
	Commit       string                 `json:"commit"`
	RestoredFrom string                 `json:"restored_from"`
	Changed      []protocol.StateChange `json:"changed"`
}

// Diff answers a diff between two commits of a session's history.
type Diff struct {
	From      string                 `json:"from"`
	To        string                 `json:"to"`
	Files     []protocol.StateChange `json:"files"`
	Patch     string                 `json:"patch"`
	Truncated bool                   `json:"truncated,omitempty"`
}

// SessionCancel answers POST /v1/sessions/{id}/cancel: the cancel of the
// session's agent run was asked for (Status "cancel requested").
type SessionCancel struct {
	SessionID string `json:"session_id"`
	Status    string `json:"status"`
}
