package models

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/libtnb/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/wire"
)

// The v0 models are the tables as they were before template generations,
// warm pools and resumed sessions, so the test can write a database the way
// that version did and check Open brings it up to date.

type v0Template struct {
	ID          string          `gorm:"primaryKey;size:128"`
	ProviderID  string          `gorm:"size:128;not null;index"`
	Description string          ``
	Backend     json.RawMessage `gorm:"serializer:json;type:text"`
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (v0Template) TableName() string { return "templates" }

type v0Workspace struct {
	ID           string            `gorm:"primaryKey;size:64"`
	TemplateID   string            `gorm:"size:128;not null;index"`
	ProviderID   string            `gorm:"size:128;not null;index"`
	Backend      string            `gorm:"size:32;not null"`
	Phase        string            `gorm:"size:32;not null;index"`
	Reason       string            ``
	Labels       map[string]string `gorm:"serializer:json;type:text"`
	Path         string            ``
	Handle       json.RawMessage   `gorm:"serializer:json;type:text"`
	RuntimeToken string            `gorm:"size:128"`
	WorkflowID   string            `gorm:"size:128"`
	CreatedAt    time.Time         `gorm:"index"`
	UpdatedAt    time.Time
}

func (v0Workspace) TableName() string { return "workspaces" }

type v0Session struct {
	ID          string            `gorm:"primaryKey;size:64"`
	WorkspaceID string            `gorm:"size:64;not null;index:idx_sessions_workspace_status,priority:1"`
	Agent       string            ``
	Metadata    map[string]string `gorm:"serializer:json;type:text"`
	Status      string            `gorm:"size:16;not null;index:idx_sessions_workspace_status,priority:2"`
	EndReason   string            ``
	CreatedAt   time.Time
	EndedAt     *time.Time
}

func (v0Session) TableName() string { return "sessions" }

// TestMigrateExistingDatabase opens a database written with the v0 schema,
// drops nothing, and checks the new columns arrive with sensible values for
// the old rows, the new features work on them, and a second Open changes
// nothing in the schema.
func TestMigrateExistingDatabase(t *testing.T) {
	for _, d := range []struct {
		name string
		// setup returns the Store URL and a plain GORM connection to the same database.
		setup func(t *testing.T) (string, *gorm.DB)
	}{
		{DialectSQLite, func(t *testing.T) (string, *gorm.DB) {
			path := filepath.Join(t.TempDir(), "primer.db")
			db, err := gorm.Open(sqlite.Open(path), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			return "sqlite://" + path, db
		}},
		{DialectPostgres, func(t *testing.T) (string, *gorm.DB) {
			url := testenv.PostgresURL(t)
			db, err := gorm.Open(postgres.Open(url), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			return url, db
		}},
	} {
		t.Run(d.name, func(t *testing.T) {
			ctx := t.Context()
			url, old := d.setup(t)
			must(t, old.AutoMigrate(&wire.Provider{}, &v0Template{}, &v0Workspace{}, &v0Session{}, &wire.Event{}))
			ended := time.Now().UTC()
			must(t, old.Create(&wire.Provider{ID: "p", Provider: wire.BackendLocal}).Error)
			must(t, old.Create(&v0Template{ID: "t", ProviderID: "p", Backend: json.RawMessage(`{"kind":"local"}`)}).Error)
			must(t, old.Create(&v0Workspace{ID: "ws-old", TemplateID: "t", ProviderID: "p", Backend: wire.BackendLocal, Phase: wire.PhaseRunning}).Error)
			must(t, old.Create(&v0Session{ID: "ses-lost", WorkspaceID: "ws-old", Agent: "claude", Metadata: map[string]string{"k": "v"},
				Status: wire.SessionEnded, EndReason: wire.ReasonWorkspaceLost, EndedAt: &ended}).Error)
			must(t, old.Create(&v0Session{ID: "ses-open", WorkspaceID: "ws-old", Status: wire.SessionOpen}).Error)
			sqlOld, err := old.DB()
			must(t, err)
			must(t, sqlOld.Close())

			s, err := Open(ctx, Config{URL: url})
			must(t, err)
			defer func() { _ = s.Close() }()

			tp, err := s.GetTemplate(ctx, "t")
			must(t, err)
			w, err := s.GetWorkspace(ctx, "ws-old")
			must(t, err)
			if tp.Generation != 1 || w.TemplateGeneration != 0 || w.PoolID != "" || w.PoolState != "" {
				t.Errorf("old rows after migration: template generation %d, workspace generation %d pool %q/%q; want 1, 0, empty",
					tp.Generation, w.TemplateGeneration, w.PoolID, w.PoolState)
			}
			// Empty strings, not NULLs: the store's conditions compare with ''.
			for _, q := range []struct {
				sql  string
				want int
			}{
				{"SELECT count(*) FROM workspaces WHERE pool_id = '' AND pool_state = '' AND template_generation = 0", 1},
				{"SELECT count(*) FROM sessions WHERE resumed_from = ''", 2},
				{"SELECT count(*) FROM templates WHERE generation = 1", 1},
			} {
				var n int
				must(t, s.w.Raw(q.sql).Scan(&n).Error)
				if n != q.want {
					t.Errorf("%s = %d, want %d", q.sql, n, q.want)
				}
			}

			resumed, err := s.ResumeLostSessions(ctx, "ws-old", time.Time{})
			must(t, err)
			if len(resumed) != 1 || resumed[0].ResumedFrom != "ses-lost" || resumed[0].Agent != "claude" {
				t.Errorf("ResumeLostSessions on old rows = %+v, want one successor of ses-lost", resumed)
			}
			must(t, s.UpdateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p"}))
			must(t, s.CreatePool(ctx, &wire.Pool{ID: "pool", TemplateID: "t"}))
			warm := newPoolWorkspace("pool", wire.PoolIdle, wire.PhaseRunning, time.Now())
			must(t, s.CreateWorkspace(ctx, warm))
			got, err := s.LeaseWorkspace(ctx, "pool")
			must(t, err)
			if got == nil || got.ID != warm.ID || got.TemplateGeneration != 2 {
				t.Errorf("LeaseWorkspace after migration = %+v, want %s at generation 2", got, warm.ID)
			}
			before := schemaFingerprint(t, s)
			must(t, s.Close())

			s, err = Open(ctx, Config{URL: url})
			must(t, err)
			if after := schemaFingerprint(t, s); after != before {
				t.Errorf("second Open changed the schema:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			tp, err = s.GetTemplate(ctx, "t")
			must(t, err)
			if tp.Generation != 2 {
				t.Errorf("generation after reopen = %d, want 2", tp.Generation)
			}
		})
	}
}

// schemaFingerprint describes the tables, columns and indexes of s's
// database, with SQLite's schema_version, which any DDL (even one that
// rebuilds a table to the same shape) increments.
func schemaFingerprint(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	switch s.Dialect() {
	case DialectSQLite:
		var version int
		must(t, s.w.Raw("PRAGMA schema_version").Scan(&version).Error)
		fmt.Fprintf(&b, "schema_version %d\n", version)
		var sqls []string
		must(t, s.w.Raw("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name").Scan(&sqls).Error)
		b.WriteString(strings.Join(sqls, "\n"))
	default:
		var cols []struct {
			TableName, ColumnName, DataType, IsNullable string
			ColumnDefault                               *string
		}
		must(t, s.w.Raw(`SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
			WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`).Scan(&cols).Error)
		for _, c := range cols {
			def := "-"
			if c.ColumnDefault != nil {
				def = *c.ColumnDefault
			}
			fmt.Fprintf(&b, "%s.%s %s null=%s default=%s\n", c.TableName, c.ColumnName, c.DataType, c.IsNullable, def)
		}
		var idx []string
		must(t, s.w.Raw("SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname").Scan(&idx).Error)
		b.WriteString(strings.Join(idx, "\n"))
	}
	return b.String()
}

// The pre-tenant models are the tables as they were before tenants (the
// commit before "tenants foundation"): no tenant_id anywhere, no cpu or
// memory on workspaces, no shared providers.

type ptProvider struct {
	ID        string          `gorm:"primaryKey;size:128"`
	Provider  string          `gorm:"size:32;not null"`
	Config    json.RawMessage `gorm:"serializer:json;type:text"`
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (ptProvider) TableName() string { return "providers" }

type ptTemplate struct {
	ID          string          `gorm:"primaryKey;size:128"`
	ProviderID  string          `gorm:"size:128;not null;index"`
	Description string          ``
	Backend     json.RawMessage `gorm:"serializer:json;type:text"`
	Generation  int64           `gorm:"not null;default:1"`
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (ptTemplate) TableName() string { return "templates" }

type ptPool struct {
	ID         string `gorm:"primaryKey;size:128"`
	TemplateID string `gorm:"size:128;not null;index"`
	Size       int    `gorm:"not null"`
	CreatedAt  time.Time
	UpdatedAt  time.Time
	LeaseTTL   string `gorm:"size:32;not null;default:''"`
}

func (ptPool) TableName() string { return "pools" }

type ptWorkspace struct {
	ID                 string            `gorm:"primaryKey;size:64"`
	TemplateID         string            `gorm:"size:128;not null;index"`
	ProviderID         string            `gorm:"size:128;not null;index"`
	Backend            string            `gorm:"size:32;not null"`
	Phase              string            `gorm:"size:32;not null;index"`
	Reason             string            ``
	Labels             map[string]string `gorm:"serializer:json;type:text"`
	TemplateGeneration int64             `gorm:"not null;default:0"`
	PoolID             string            `gorm:"size:128;not null;default:'';index:idx_workspaces_pool,priority:1"`
	PoolState          string            `gorm:"size:16;not null;default:'';index:idx_workspaces_pool,priority:2"`
	ExpiresAt          *time.Time
	MaxExpiresAt       *time.Time
	IdleDeadline       *time.Time
	LeaseExpiresAt     *time.Time
	MaxLifetimeMS      int64           `gorm:"not null;default:0"`
	IdleTimeoutMS      int64           `gorm:"not null;default:0"`
	Path               string          ``
	Handle             json.RawMessage `gorm:"serializer:json;type:text"`
	RuntimeToken       string          `gorm:"size:128"`
	WorkflowID         string          `gorm:"size:128"`
	CreatedAt          time.Time       `gorm:"index"`
	UpdatedAt          time.Time
}

func (ptWorkspace) TableName() string { return "workspaces" }

type ptSession struct {
	ID          string            `gorm:"primaryKey;size:64"`
	WorkspaceID string            `gorm:"size:64;not null;index:idx_sessions_workspace_status,priority:1"`
	Agent       string            ``
	Metadata    map[string]string `gorm:"serializer:json;type:text"`
	Status      string            `gorm:"size:16;not null;index:idx_sessions_workspace_status,priority:2"`
	ResumedFrom string            `gorm:"size:64;not null;default:'';uniqueIndex:idx_sessions_resumed_from,where:resumed_from <> ''"`
	EndReason   string            ``
	CreatedAt   time.Time
	EndedAt     *time.Time
}

func (ptSession) TableName() string { return "sessions" }

type ptEvent struct {
	ID          uint64          `gorm:"primaryKey;autoIncrement;index:idx_events_workspace_id,priority:2"`
	WorkspaceID string          `gorm:"size:64;not null;index:idx_events_workspace_id,priority:1"`
	Type        string          `gorm:"size:64;not null"`
	Data        json.RawMessage `gorm:"serializer:json;type:text"`
	CreatedAt   time.Time
}

func (ptEvent) TableName() string { return "events" }

type ptSuite struct {
	ID          string          `gorm:"primaryKey;size:128"`
	Description string          ``
	TemplateID  string          `gorm:"size:128;not null;default:'';index"`
	PoolID      string          `gorm:"size:128;not null;default:'';index"`
	Spec        json.RawMessage `gorm:"serializer:json;type:text"`
	CaseCount   int             `gorm:"not null;default:0"`
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (ptSuite) TableName() string { return "suites" }

type ptRun struct {
	ID          string          `gorm:"primaryKey;size:200"`
	SuiteID     string          `gorm:"size:128;not null;index"`
	Status      string          `gorm:"size:16;not null;index"`
	Reason      string          ``
	Trigger     string          `gorm:"size:16;not null;default:''"`
	TriggeredBy string          `gorm:"size:200;not null;default:''"`
	Spec        json.RawMessage `gorm:"serializer:json;type:text"`
	Selection   json.RawMessage `gorm:"serializer:json;type:text"`
	Total       int             `gorm:"not null;default:0"`
	WorkflowID  string          `gorm:"size:200"`
	CreatedAt   time.Time       `gorm:"index"`
	StartedAt   *time.Time
	EndedAt     *time.Time
}

func (ptRun) TableName() string { return "runs" }

// ptRows is everything a pre-tenant database holds, read with the
// pre-tenant models: before the upgrade and again after it, to compare.
type ptRows struct {
	Providers  []ptProvider
	Templates  []ptTemplate
	Pools      []ptPool
	Workspaces []ptWorkspace
	Sessions   []ptSession
	Events     []ptEvent
	Suites     []ptSuite
	Runs       []ptRun
}

// readPTRows reads every pre-tenant table of db, ordered, with times in UTC.
func readPTRows(t *testing.T, db *gorm.DB) ptRows {
	t.Helper()
	var r ptRows
	for _, dst := range []any{&r.Providers, &r.Templates, &r.Pools, &r.Workspaces, &r.Sessions, &r.Events, &r.Suites, &r.Runs} {
		must(t, db.Order("id").Find(dst).Error)
	}
	utcTimes(reflect.ValueOf(&r).Elem())
	return r
}

// utcTimes sets every time in v to UTC, so rows read through two
// connections compare equal when they hold the same instants.
func utcTimes(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			utcTimes(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			utcTimes(v.Index(i))
		}
	case reflect.Struct:
		if tm, ok := v.Addr().Interface().(*time.Time); ok {
			*tm = tm.UTC()
			return
		}
		for i := range v.NumField() {
			utcTimes(v.Field(i))
		}
	}
}

// TestMigrateBeforeTenants upgrades a database written before tenants
// existed: every row survives with every field as it was, every resource
// belongs to the default tenant, the default tenant exists after
// EnsureDefaults, and its quota applies to the old rows.
func TestMigrateBeforeTenants(t *testing.T) {
	for _, d := range []struct {
		name  string
		setup func(t *testing.T) (string, *gorm.DB)
	}{
		{DialectSQLite, func(t *testing.T) (string, *gorm.DB) {
			path := filepath.Join(t.TempDir(), "primer.db")
			db, err := gorm.Open(sqlite.Open(path), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			return "sqlite://" + path, db
		}},
		{DialectPostgres, func(t *testing.T) (string, *gorm.DB) {
			url := testenv.PostgresURL(t)
			db, err := gorm.Open(postgres.Open(url), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			return url, db
		}},
	} {
		t.Run(d.name, func(t *testing.T) {
			ctx := t.Context()
			url, old := d.setup(t)
			must(t, old.AutoMigrate(&ptProvider{}, &ptTemplate{}, &ptPool{}, &ptWorkspace{}, &ptSession{}, &ptEvent{},
				&ptSuite{}, &ptRun{}, &wire.SuiteCase{}, &wire.CaseResult{}))
			at := time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC)
			later := at.Add(time.Hour)
			for _, row := range []any{
				&ptProvider{ID: "local", Provider: wire.BackendLocal, Config: json.RawMessage(`{"kind":"local","root_path":"/srv/primer"}`), CreatedAt: at, UpdatedAt: at},
				&ptProvider{ID: "docker", Provider: wire.BackendContainer, Config: json.RawMessage(`{"kind":"container"}`), CreatedAt: at, UpdatedAt: at},
				&ptTemplate{ID: "default", ProviderID: "local", Description: "the default", Backend: json.RawMessage(`{"kind":"local"}`), Generation: 1, CreatedAt: at, UpdatedAt: at},
				&ptTemplate{ID: "py", ProviderID: "docker", Backend: json.RawMessage(`{"kind":"container","image":"python:3.12"}`), Generation: 3, CreatedAt: at, UpdatedAt: later},
				&ptPool{ID: "warm", TemplateID: "py", Size: 2, LeaseTTL: "30m", CreatedAt: at, UpdatedAt: at},
				&ptWorkspace{ID: "ws-a", TemplateID: "default", ProviderID: "local", Backend: wire.BackendLocal, Phase: wire.PhaseRunning,
					Labels: map[string]string{"team": "evals"}, Path: "/srv/primer/ws-a", Handle: json.RawMessage(`{"backend":"local","id":"ws-a"}`),
					RuntimeToken: "rt-secret", WorkflowID: "workspace-ws-a", TemplateGeneration: 1, ExpiresAt: &later, MaxLifetimeMS: 7200000, CreatedAt: at, UpdatedAt: later},
				&ptWorkspace{ID: "ws-b", TemplateID: "py", ProviderID: "docker", Backend: wire.BackendContainer, Phase: wire.PhaseTerminating, Reason: "deleted by the user",
					PoolID: "warm", PoolState: wire.PoolLeased, TemplateGeneration: 3, WorkflowID: "workspace-ws-b", CreatedAt: later, UpdatedAt: later},
				&ptSession{ID: "ses-1", WorkspaceID: "ws-a", Agent: "claude", Metadata: map[string]string{"k": "v"}, Status: wire.SessionOpen, CreatedAt: at},
				&ptSession{ID: "ses-2", WorkspaceID: "ws-b", Status: wire.SessionEnded, EndReason: wire.ReasonWorkspaceDeleted, CreatedAt: at, EndedAt: &later},
				&ptEvent{WorkspaceID: "ws-a", Type: wire.EventPhaseChanged, Data: json.RawMessage(`{"phase":"running"}`), CreatedAt: at},
				&ptEvent{WorkspaceID: "ws-b", Type: wire.EventPhaseChanged, Data: json.RawMessage(`{"phase":"terminating"}`), CreatedAt: later},
				&ptSuite{ID: "nightly", TemplateID: "default", Spec: json.RawMessage(`{"id":"nightly","template_id":"default"}`), CaseCount: 1, CreatedAt: at, UpdatedAt: at},
				&wire.SuiteCase{SuiteID: "nightly", Ordinal: 0, CaseID: "one", Spec: json.RawMessage(`{"id":"one"}`)},
				&ptRun{ID: "run-1", SuiteID: "nightly", Status: wire.RunSucceeded, Trigger: wire.TriggerUser, TriggeredBy: "ann", Total: 1,
					Spec: json.RawMessage(`{"id":"nightly"}`), WorkflowID: "run-1", CreatedAt: at, StartedAt: &at, EndedAt: &later},
				&wire.CaseResult{RunID: "run-1", Ordinal: 0, CaseID: "one", Status: wire.CaseDone, Verdict: "pass", Stdout: "ok\n"},
			} {
				must(t, old.Create(row).Error)
			}
			before := readPTRows(t, old)
			sqlOld, err := old.DB()
			must(t, err)
			must(t, sqlOld.Close())

			s, err := Open(ctx, Config{URL: url})
			must(t, err)
			defer func() { _ = s.Close() }()
			must(t, s.EnsureDefaults(ctx, t.TempDir()))

			// Nothing lost: every row of every old table, every field.
			if after := readPTRows(t, s.w); !reflect.DeepEqual(after, before) {
				t.Errorf("rows after the upgrade differ:\nbefore %+v\nafter  %+v", before, after)
			}
			// Every old row is the default tenant's, with no cpu or memory.
			for _, table := range []string{"providers", "templates", "pools", "workspaces", "sessions", "events", "suites", "runs"} {
				var all, def int64
				must(t, s.w.Table(table).Count(&all).Error)
				must(t, s.w.Table(table).Where("tenant_id = ?", wire.DefaultTenantID).Count(&def).Error)
				if all == 0 || def != all {
					t.Errorf("%s: %d of %d rows in tenant %s, want all", table, def, all, wire.DefaultTenantID)
				}
			}
			// EnsureDefaults added nothing where the old rows stood: the
			// old local provider and default template are kept as they were.
			p, err := s.GetProvider(ctx, "local")
			must(t, err)
			jsonEq(t, p.Config, `{"kind":"local","root_path":"/srv/primer"}`)
			tp, err := s.GetTemplate(ctx, "py")
			must(t, err)
			pool, err := s.GetPool(ctx, "warm")
			must(t, err)
			w, err := s.GetWorkspace(ctx, "ws-a")
			must(t, err)
			su, err := s.GetSuite(ctx, "nightly")
			must(t, err)
			run, err := s.GetRun(ctx, "run-1")
			must(t, err)
			for what, got := range map[string]string{"provider": p.TenantID, "template": tp.TenantID, "pool": pool.TenantID,
				"workspace": w.TenantID, "suite": su.TenantID, "run": run.TenantID} {
				if got != wire.DefaultTenantID {
					t.Errorf("%s read back with tenant %q, want %q", what, got, wire.DefaultTenantID)
				}
			}
			if w.CPUCores != 0 || w.MemoryBytes != 0 || p.Shared {
				t.Errorf("old workspace cpu %v memory %d, provider shared %v; want 0, 0, false", w.CPUCores, w.MemoryBytes, p.Shared)
			}
			tenant, err := s.GetTenant(ctx, wire.DefaultTenantID)
			must(t, err)
			if tenant.Quota != (wire.Quota{}) {
				t.Errorf("default tenant quota %+v, want none", tenant.Quota)
			}
			// The old rows count toward the default tenant: a quota of two
			// workspaces (ws-b is terminating but still there) is full.
			u, err := s.TenantUsage(ctx, wire.DefaultTenantID)
			must(t, err)
			if want := (wire.Usage{Workspaces: 2, Pools: 1}); u != want {
				t.Errorf("TenantUsage(default) = %+v, want %+v", u, want)
			}
			_, err = s.UpdateTenant(ctx, &wire.Tenant{ID: wire.DefaultTenantID, Quota: wire.Quota{MaxWorkspaces: 2}})
			must(t, err)
			wantErr(t, s.CreateWorkspace(ctx, newWorkspace("default", "local")), errs.Exhausted,
				"tenant default: quota max_workspaces: limit 2, in use 2")

			// A second Open leaves the upgraded schema as it is.
			fp := schemaFingerprint(t, s)
			must(t, s.Close())
			s, err = Open(ctx, Config{URL: url})
			must(t, err)
			if again := schemaFingerprint(t, s); again != fp {
				t.Errorf("second Open changed the schema:\nbefore:\n%s\nafter:\n%s", fp, again)
			}
		})
	}
}
