package models

import (
	"context"
	"encoding/json"
	"errors"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// CreateSessionRun records a new run of the session with its first
// message, the instructions; Conflict if the session already has a run.
func (s *Store) CreateSessionRun(ctx context.Context, r *wire.SessionRun, instructions string) error {
	r.Status, r.EndReason, r.Error, r.EndedAt = wire.AgentRunning, "", "", nil
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(r).Error; err != nil {
			return err
		}
		if instructions == "" {
			return nil
		}
		return tx.Create(&wire.TranscriptEntry{SessionID: r.SessionID, Seq: 1, Role: wire.RoleUser, Content: instructions}).Error
	})
	return writeError(ctx, err, "session run", r.SessionID, "create")
}

// GetSessionRun returns the session's run; NotFound if it has none.
func (s *Store) GetSessionRun(ctx context.Context, sessionID string) (*wire.SessionRun, error) {
	var r wire.SessionRun
	if err := s.r.WithContext(ctx).Take(&r, "session_id = ?", sessionID).Error; err != nil {
		return nil, readError(ctx, err, "session run", sessionID)
	}
	return &r, nil
}

// EndSessionRun ends the run and its session with reason (the first ending
// wins for both) and returns the run as stored.
func (s *Store) EndSessionRun(ctx context.Context, sessionID, reason, msg string, turns int) (*wire.SessionRun, error) {
	var r wire.SessionRun
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(&wire.SessionRun{}).Where("session_id = ? AND status = ?", sessionID, wire.AgentRunning).Updates(map[string]any{
			"status": wire.AgentEnded, "end_reason": reason, "error": msg, "turns": turns, "ended_at": tx.NowFunc(),
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
	s.signal(ctx, sessionTopic(sessionID))
	return &r, nil
}

// Transcript returns the session's entries with Seq > after, in order.
func (s *Store) Transcript(ctx context.Context, sessionID string, after int) ([]wire.TranscriptEntry, error) {
	es := []wire.TranscriptEntry{}
	err := s.r.WithContext(ctx).Where("session_id = ? AND seq > ?", sessionID, after).Order("seq").Find(&es).Error
	if err != nil {
		return nil, dbError(ctx, err, "session "+sessionID+": transcript")
	}
	return es, nil
}

// TranscriptEntryAt returns one entry; NotFound if absent.
func (s *Store) TranscriptEntryAt(ctx context.Context, sessionID string, seq int) (*wire.TranscriptEntry, error) {
	var e wire.TranscriptEntry
	if err := s.r.WithContext(ctx).Take(&e, "session_id = ? AND seq = ?", sessionID, seq).Error; err != nil {
		return nil, readError(ctx, err, "transcript entry", sessionID)
	}
	return &e, nil
}

// AppendTranscript appends es to the session's transcript in one
// transaction, numbering them after the last entry, and returns them with
// their Seq set. The session row is locked, so concurrent appends queue.
func (s *Store) AppendTranscript(ctx context.Context, sessionID string, es []wire.TranscriptEntry) ([]wire.TranscriptEntry, error) {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.Session{}, "session", sessionID); err != nil {
			return err
		}
		var last struct{ N int }
		if err := tx.Model(&wire.TranscriptEntry{}).Select("COALESCE(MAX(seq), 0) AS n").Where("session_id = ?", sessionID).Scan(&last).Error; err != nil {
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
	s.signal(ctx, sessionTopic(sessionID))
	return es, nil
}

// UpdateTranscriptEntry writes the state, result, error flag and commit of
// an entry (a tool call starting or finishing, an assistant turn's commit).
func (s *Store) UpdateTranscriptEntry(ctx context.Context, e *wire.TranscriptEntry) error {
	db := s.w.WithContext(ctx)
	res := db.Model(&wire.TranscriptEntry{}).Where("session_id = ? AND seq = ?", e.SessionID, e.Seq).Updates(map[string]any{
		"state": e.State, "tool_result": string(e.ToolResult), "is_error": e.IsError, "commit_sha": e.Commit, "updated_at": db.NowFunc(),
	})
	if res.Error != nil {
		return writeError(ctx, res.Error, "transcript entry", e.SessionID, "update")
	}
	if res.RowsAffected == 0 {
		return errs.E(errs.NotFound, "session %s: transcript entry %d: not found", e.SessionID, e.Seq)
	}
	s.signal(ctx, sessionTopic(e.SessionID))
	return nil
}

// ResumedSession returns the session that resumes id (ResumeLostSessions);
// NotFound if none does yet.
func (s *Store) ResumedSession(ctx context.Context, id string) (*wire.Session, error) {
	var ses wire.Session
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
func (s *Store) ResumeSessionRun(ctx context.Context, from, to string) (*wire.SessionRun, error) {
	var run wire.SessionRun
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.Session{}, "session", to); err != nil {
			return err
		}
		err := tx.Take(&run, "session_id = ?", to).Error
		if err == nil {
			return nil // resumed before
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		var prev wire.SessionRun
		if err := tx.Take(&prev, "session_id = ?", from).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return notFound("session run", from)
			}
			return err
		}
		var ses wire.Session
		if err := tx.Take(&ses, "id = ?", to).Error; err != nil {
			return err
		}
		run = wire.SessionRun{SessionID: to, TenantID: ses.TenantID, AgentID: prev.AgentID, Status: wire.AgentRunning, Turns: prev.Turns}
		if err := tx.Create(&run).Error; err != nil {
			return err
		}
		var es []wire.TranscriptEntry
		if err := tx.Where("session_id = ?", from).Order("seq").Find(&es).Error; err != nil {
			return err
		}
		for i := range es {
			e := &es[i]
			e.SessionID = to
			switch e.State {
			case wire.ToolPending:
				e.State, e.IsError = wire.ToolFinished, true
				e.ToolResult = json.RawMessage(`{"error":"not run: the workspace's sandbox was lost before this call ran; it was replaced, and files written before may be gone"}`)
			case wire.ToolStarted:
				e.State, e.IsError = wire.ToolFinished, true
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
