package models

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
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
	ToolCalls json.RawMessage `gorm:"serializer:json;type:text" json:"tool_calls,omitempty"`
	// A tool call: the model's id for it, the tool, its arguments, its
	// state and result.
	ToolCallID string          `gorm:"size:256;not null;default:''" json:"tool_call_id,omitempty"`
	ToolName   string          `gorm:"size:256;not null;default:''" json:"tool_name,omitempty"`
	ToolArgs   json.RawMessage `gorm:"serializer:json;type:text" json:"tool_args,omitempty"`
	ToolResult json.RawMessage `gorm:"serializer:json;type:text" json:"tool_result,omitempty"`
	State      string          `gorm:"size:16;not null;default:''" json:"state,omitempty"`
	// IsError marks a tool result that is an error the model is told of.
	IsError      bool      `gorm:"not null;default:false" json:"is_error,omitempty"`
	Commit       string    `gorm:"column:commit_sha;size:64;not null;default:''" json:"commit,omitempty"`
	InputTokens  int       `gorm:"not null;default:0" json:"input_tokens,omitempty"`
	OutputTokens int       `gorm:"not null;default:0" json:"output_tokens,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// AfterFind reads an absent JSON value (stored as null) back as none.
func (e *TranscriptEntry) AfterFind(*gorm.DB) error {
	for _, f := range []*json.RawMessage{&e.ToolCalls, &e.ToolArgs, &e.ToolResult} {
		if string(*f) == "null" {
			*f = nil
		}
	}
	return nil
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

// CreateSessionRun records a new run of the session with its first
// message, the instructions; Conflict if the session already has a run.
func (s *Store) CreateSessionRun(ctx context.Context, r *SessionRun, instructions string) error {
	r.Status, r.EndReason, r.Error, r.EndedAt = AgentRunning, "", "", nil
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(r).Error; err != nil {
			return err
		}
		if instructions == "" {
			return nil
		}
		return tx.Create(&TranscriptEntry{SessionID: r.SessionID, Seq: 1, Role: RoleUser, Content: instructions}).Error
	})
	return writeError(ctx, err, "session run", r.SessionID, "create")
}

// GetSessionRun returns the session's run; NotFound if it has none.
func (s *Store) GetSessionRun(ctx context.Context, sessionID string) (*SessionRun, error) {
	var r SessionRun
	if err := s.r.WithContext(ctx).Take(&r, "session_id = ?", sessionID).Error; err != nil {
		return nil, readError(ctx, err, "session run", sessionID)
	}
	return &r, nil
}

// EndSessionRun ends the run and its session with reason (the first ending
// wins for both) and returns the run as stored.
func (s *Store) EndSessionRun(ctx context.Context, sessionID, reason, msg string, turns int) (*SessionRun, error) {
	var r SessionRun
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(&SessionRun{}).Where("session_id = ? AND status = ?", sessionID, AgentRunning).Updates(map[string]any{
			"status": AgentEnded, "end_reason": reason, "error": msg, "turns": turns, "ended_at": tx.NowFunc(),
		}).Error; err != nil {
			return err
		}
		if _, err := endSessions(tx, "id = ?", sessionID, reason); err != nil {
			return err
		}
		err := tx.Take(&r, "session_id = ?", sessionID).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return notFound("session run", sessionID)
		}
		return err
	})
	if err != nil {
		return nil, writeError(ctx, err, "session run", sessionID, "end")
	}
	return &r, nil
}

// Transcript returns the session's entries with Seq > after, in order.
func (s *Store) Transcript(ctx context.Context, sessionID string, after int) ([]TranscriptEntry, error) {
	es := []TranscriptEntry{}
	err := s.r.WithContext(ctx).Where("session_id = ? AND seq > ?", sessionID, after).Order("seq").Find(&es).Error
	if err != nil {
		return nil, dbError(ctx, err, "session "+sessionID+": transcript")
	}
	return es, nil
}

// TranscriptEntryAt returns one entry; NotFound if absent.
func (s *Store) TranscriptEntryAt(ctx context.Context, sessionID string, seq int) (*TranscriptEntry, error) {
	var e TranscriptEntry
	if err := s.r.WithContext(ctx).Take(&e, "session_id = ? AND seq = ?", sessionID, seq).Error; err != nil {
		return nil, readError(ctx, err, "transcript entry", sessionID)
	}
	return &e, nil
}

// AppendTranscript appends es to the session's transcript in one
// transaction, numbering them after the last entry, and returns them with
// their Seq set. The session row is locked, so concurrent appends queue.
func (s *Store) AppendTranscript(ctx context.Context, sessionID string, es []TranscriptEntry) ([]TranscriptEntry, error) {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &Session{}, "session", sessionID); err != nil {
			return err
		}
		var last struct{ N int }
		if err := tx.Model(&TranscriptEntry{}).Select("COALESCE(MAX(seq), 0) AS n").Where("session_id = ?", sessionID).Scan(&last).Error; err != nil {
			return err
		}
		for i := range es {
			es[i].SessionID, es[i].Seq = sessionID, last.N+1+i
		}
		if len(es) == 0 {
			return nil
		}
		return tx.Create(&es).Error
	})
	if err != nil {
		return nil, writeError(ctx, err, "session", sessionID, "append transcript")
	}
	return es, nil
}

// UpdateTranscriptEntry writes the state, result, error flag and commit of
// an entry (a tool call starting or finishing, an assistant turn's commit).
func (s *Store) UpdateTranscriptEntry(ctx context.Context, e *TranscriptEntry) error {
	db := s.w.WithContext(ctx)
	res := db.Model(&TranscriptEntry{}).Where("session_id = ? AND seq = ?", e.SessionID, e.Seq).Updates(map[string]any{
		"state": e.State, "tool_result": string(e.ToolResult), "is_error": e.IsError, "commit_sha": e.Commit, "updated_at": db.NowFunc(),
	})
	if res.Error != nil {
		return writeError(ctx, res.Error, "transcript entry", e.SessionID, "update")
	}
	if res.RowsAffected == 0 {
		return errs.E(errs.NotFound, "session %s: transcript entry %d: not found", e.SessionID, e.Seq)
	}
	return nil
}

// ResumedSession returns the session that resumes id (ResumeLostSessions);
// NotFound if none does yet.
func (s *Store) ResumedSession(ctx context.Context, id string) (*Session, error) {
	var ses Session
	if err := s.r.WithContext(ctx).Take(&ses, "resumed_from = ? AND resumed_from <> ''", id).Error; err != nil {
		return nil, readError(ctx, err, "session resuming", id)
	}
	return &ses, nil
}

// ResumeSessionRun gives the session to, which resumes the lost session
// from, from's run: its agent and its transcript, copied. A tool call the
// lost session had not finished is finished with a result saying what is
// known: not run, or maybe run on the lost sandbox. Calling it again
// changes nothing.
func (s *Store) ResumeSessionRun(ctx context.Context, from, to string) (*SessionRun, error) {
	var run SessionRun
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &Session{}, "session", to); err != nil {
			return err
		}
		err := tx.Take(&run, "session_id = ?", to).Error
		if err == nil {
			return nil // resumed before
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		var prev SessionRun
		if err := tx.Take(&prev, "session_id = ?", from).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return notFound("session run", from)
			}
			return err
		}
		var ses Session
		if err := tx.Take(&ses, "id = ?", to).Error; err != nil {
			return err
		}
		run = SessionRun{SessionID: to, TenantID: ses.TenantID, AgentID: prev.AgentID, Status: AgentRunning, Turns: prev.Turns}
		if err := tx.Create(&run).Error; err != nil {
			return err
		}
		var es []TranscriptEntry
		if err := tx.Where("session_id = ?", from).Order("seq").Find(&es).Error; err != nil {
			return err
		}
		for i := range es {
			e := &es[i]
			e.SessionID = to
			switch e.State {
			case ToolPending:
				e.State, e.IsError = ToolFinished, true
				e.ToolResult = json.RawMessage(`{"error":"not run: the workspace's sandbox was lost before this call ran; it was replaced, and files written before may be gone"}`)
			case ToolStarted:
				e.State, e.IsError = ToolFinished, true
				e.ToolResult = json.RawMessage(`{"error":"the workspace's sandbox was lost while this call ran: it may or may not have run; the sandbox was replaced, and files written before may be gone"}`)
			}
		}
		if len(es) == 0 {
			return nil
		}
		return tx.Create(&es).Error
	})
	if err != nil {
		return nil, writeError(ctx, err, "session run", to, "resume")
	}
	return &run, nil
}
