package models

import (
	"context"
	"log/slog"
	"time"
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
type Store struct {
	// fields are the implementer's
}

// Open connects to the database and migrates the schema.
func Open(ctx context.Context, cfg Config) (*Store, error) { panic("not implemented") }

// Close closes the database.
func (s *Store) Close() error { panic("not implemented") }

// Ping checks the database answers (for /readyz).
func (s *Store) Ping(ctx context.Context) error { panic("not implemented") }

// Dialect returns "sqlite" or "postgres".
func (s *Store) Dialect() string { panic("not implemented") }

// EnsureDefaults creates the reserved local provider (root_path given) and the
// default template on it when they do not exist. Idempotent.
func (s *Store) EnsureDefaults(ctx context.Context, localRoot string) error {
	panic("not implemented")
}

// CreateProvider inserts p; Conflict if the id exists.
func (s *Store) CreateProvider(ctx context.Context, p *Provider) error { panic("not implemented") }

// GetProvider returns the provider; NotFound if absent.
func (s *Store) GetProvider(ctx context.Context, id string) (*Provider, error) {
	panic("not implemented")
}

// ListProviders returns all providers ordered by id.
func (s *Store) ListProviders(ctx context.Context) ([]Provider, error) { panic("not implemented") }

// UpdateProvider replaces provider and config of an existing provider; NotFound if absent.
func (s *Store) UpdateProvider(ctx context.Context, p *Provider) error { panic("not implemented") }

// DeleteProvider deletes the provider; NotFound if absent, Conflict if a template references it.
func (s *Store) DeleteProvider(ctx context.Context, id string) error { panic("not implemented") }

// CreateTemplate inserts t; Conflict if the id exists, Invalid (field provider_id) if the provider does not.
func (s *Store) CreateTemplate(ctx context.Context, t *Template) error { panic("not implemented") }

// GetTemplate returns the template; NotFound if absent.
func (s *Store) GetTemplate(ctx context.Context, id string) (*Template, error) {
	panic("not implemented")
}

// ListTemplates returns templates ordered by id, those of providerID only when it is not empty.
func (s *Store) ListTemplates(ctx context.Context, providerID string) ([]Template, error) {
	panic("not implemented")
}

// UpdateTemplate replaces an existing template; NotFound if absent, Invalid if its provider does not exist.
func (s *Store) UpdateTemplate(ctx context.Context, t *Template) error { panic("not implemented") }

// DeleteTemplate deletes the template; NotFound if absent, Conflict if a live workspace uses it.
func (s *Store) DeleteTemplate(ctx context.Context, id string) error { panic("not implemented") }

// CreateWorkspace inserts w; Conflict if the id exists.
func (s *Store) CreateWorkspace(ctx context.Context, w *Workspace) error { panic("not implemented") }

// GetWorkspace returns the workspace; NotFound if absent.
func (s *Store) GetWorkspace(ctx context.Context, id string) (*Workspace, error) {
	panic("not implemented")
}

// ListWorkspaces returns workspaces matching f, newest first.
func (s *Store) ListWorkspaces(ctx context.Context, f WorkspaceFilter) ([]Workspace, error) {
	panic("not implemented")
}

// SetWorkspacePhase sets phase and reason; NotFound if absent.
func (s *Store) SetWorkspacePhase(ctx context.Context, id, phase, reason string) error {
	panic("not implemented")
}

// SetWorkspaceRuntime stores the backend handle, path and runtime token.
func (s *Store) SetWorkspaceRuntime(ctx context.Context, id string, handle []byte, path, token string) error {
	panic("not implemented")
}

// DeleteWorkspace removes the workspace row; its open sessions end with
// reason workspace_deleted. NotFound if absent.
func (s *Store) DeleteWorkspace(ctx context.Context, id string) error { panic("not implemented") }

// CreateSession inserts an open session; NotFound (field workspace_id) if the workspace does not exist.
func (s *Store) CreateSession(ctx context.Context, ses *Session) error { panic("not implemented") }

// GetSession returns the session; NotFound if absent.
func (s *Store) GetSession(ctx context.Context, id string) (*Session, error) {
	panic("not implemented")
}

// ListSessions returns sessions matching f, newest first.
func (s *Store) ListSessions(ctx context.Context, f SessionFilter) ([]Session, error) {
	panic("not implemented")
}

// EndSession ends an open session with reason; ending an ended session is a no-op that keeps the first reason.
func (s *Store) EndSession(ctx context.Context, id, reason string) (*Session, error) {
	panic("not implemented")
}

// EndWorkspaceSessions ends every open session of a workspace with reason and returns how many ended.
func (s *Store) EndWorkspaceSessions(ctx context.Context, workspaceID, reason string) (int, error) {
	panic("not implemented")
}

// AppendEvent stores an event, setting its ID and CreatedAt.
func (s *Store) AppendEvent(ctx context.Context, e *Event) error { panic("not implemented") }

// ListEvents returns a workspace's events with ID > afterID, oldest first, at most limit (0: all).
func (s *Store) ListEvents(ctx context.Context, workspaceID string, afterID uint64, limit int) ([]Event, error) {
	panic("not implemented")
}

var _ = time.Now
