package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/primerhq/primer/errs"
)

// Config says which database the Store opens.
type Config struct {
	// URL is empty or sqlite://PATH for a SQLite file, or postgres://... for PostgreSQL.
	URL string
	// SQLitePath is the SQLite file used when URL is empty.
	SQLitePath string
	Logger     *slog.Logger
}

// Store reads and writes Primer's resources. Every method takes ctx first and
// returns errs-kinded errors: NotFound for unknown ids, Conflict for
// duplicates, Invalid for rows that break a rule.
//
// Rules that span rows (a template needs its provider, a provider in use
// cannot go) are checked in one transaction that locks the referenced row
// (FOR SHARE / FOR UPDATE on PostgreSQL; SQLite has a single writer), so a
// concurrent delete cannot slip between the check and the write.
type Store struct {
	// w takes writes and write transactions; on SQLite it is one connection.
	w *gorm.DB
	// r serves plain reads; on PostgreSQL (and SQLite :memory:) it is w.
	r       *gorm.DB
	dialect string
	log     *slog.Logger
}

// Row locks; the SQLite driver drops them (its writer is already exclusive).
var (
	forShare  = clause.Locking{Strength: "SHARE"}
	forUpdate = clause.Locking{Strength: "UPDATE"}
)

// eventLockClass is the first key of the PostgreSQL advisory lock that
// serialises AppendEvent per workspace (see AppendEvent).
const eventLockClass = 0x7072

// localConfig is the config document of the reserved local provider.
type localConfig struct {
	Kind     string `json:"kind"`
	RootPath string `json:"root_path"`
}

// EnsureDefaults creates the reserved local provider (root_path given) and the
// default template on it when they do not exist. Idempotent: existing rows,
// even changed ones, are left alone, and concurrent callers are safe because
// the inserts are ON CONFLICT DO NOTHING.
func (s *Store) EnsureDefaults(ctx context.Context, localRoot string) error {
	if localRoot == "" {
		return errs.E(errs.Invalid, "provider %s: root_path is empty", LocalProviderID)
	}
	cfg, err := json.Marshal(localConfig{Kind: BackendLocal, RootPath: localRoot})
	if err != nil {
		return errs.E(errs.Other, "provider %s: config: %w", LocalProviderID, err)
	}
	p := &Provider{ID: LocalProviderID, Provider: BackendLocal, Config: cfg}
	t := &Template{
		ID:          DefaultTemplateID,
		ProviderID:  LocalProviderID,
		Description: "default template on the local provider",
		Backend:     json.RawMessage(`{"kind":"local"}`),
		Generation:  1,
	}
	var created []string
	err = s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(p)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected > 0 {
			created = append(created, "provider "+p.ID)
		}
		res = tx.Clauses(clause.OnConflict{DoNothing: true}).Create(t)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected > 0 {
			created = append(created, "template "+t.ID)
		}
		return nil
	})
	if err != nil {
		return dbError(ctx, err, "provider "+LocalProviderID+": ensure defaults")
	}
	for _, c := range created {
		s.log.Info("created default", "object", c, "root_path", localRoot)
	}
	return nil
}

// CreateProvider inserts p; Conflict if the id exists.
func (s *Store) CreateProvider(ctx context.Context, p *Provider) error {
	if p.ID == "" {
		return errs.Field("id", "provider: id is required")
	}
	if err := checkJSON("config", "provider "+p.ID, p.Config); err != nil {
		return err
	}
	if err := s.w.WithContext(ctx).Create(p).Error; err != nil {
		return writeError(ctx, err, "provider", p.ID, "create")
	}
	return nil
}

// GetProvider returns the provider; NotFound if absent.
func (s *Store) GetProvider(ctx context.Context, id string) (*Provider, error) {
	var p Provider
	if err := s.r.WithContext(ctx).Take(&p, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "provider", id)
	}
	return &p, nil
}

// ListProviders returns all providers ordered by id.
func (s *Store) ListProviders(ctx context.Context) ([]Provider, error) {
	ps := []Provider{}
	if err := s.r.WithContext(ctx).Order("id").Find(&ps).Error; err != nil {
		return nil, dbError(ctx, err, "providers: list")
	}
	return ps, nil
}

// UpdateProvider replaces provider and config of an existing provider;
// NotFound if absent. On success p holds the stored row (timestamps included).
func (s *Store) UpdateProvider(ctx context.Context, p *Provider) error {
	if err := checkJSON("config", "provider "+p.ID, p.Config); err != nil {
		return err
	}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&Provider{}).Where("id = ?", p.ID).Updates(map[string]any{
			"provider":   p.Provider,
			"config":     jsonColumn(p.Config),
			"updated_at": tx.NowFunc(),
		})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return notFound("provider", p.ID)
		}
		return reload(tx, p, p.ID)
	})
	return writeError(ctx, err, "provider", p.ID, "update")
}

// DeleteProvider deletes the provider; NotFound if absent, Conflict if a
// template or a workspace references it.
func (s *Store) DeleteProvider(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &Provider{}, "provider", id); err != nil {
			return err
		}
		if ref, err := firstID(tx, &Template{}, "provider_id = ?", id); err != nil || ref != "" {
			return inUse(err, "provider", id, "template", ref)
		}
		if ref, err := firstID(tx, &Workspace{}, "provider_id = ?", id); err != nil || ref != "" {
			return inUse(err, "provider", id, "workspace", ref)
		}
		return tx.Delete(&Provider{}, "id = ?", id).Error
	})
	return writeError(ctx, err, "provider", id, "delete")
}

// CreateTemplate inserts t with Generation 1; Conflict if the id exists,
// Invalid (field provider_id) if the provider does not.
func (s *Store) CreateTemplate(ctx context.Context, t *Template) error {
	if t.ID == "" {
		return errs.Field("id", "template: id is required")
	}
	if err := checkJSON("backend", "template "+t.ID, t.Backend); err != nil {
		return err
	}
	t.Generation = 1
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockProviderOf(tx, t); err != nil {
			return err
		}
		return tx.Create(t).Error
	})
	return writeError(ctx, err, "template", t.ID, "create")
}

// GetTemplate returns the template; NotFound if absent.
func (s *Store) GetTemplate(ctx context.Context, id string) (*Template, error) {
	var t Template
	if err := s.r.WithContext(ctx).Take(&t, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "template", id)
	}
	return &t, nil
}

// ListTemplates returns templates ordered by id, those of providerID only when it is not empty.
func (s *Store) ListTemplates(ctx context.Context, providerID string) ([]Template, error) {
	q := s.r.WithContext(ctx).Order("id")
	if providerID != "" {
		q = q.Where("provider_id = ?", providerID)
	}
	ts := []Template{}
	if err := q.Find(&ts).Error; err != nil {
		return nil, dbError(ctx, err, "templates: list")
	}
	return ts, nil
}

// UpdateTemplate replaces an existing template and increments its
// Generation in the same statement; NotFound if absent, Invalid (field
// provider_id) if its provider does not exist. On success t holds the stored
// row, new generation included.
func (s *Store) UpdateTemplate(ctx context.Context, t *Template) error {
	if err := checkJSON("backend", "template "+t.ID, t.Backend); err != nil {
		return err
	}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &Template{}, "template", t.ID); err != nil {
			return err
		}
		if err := lockProviderOf(tx, t); err != nil {
			return err
		}
		err := tx.Model(&Template{}).Where("id = ?", t.ID).Updates(map[string]any{
			"provider_id": t.ProviderID,
			"description": t.Description,
			"backend":     jsonColumn(t.Backend),
			"generation":  gorm.Expr("generation + 1"),
			"updated_at":  tx.NowFunc(),
		}).Error
		if err != nil {
			return err
		}
		return reload(tx, t, t.ID)
	})
	return writeError(ctx, err, "template", t.ID, "update")
}

// DeleteTemplate deletes the template; NotFound if absent, Conflict if a
// workspace uses it (every workspace row is live: destroyed ones are deleted)
// or a warm pool references it.
func (s *Store) DeleteTemplate(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &Template{}, "template", id); err != nil {
			return err
		}
		if ref, err := firstID(tx, &Workspace{}, "template_id = ?", id); err != nil || ref != "" {
			return inUse(err, "template", id, "workspace", ref)
		}
		if ref, err := firstID(tx, &Pool{}, "template_id = ?", id); err != nil || ref != "" {
			return inUse(err, "template", id, "pool", ref)
		}
		return tx.Delete(&Template{}, "id = ?", id).Error
	})
	return writeError(ctx, err, "template", id, "delete")
}

// CreateWorkspace inserts w; Conflict if the id exists. An empty ID is
// filled with NewID("ws"). The store does not check the template exists (the
// API resolves it first), but it locks the template row so a concurrent
// DeleteTemplate sees the new workspace, and sets w.TemplateGeneration to the
// template's current Generation (0 when there is no such template).
//
// PoolID and PoolState are stored as given: both empty, or a pool that
// exists (NotFound, field pool_id, if not) and one of the pool states
// (Invalid, field pool_state, if not).
func (s *Store) CreateWorkspace(ctx context.Context, w *Workspace) error {
	if w.ID == "" {
		w.ID = NewID("ws")
	}
	if err := checkJSON("handle", "workspace "+w.ID, w.Handle); err != nil {
		return err
	}
	switch {
	case w.PoolID == "" && w.PoolState != "":
		return errs.Field("pool_state", "workspace %s: pool_state %q without a pool_id", w.ID, w.PoolState)
	case w.PoolID != "" && !poolStates[w.PoolState]:
		return errs.Field("pool_state", "workspace %s: pool_state %q: want %s, %s or %s", w.ID, w.PoolState, PoolIdle, PoolLeased, PoolReturning)
	}
	if w.CreatedAt.IsZero() {
		// Set here, as stored, so the caller's copy equals what a read returns.
		w.CreatedAt = storedTime(time.Now())
	}
	if w.UpdatedAt.IsZero() {
		w.UpdatedAt = w.CreatedAt
	}
	w.CreatedAt, w.UpdatedAt = storedTime(w.CreatedAt), storedTime(w.UpdatedAt)
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var gens []int64
		err := tx.Model(&Template{}).Clauses(forShare).Where("id = ?", w.TemplateID).Pluck("generation", &gens).Error
		if err != nil {
			return err
		}
		w.TemplateGeneration = 0
		if len(gens) > 0 {
			w.TemplateGeneration = gens[0]
		}
		if w.PoolID != "" {
			// FOR SHARE: a concurrent DeletePool waits for this workspace.
			err := lockRow(tx, forShare, &Pool{}, "pool", w.PoolID)
			if errs.Is(err, errs.NotFound) {
				return &errs.Error{Kind: errs.NotFound, Field: "pool_id",
					Msg: fmt.Sprintf("workspace %s: pool %s: not found", w.ID, w.PoolID)}
			}
			if err != nil {
				return err
			}
		}
		return tx.Create(w).Error
	})
	return writeError(ctx, err, "workspace", w.ID, "create")
}

// GetWorkspace returns the workspace; NotFound if absent.
func (s *Store) GetWorkspace(ctx context.Context, id string) (*Workspace, error) {
	var w Workspace
	if err := s.r.WithContext(ctx).Take(&w, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "workspace", id)
	}
	return &w, nil
}

// ListWorkspaces returns workspaces matching f, newest first.
func (s *Store) ListWorkspaces(ctx context.Context, f WorkspaceFilter) ([]Workspace, error) {
	q := s.r.WithContext(ctx).Order("created_at DESC").Order("id DESC")
	for _, c := range []struct{ col, v string }{
		{"template_id", f.TemplateID},
		{"provider_id", f.ProviderID},
		{"backend", f.Backend},
		{"phase", f.Phase},
		{"pool_id", f.PoolID},
		{"pool_state", f.PoolState},
	} {
		if c.v != "" {
			q = q.Where(c.col+" = ?", c.v)
		}
	}
	if f.Limit > 0 {
		q = q.Limit(f.Limit)
	}
	ws := []Workspace{}
	if err := q.Find(&ws).Error; err != nil {
		return nil, dbError(ctx, err, "workspaces: list")
	}
	return ws, nil
}

// validPhases are the phases SetWorkspacePhase accepts.
var validPhases = map[string]bool{
	PhasePending: true, PhaseRunning: true, PhaseFailed: true, PhaseTerminating: true, PhaseEscalated: true,
}

// SetWorkspacePhase sets phase and reason; NotFound if absent, Invalid (field
// phase) for a phase DESIGN.md does not name.
func (s *Store) SetWorkspacePhase(ctx context.Context, id, phase, reason string) error {
	if !validPhases[phase] {
		return errs.Field("phase", "workspace %s: unknown phase %q", id, phase)
	}
	return s.updateWorkspace(ctx, id, "set phase", map[string]any{"phase": phase, "reason": reason})
}

// SetWorkspaceRuntime stores the backend handle, path and runtime token;
// NotFound if absent, Invalid (field handle) if handle is not JSON.
func (s *Store) SetWorkspaceRuntime(ctx context.Context, id string, handle []byte, path, token string) error {
	if err := checkJSON("handle", "workspace "+id, handle); err != nil {
		return err
	}
	return s.updateWorkspace(ctx, id, "set runtime", map[string]any{
		"handle":        jsonColumn(handle),
		"path":          path,
		"runtime_token": token,
	})
}

// SetWorkspaceLabels replaces a workspace's labels (a warm lease labels the
// workspace for its lessee); NotFound if absent.
func (s *Store) SetWorkspaceLabels(ctx context.Context, id string, labels map[string]string) error {
	raw, err := json.Marshal(labels)
	if err != nil {
		return errs.E(errs.Invalid, "workspace %s: labels: %w", id, err)
	}
	return s.updateWorkspace(ctx, id, "set labels", map[string]any{"labels": string(raw)})
}

// updateWorkspace sets cols (and updated_at) on workspace id; NotFound if absent.
func (s *Store) updateWorkspace(ctx context.Context, id, action string, cols map[string]any) error {
	db := s.w.WithContext(ctx)
	cols["updated_at"] = db.NowFunc()
	res := db.Model(&Workspace{}).Where("id = ?", id).Updates(cols)
	if res.Error == nil && res.RowsAffected == 0 {
		return notFound("workspace", id)
	}
	return writeError(ctx, res.Error, "workspace", id, action)
}

// DeleteWorkspace removes the workspace row; its open sessions end with
// reason workspace_deleted in the same transaction. NotFound if absent.
// Its events stay, so a stream can still show how it ended.
func (s *Store) DeleteWorkspace(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &Workspace{}, "workspace", id); err != nil {
			return err
		}
		if _, err := endSessions(tx, "workspace_id = ?", id, ReasonWorkspaceDeleted); err != nil {
			return err
		}
		return tx.Delete(&Workspace{}, "id = ?", id).Error
	})
	return writeError(ctx, err, "workspace", id, "delete")
}

// CreateSession inserts an open session; NotFound (field workspace_id) if the
// workspace does not exist. An empty ID is filled with NewID("ses"); Status
// is set to open and any end fields are cleared.
func (s *Store) CreateSession(ctx context.Context, ses *Session) error {
	if ses.ID == "" {
		ses.ID = NewID("ses")
	}
	ses.Status, ses.EndReason, ses.EndedAt = SessionOpen, "", nil
	ses.CreatedAt = storedTime(ses.CreatedAt)
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// FOR SHARE holds off a concurrent DeleteWorkspace until this
		// session exists, so that delete ends it too.
		err := lockRow(tx, forShare, &Workspace{}, "workspace", ses.WorkspaceID)
		if errs.Is(err, errs.NotFound) {
			return &errs.Error{Kind: errs.NotFound, Field: "workspace_id",
				Msg: fmt.Sprintf("session %s: workspace %s: not found", ses.ID, ses.WorkspaceID)}
		}
		if err != nil {
			return err
		}
		return tx.Create(ses).Error
	})
	return writeError(ctx, err, "session", ses.ID, "create")
}

// GetSession returns the session; NotFound if absent.
func (s *Store) GetSession(ctx context.Context, id string) (*Session, error) {
	var ses Session
	if err := s.r.WithContext(ctx).Take(&ses, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "session", id)
	}
	return &ses, nil
}

// ListSessions returns sessions matching f, newest first.
func (s *Store) ListSessions(ctx context.Context, f SessionFilter) ([]Session, error) {
	q := s.r.WithContext(ctx).Order("created_at DESC").Order("id DESC")
	if f.WorkspaceID != "" {
		q = q.Where("workspace_id = ?", f.WorkspaceID)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	ss := []Session{}
	if err := q.Find(&ss).Error; err != nil {
		return nil, dbError(ctx, err, "sessions: list")
	}
	return ss, nil
}

// EndSession ends an open session with reason; ending an ended session is a
// no-op that keeps the first reason. NotFound if absent, Invalid (field
// reason) if reason is empty.
func (s *Store) EndSession(ctx context.Context, id, reason string) (*Session, error) {
	if reason == "" {
		return nil, errs.Field("reason", "session %s: end reason is empty", id)
	}
	var ses Session
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
func endSessions(tx *gorm.DB, where string, arg any, reason string) ([]Session, error) {
	var ended []Session
	err := tx.Model(&ended).Clauses(clause.Returning{Columns: []clause.Column{{Name: "id"}, {Name: "created_at"}}}).
		Where(where, arg).Where("status = ?", SessionOpen).Updates(map[string]any{
		"status":     SessionEnded,
		"end_reason": reason,
		"ended_at":   tx.NowFunc(),
	}).Error
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ended, func(a, b Session) int {
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
func (s *Store) ResumeLostSessions(ctx context.Context, workspaceID string, since time.Time) ([]Session, error) {
	var created []Session
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		created = created[:0]
		if err := lockRow(tx, forUpdate, &Workspace{}, "workspace", workspaceID); err != nil {
			return err
		}
		var lost []Session
		q := tx.Where("workspace_id = ? AND status = ? AND end_reason = ?", workspaceID, SessionEnded, ReasonWorkspaceLost).
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
			created = append(created, Session{
				ID:          NewID("ses"),
				WorkspaceID: workspaceID,
				Agent:       l.Agent,
				Metadata:    l.Metadata,
				Status:      SessionOpen,
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
		created = []Session{}
	}
	return created, nil
}

// AppendEvent stores an event, setting its ID and CreatedAt.
//
// IDs come from a sequence, and on PostgreSQL two concurrent inserts can
// commit out of ID order, so a stream resuming after ID 7 could miss an ID 6
// committed later. A per-workspace advisory lock held until commit makes a
// workspace's IDs visible in order. SQLite's single writer does the same.
func (s *Store) AppendEvent(ctx context.Context, e *Event) error {
	if e.WorkspaceID == "" {
		return errs.Field("workspace_id", "event: workspace_id is required")
	}
	if e.Type == "" {
		return errs.Field("type", "event: type is required")
	}
	if err := checkJSON("data", "event "+e.Type, e.Data); err != nil {
		return err
	}
	e.ID = 0
	e.CreatedAt = s.w.NowFunc()
	db := s.w.WithContext(ctx)
	var err error
	if s.dialect == DialectPostgres {
		err = db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?, hashtext(?))", eventLockClass, e.WorkspaceID).Error; err != nil {
				return err
			}
			return tx.Create(e).Error
		})
	} else {
		err = db.Create(e).Error
	}
	if err != nil {
		return dbError(ctx, err, "workspace "+e.WorkspaceID+": append event "+e.Type)
	}
	return nil
}

// ListEvents returns a workspace's events with ID > afterID, oldest first, at most limit (0: all).
func (s *Store) ListEvents(ctx context.Context, workspaceID string, afterID uint64, limit int) ([]Event, error) {
	q := s.r.WithContext(ctx).Where("workspace_id = ? AND id > ?", workspaceID, afterID).Order("id")
	if limit > 0 {
		q = q.Limit(limit)
	}
	es := []Event{}
	if err := q.Find(&es).Error; err != nil {
		return nil, dbError(ctx, err, "workspace "+workspaceID+": list events")
	}
	return es, nil
}

// LatestEvents returns a workspace's newest n events, newest first.
func (s *Store) LatestEvents(ctx context.Context, workspaceID string, n int) ([]Event, error) {
	es := []Event{}
	if err := s.r.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order("id DESC").Limit(n).Find(&es).Error; err != nil {
		return nil, dbError(ctx, err, "workspace "+workspaceID+": latest events")
	}
	return es, nil
}

// lockProviderOf locks t's provider against deletion for the rest of tx;
// Invalid (field provider_id) if it does not exist.
func lockProviderOf(tx *gorm.DB, t *Template) error {
	err := lockRow(tx, forShare, &Provider{}, "provider", t.ProviderID)
	if errs.Is(err, errs.NotFound) {
		return errs.Field("provider_id", "template %s: provider %s: not found", t.ID, t.ProviderID)
	}
	return err
}

// lockRow locks the row of model with id in tx; NotFound if there is none.
func lockRow(tx *gorm.DB, lock clause.Locking, model any, kind, id string) error {
	var ids []string
	if err := tx.Model(model).Clauses(lock).Where("id = ?", id).Pluck("id", &ids).Error; err != nil {
		return err
	}
	if len(ids) == 0 {
		return notFound(kind, id)
	}
	return nil
}

// firstID returns the smallest id of a model row matching where, or "".
func firstID(tx *gorm.DB, model any, where string, args ...any) (string, error) {
	var ids []string
	err := tx.Model(model).Where(where, args...).Order("id").Limit(1).Pluck("id", &ids).Error
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

// inUse returns err if set, else Conflict saying which row still references kind id.
func inUse(err error, kind, id, refKind, refID string) error {
	if err != nil {
		return err
	}
	return errs.E(errs.Conflict, "%s %s: in use by %s %s", kind, id, refKind, refID)
}

// reload reads the stored row with id back into dst.
func reload[T any](tx *gorm.DB, dst *T, id string) error {
	var fresh T
	if err := tx.Take(&fresh, "id = ?", id).Error; err != nil {
		return err
	}
	*dst = fresh
	return nil
}

// storedTime is t as the store keeps it (UTC, microseconds, like the NowFunc
// in gormConfig), so a caller-set timestamp reads back equal and SQLite's text
// timestamps keep sorting in time order. Zero stays zero for GORM to fill.
func storedTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

// notFound is the NotFound error for kind id.
func notFound(kind, id string) error {
	return errs.E(errs.NotFound, "%s %s: not found", kind, id)
}

// readError maps a failed single-row read of kind id.
func readError(ctx context.Context, err error, kind, id string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return notFound(kind, id)
	}
	return dbError(ctx, err, kind+" "+id+": get")
}

// writeError maps a failed write of kind id: errors that already have a kind
// pass through, a duplicate key is Conflict, anything else goes to dbError.
// A nil err stays nil.
func writeError(ctx context.Context, err error, kind, id, action string) error {
	var e *errs.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return err
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return errs.E(errs.Conflict, "%s %s: already exists", kind, id)
	case errors.Is(err, gorm.ErrRecordNotFound):
		return notFound(kind, id)
	}
	return dbError(ctx, err, kind+" "+id+": "+action)
}

// checkJSON returns Invalid (naming field) when raw is set but not JSON, so
// bad documents fail with a clear message instead of a serializer error.
func checkJSON(field, object string, raw []byte) error {
	if len(raw) > 0 && !json.Valid(raw) {
		return errs.Field(field, "%s: %s is not valid JSON", object, field)
	}
	return nil
}

// jsonColumn is how a JSON document is written by map updates, matching
// GORM's json serializer on create: NULL when empty, compact text otherwise.
// The caller has checked raw with checkJSON.
func jsonColumn(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	b, err := json.Marshal(json.RawMessage(raw))
	if err != nil || string(b) == "null" {
		return nil
	}
	return string(b)
}
