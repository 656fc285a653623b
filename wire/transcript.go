package wire

import (
	"encoding/json"
	"time"
)

// Transcript roles: the instructions, the model's turns, and one row per
// tool call the model asked for.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Tool call states: asked for by the model, started (recorded before the
// call runs), finished (its result recorded). A call found started on a
// retry may or may not have run.
const (
	ToolPending  = "pending"
	ToolStarted  = "started"
	ToolFinished = "finished"
)

// Agent run end reasons: SessionRun.EndReason, and the EndReason of the
// session whose run ended (or workspace_lost).
const (
	AgentCompleted = "completed"
	AgentMaxTurns  = "max_turns"
	AgentTimeout   = "timeout"
	AgentFailed    = "failed"
	AgentCanceled  = "canceled"
)

// Agent run statuses.
const (
	AgentRunning = "running"
	AgentEnded   = "ended"
)

// TranscriptEntry is one message of a session's agent run: the user's
// instructions, an assistant turn (its text, the tool calls it asked for,
// its token usage and the .state commit that records it), or one tool
// call with its arguments, state, result and commit. It belongs to its
// session's tenant; the API reaches it through the session.
type TranscriptEntry struct {
	SessionID string `gorm:"primaryKey;size:64" json:"session_id"`
	Seq       int    `gorm:"primaryKey;autoIncrement:false" json:"seq"`
	// Turn is the model call the entry belongs to (1-based); 0 for the
	// instructions.
	Turn    int    `gorm:"not null;default:0" json:"turn"`
	Role    string `gorm:"size:16;not null" json:"role"`
	Content string `gorm:"type:text" json:"content,omitempty"`
	// ToolCalls is an assistant turn's calls (llm.ToolCall as JSON).
	ToolCalls json.RawMessage `gorm:"serializer:rawjson;type:text" json:"tool_calls,omitempty"`
	// A tool call: the model's id for it, the tool, its arguments, its
	// state and result.
	ToolCallID string          `gorm:"size:256;not null;default:''" json:"tool_call_id,omitempty"`
	ToolName   string          `gorm:"size:256;not null;default:''" json:"tool_name,omitempty"`
	ToolArgs   json.RawMessage `gorm:"serializer:rawjson;type:text" json:"tool_args,omitempty"`
	ToolResult json.RawMessage `gorm:"serializer:rawjson;type:text" json:"tool_result,omitempty"`
	State      string          `gorm:"size:16;not null;default:''" json:"state,omitempty"`
	// IsError marks a tool result that is an error the model is told of.
	IsError      bool      `gorm:"not null;default:false" json:"is_error,omitempty"`
	Commit       string    `gorm:"column:commit_sha;size:64;not null;default:''" json:"commit,omitempty"`
	InputTokens  int       `gorm:"not null;default:0" json:"input_tokens,omitempty"`
	OutputTokens int       `gorm:"not null;default:0" json:"output_tokens,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// SessionRun is a session's agent run: which agent, where it stands, and
// how it ended. Its workflow is session-<SessionID>.
type SessionRun struct {
	SessionID string `gorm:"primaryKey;size:64" json:"session_id"`
	TenantID  string `gorm:"size:64;not null;default:'default';index" json:"tenant_id"`
	AgentID   string `gorm:"size:128;not null" json:"agent"`
	Status    string `gorm:"size:16;not null" json:"status"` // running | ended
	// EndReason is one of the Agent* reasons or workspace_lost; Error says
	// why a failed run failed.
	EndReason string     `gorm:"size:64;not null;default:''" json:"end_reason,omitempty"`
	Error     string     `gorm:"type:text" json:"error,omitempty"`
	Turns     int        `gorm:"not null;default:0" json:"turns"`
	CreatedAt time.Time  `json:"created_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
}
