package models

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libtnb/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/primerhq/primer/internal/testenv"
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
			must(t, old.AutoMigrate(&Provider{}, &v0Template{}, &v0Workspace{}, &v0Session{}, &Event{}))
			ended := time.Now().UTC()
			must(t, old.Create(&Provider{ID: "p", Provider: BackendLocal}).Error)
			must(t, old.Create(&v0Template{ID: "t", ProviderID: "p", Backend: json.RawMessage(`{"kind":"local"}`)}).Error)
			must(t, old.Create(&v0Workspace{ID: "ws-old", TemplateID: "t", ProviderID: "p", Backend: BackendLocal, Phase: PhaseRunning}).Error)
			must(t, old.Create(&v0Session{ID: "ses-lost", WorkspaceID: "ws-old", Agent: "claude", Metadata: map[string]string{"k": "v"},
				Status: SessionEnded, EndReason: ReasonWorkspaceLost, EndedAt: &ended}).Error)
			must(t, old.Create(&v0Session{ID: "ses-open", WorkspaceID: "ws-old", Status: SessionOpen}).Error)
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
			must(t, s.UpdateTemplate(ctx, &Template{ID: "t", ProviderID: "p"}))
			must(t, s.CreatePool(ctx, &Pool{ID: "pool", TemplateID: "t"}))
			warm := newPoolWorkspace("pool", PoolIdle, PhaseRunning, time.Now())
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
