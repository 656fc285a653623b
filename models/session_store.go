package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// CreateSession inserts an open session; NotFound (field workspace_id) if the
// workspace does not exist. An empty ID is filled with NewID("ses"); Status
// is set to open and any end fields are cleared. TenantID is set to the
// workspace's tenant: a session belongs where its workspace does.
func (s *Store) CreateSession(ctx context.Context, ses *wire.Session) error {
	if ses.ID == "" {
		ses.ID = NewID("ses")
	}
	ses.Status, ses.EndReason, ses.EndedAt = wire.SessionOpen, "", nil
	ses.CreatedAt = storedTime(ses.CreatedAt)
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// FOR SHARE holds off a concurrent DeleteWorkspace until this
		// session exists, so that delete ends it too.
		err := lockRow(tx, forShare, &wire.Workspace{}, "workspace", ses.WorkspaceID)
		if errs.Is(err, errs.NotFound) {
			return &errs.Error{Kind: errs.NotFound, Field: "workspace_id",
				Msg: fmt.Sprintf("session %s: workspace %s: not found", ses.ID, ses.WorkspaceID)}
		}
		if err != nil {
			return err
		}
		var tenants []string
		if err := tx.Model(&wire.Workspace{}).Where("id = ?", ses.WorkspaceID).Pluck("tenant_id", &tenants).Error; err != nil {
			return err
		}
		if len(tenants) > 0 {
			ses.TenantID = tenants[0]
		}
		return tx.Create(ses).Error
	})
	return writeError(ctx, err, "session", ses.ID, "create")
}

// GetSession returns the session; NotFound if absent.
func (s *Store) GetSession(ctx context.Context, id string) (*wire.Session, error) {
	var ses wire.Session
	if err := s.r.WithContext(ctx).Take(&ses, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "session", id)
	}
	return &ses, nil
}

// ListSessions returns sessions matching f, newest first.
func (s *Store) ListSessions(ctx context.Context, f SessionFilter) ([]wire.Session, error) {
	q := s.r.WithContext(ctx).Order("created_at DESC").Order("id DESC")
	if f.TenantID != "" {
		q = q.Where("tenant_id = ?", f.TenantID)
	}
	if f.WorkspaceID != "" {
		q = q.Where("workspace_id = ?", f.WorkspaceID)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	ss := []wire.Session{}
	if err := q.Find(&ss).Error; err != nil {
		return nil, dbError(ctx, err, "sessions: list")
	}
	return ss, nil
}

// EndSession ends an open session with reason; ending an ended session is a
// no-op that keeps the first reason. NotFound if absent, Invalid (field
// reason) if reason is empty.
func (s *Store) EndSession(ctx context.Context, id, reason string) (*wire.Session, error) {
	if reason == "" {
		return nil, errs.Field("reason", "session %s: end reason is empty", id)
	}
	var ses wire.Session
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// The status condition makes the first ending win without a read
		// first: a second EndSession matches no row.
		if _, err := endSessions(tx, "id = ?", id, reason); err != nil {
			return err
		}
		err := tx.Take(&ses, "id = ?", id).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return notFound("session", id)
		}
		return err
	})
	if err != nil {
		return nil, writeError(ctx, err, "session", id, "end")
	}
	return &ses, nil
}

// EndWorkspaceSessions ends every open session of a workspace with reason and
// returns the ids of those it ended, oldest session first. An unknown
// workspace has none: an empty slice and nil.
func (s *Store) EndWorkspaceSessions(ctx context.Context, workspaceID, reason string) ([]string, error) {
	if reason == "" {
		return nil, errs.Field("reason", "workspace %s: end reason is empty", workspaceID)
	}
	ended, err := endSessions(s.w.WithContext(ctx), "workspace_id = ?", workspaceID, reason)
	if err != nil {
		return nil, dbError(ctx, err, "workspace "+workspaceID+": end sessions")
	}
	ids := make([]string, 0, len(ended))
	for _, ses := range ended {
		ids = append(ids, ses.ID)
	}
	return ids, nil
}

// endSessions ends the open sessions matching where/arg in one statement and
// returns them (id and created_at only, oldest first). RETURNING, on both
// dialects, names exactly the rows this statement ended, so a concurrent
// ending never shows up twice.
func endSessions(tx *gorm.DB, where string, arg any, reason string) ([]wire.Session, error) {
	var ended []wire.Session
	err := tx.Model(&ended).Clauses(clause.Returning{Columns: []clause.Column{{Name: "id"}, {Name: "created_at"}}}).
		Where(where, arg).Where("status = ?", wire.SessionOpen).Updates(map[string]any{
		"status":     wire.SessionEnded,
		"end_reason": reason,
		"ended_at":   tx.NowFunc(),
	}).Error
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ended, func(a, b wire.Session) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return ended, nil
}

// ResumeLostSessions gives every session of the workspace that ended with
// reason workspace_lost at or after since a successor: a new open session on
// the same workspace, with the same agent and metadata, whose ResumedFrom is
// the lost session's id. Lost sessions that already have a successor are
// skipped, so calling it again (a retried activity) creates nothing. It
// returns the created sessions, oldest lost first; NotFound if the workspace
// does not exist.
//
// The workspace row is locked FOR UPDATE for the transaction, so concurrent
// calls run one after the other and the second sees the first's sessions;
// the unique index on resumed_from backs that up.
func (s *Store) ResumeLostSessions(ctx context.Context, workspaceID string, since time.Time) ([]wire.Session, error) {
	var created []wire.Session
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		created = created[:0]
		if err := lockRow(tx, forUpdate, &wire.Workspace{}, "workspace", workspaceID); err != nil {
			return err
		}
		var lost []wire.Session
		q := tx.Where("workspace_id = ? AND status = ? AND end_reason = ?", workspaceID, wire.SessionEnded, wire.ReasonWorkspaceLost).
			// The <> '' term lets both databases use the partial unique index.
			Where("NOT EXISTS (SELECT 1 FROM sessions r WHERE r.resumed_from = sessions.id AND r.resumed_from <> '')").
			Order("ended_at").Order("created_at").Order("id")
		if !since.IsZero() {
			q = q.Where("ended_at >= ?", storedTime(since))
		}
		if err := q.Find(&lost).Error; err != nil {
			return err
		}
		now := tx.NowFunc()
		for i, l := range lost {
			created = append(created, wire.Session{
				ID:          NewID("ses"),
				TenantID:    l.TenantID,
				WorkspaceID: workspaceID,
				Agent:       l.Agent,
				Metadata:    l.Metadata,
				Status:      wire.SessionOpen,
				ResumedFrom: l.ID,
				// A microsecond apart, so the successors keep their
				// predecessors' order when they are lost and resumed in turn.
				CreatedAt: now.Add(time.Duration(i) * time.Microsecond),
			})
		}
		if len(created) == 0 {
			return nil
		}
		return tx.Create(&created).Error
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		// Only a writer that bypassed the workspace lock can get here.
		return nil, errs.E(errs.Conflict, "workspace %s: resume lost sessions: a lost session was resumed concurrently", workspaceID)
	}
	if err != nil {
		return nil, writeError(ctx, err, "workspace", workspaceID, "resume lost sessions")
	}
	if created == nil {
		created = []wire.Session{}
	}
	return created, nil
}

// SetSessionStateHead records the session's last .state commit and the
// history's size after it.
func (s *Store) SetSessionStateHead(ctx context.Context, id, commit string, bytes int64) error {
	err := s.w.WithContext(ctx).Model(&wire.Session{}).Where("id = ?", id).
		Updates(map[string]any{"state_head": commit, "history_bytes": bytes}).Error
	return writeError(ctx, err, "session", id, "record history head")
}
