package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/libtnb/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	moderncsqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Dialects returned by Store.Dialect.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

const (
	// sqliteBusyTimeout is how long a SQLite connection waits for a lock held
	// by another connection (another process on the same file) before failing.
	sqliteBusyTimeout = 10 * time.Second
	// sqliteReaders bounds the SQLite read pool; WAL readers never block the
	// writer, and the machine has few cores.
	sqliteReaders = 4
	// postgresConns bounds the PostgreSQL pool so hundreds of concurrent
	// workflows queue in Go instead of exhausting max_connections (100 by default).
	postgresConns = 20
	// migrateLockKey is the PostgreSQL advisory lock that serialises schema
	// migration between Primer processes sharing one database.
	migrateLockKey = 0x7072696d6572 // "primer"
)

// allModels are migrated by Open, parents first.
var allModels = []any{&Installation{}, &wire.Tenant{}, &wire.APIKey{}, &wire.AuditEntry{}, &wire.Provider{}, &wire.Template{}, &wire.Pool{}, &wire.Workspace{}, &wire.Snapshot{}, &wire.Session{}, &wire.Event{},
	&wire.Suite{}, &wire.SuiteCase{}, &wire.Run{}, &wire.CaseResult{}, &wire.LLMProvider{}, &wire.Agent{},
	&wire.SessionRun{}, &wire.TranscriptEntry{}, &ConsoleSession{}, &PlatformSecret{}, &wire.Preview{}, &GatewayUsage{}}

// Open connects to the database and migrates the schema.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var (
		s   *Store
		err error
	)
	switch url := cfg.URL; {
	case url == "":
		s, err = openSQLite(ctx, cfg.SQLitePath)
	case strings.HasPrefix(url, "sqlite://"):
		s, err = openSQLite(ctx, strings.TrimPrefix(url, "sqlite://"))
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		s, err = openPostgres(ctx, url)
	default:
		// Do not echo the URL: it may carry a password.
		return nil, errs.E(errs.Invalid, "database: url: want sqlite://PATH, postgres:// or postgresql://")
	}
	if err != nil {
		return nil, err
	}
	s.log = log
	s.hub, s.origin, s.closed = newEventHub(), newOrigin(), make(chan struct{})
	if s.dialect == DialectPostgres {
		// One channel per schema: stores of other schemas in the same
		// database (tests, other installations) do not wake these streams.
		var schema string
		if err := s.w.WithContext(ctx).Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
			_ = s.Close()
			return nil, dbError(ctx, err, "database: current schema")
		}
		s.url, s.channel = cfg.URL, "primer_events:"+schema
	}
	if err := s.migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	log.Info("database ready", "dialect", s.dialect)
	return s, nil
}

// gormConfig keeps GORM quiet (SQL with values would leak runtime tokens),
// translates driver errors to gorm.ErrDuplicatedKey and friends on both
// dialects, and stamps times in UTC at microsecond precision so SQLite text
// timestamps sort correctly and both dialects return what was written.
func gormConfig() *gorm.Config {
	return &gorm.Config{
		Logger:         logger.Discard,
		TranslateError: true,
		// Single-statement writes are atomic on their own; multi-statement
		// ones use explicit transactions. Skipping GORM's implicit BEGIN and
		// COMMIT around each insert or update roughly halves their cost.
		SkipDefaultTransaction: true,
		PrepareStmt:            true,
		NowFunc:                func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
	}
}

// openSQLite opens path with one writer connection and a small reader pool.
// SQLite allows one writer at a time; queueing writers on a single Go
// connection (rather than letting many connections race for the file lock)
// means hundreds of concurrent writers wait their turn instead of failing
// with SQLITE_BUSY. WAL lets the readers run alongside the writer.
func openSQLite(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errs.E(errs.Invalid, "database: sqlite path is empty")
	}
	memory := path == ":memory:"
	if !memory {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, errs.E(errs.Other, "database %s: create directory: %w", path, err)
		}
	}
	// immediate: a write transaction takes the write lock at BEGIN, so it
	// waits (busy_timeout) instead of failing when it later upgrades a read
	// lock. synchronous(NORMAL) is safe in WAL mode: an application crash
	// loses nothing, a power loss may lose the last commits but never
	// corrupts the file.
	params := []string{
		"_txlock=immediate",
		fmt.Sprintf("_pragma=busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()),
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(NORMAL)",
		"_pragma=foreign_keys(1)",
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	dsn := path + sep + strings.Join(params, "&")

	// The writer prepares no statements. GORM's statement cache makes a
	// goroutine that meets a statement another goroutine is preparing wait
	// for that prepare, and a prepare outside a transaction needs a
	// connection: with one writer connection held by a transaction that
	// then runs the same statement, each waits for the other until a
	// context ends. A burst of creates on a freshly started platform hit
	// it in CI (inQuota reads the tenant outside its transaction and
	// again inside it), holding every write for minutes. SQLite
	// compiles a statement in microseconds; the readers keep their cache.
	wcfg := gormConfig()
	wcfg.PrepareStmt = false
	w, err := gorm.Open(sqlite.Open(dsn), wcfg)
	if err != nil {
		return nil, errs.E(errs.Unavailable, "database %s: open: %w", path, err)
	}
	wdb, err := w.DB()
	if err != nil {
		return nil, errs.E(errs.Other, "database %s: open: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	s := &Store{w: w, r: w, dialect: DialectSQLite}
	if memory {
		// Every connection to :memory: is its own database: share the one.
		return s, nil
	}
	r, err := gorm.Open(sqlite.Open(dsn), gormConfig())
	if err != nil {
		_ = wdb.Close()
		return nil, errs.E(errs.Unavailable, "database %s: open: %w", path, err)
	}
	rdb, err := r.DB()
	if err != nil {
		_ = wdb.Close()
		return nil, errs.E(errs.Other, "database %s: open: %w", path, err)
	}
	rdb.SetMaxOpenConns(sqliteReaders)
	rdb.SetMaxIdleConns(sqliteReaders)
	s.r = r
	return s, nil
}

// openPostgres opens url; one pool serves reads and writes.
func openPostgres(ctx context.Context, url string) (*Store, error) {
	db, err := gorm.Open(postgres.Open(url), gormConfig())
	if err != nil {
		// pgx errors name host and user but never the password.
		return nil, errs.E(errs.Unavailable, "database: open postgres: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, errs.E(errs.Other, "database: open postgres: %w", err)
	}
	sqlDB.SetMaxOpenConns(postgresConns)
	sqlDB.SetMaxIdleConns(postgresConns / 2)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	return &Store{w: db, r: db, dialect: DialectPostgres}, nil
}

// migrate creates or alters the tables, in one transaction so a failed
// migration leaves nothing half-done. On PostgreSQL an advisory lock keeps
// two servers starting against the same database from racing on CREATE
// TABLE; on SQLite the transaction's write lock does the same.
func (s *Store) migrate(ctx context.Context) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if s.dialect != DialectPostgres {
			if err := migrateAdditive(tx, allModels); err != nil {
				return err
			}
		} else {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", migrateLockKey).Error; err != nil {
				return err
			}
			if err := tx.AutoMigrate(allModels...); err != nil {
				return err
			}
		}
		return migrateKeyParents(tx)
	})
	if err != nil {
		return dbError(ctx, err, "database: migrate")
	}
	return nil
}

// migrateAdditive creates the missing tables, columns and indexes of models
// and leaves everything that exists alone. It is how SQLite is migrated:
// there GORM's AutoMigrate compares each column with what the driver
// reports, and for a table that holds rows the driver reports text columns
// as MaxInt64 long, so AutoMigrate would rebuild (copy, drop, rename) every
// non-empty table with a sized column on every start. Primer's schema
// changes are additive, and a new NOT NULL column needs a default so the
// rows already there get a value.
func migrateAdditive(tx *gorm.DB, models []any) error {
	m := tx.Migrator()
	for _, model := range models {
		if !m.HasTable(model) {
			if err := m.CreateTable(model); err != nil {
				return err
			}
			continue
		}
		stmt := &gorm.Statement{DB: tx}
		if err := stmt.Parse(model); err != nil {
			return err
		}
		for _, name := range stmt.Schema.DBNames {
			if !m.HasColumn(model, name) {
				if err := m.AddColumn(model, name); err != nil {
					return err
				}
			}
		}
		for _, idx := range stmt.Schema.ParseIndexes() {
			if !m.HasIndex(model, idx.Name) {
				if err := m.CreateIndex(model, idx.Name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.closed != nil {
			close(s.closed)
		}
	})
	var errList []error
	for _, db := range s.pools() {
		sqlDB, err := db.DB()
		if err == nil {
			err = sqlDB.Close()
		}
		errList = append(errList, err)
	}
	if err := errors.Join(errList...); err != nil {
		return errs.E(errs.Other, "database: close: %w", err)
	}
	return nil
}

// pools returns the distinct connection pools of s.
func (s *Store) pools() []*gorm.DB {
	if s.r == s.w {
		return []*gorm.DB{s.w}
	}
	return []*gorm.DB{s.w, s.r}
}

// Ping checks the database answers (for /readyz).
func (s *Store) Ping(ctx context.Context) error {
	for _, db := range s.pools() {
		sqlDB, err := db.DB()
		if err != nil {
			return errs.E(errs.Other, "database: ping: %w", err)
		}
		if err := sqlDB.PingContext(ctx); err != nil {
			return dbError(ctx, err, "database: ping")
		}
	}
	return nil
}

// Dialect returns "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.dialect }

// dbError gives an unexpected database error its kind: Canceled or Timeout
// when ctx ended, Unavailable when the database could not be reached or
// stayed locked (retrying may help), Other otherwise. what names the object
// and action, e.g. "workspace ws-1: set phase".
func dbError(ctx context.Context, err error, what string) error {
	var (
		netErr  net.Error
		liteErr *moderncsqlite.Error
	)
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return errs.E(errs.Canceled, "%s: %w", what, err)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errs.E(errs.Timeout, "%s: %w", what, err)
	case errors.As(err, &netErr), errors.Is(err, sql.ErrConnDone):
		return errs.E(errs.Unavailable, "%s: %w", what, err)
	case errors.As(err, &liteErr) && (liteErr.Code()&0xff == sqlite3.SQLITE_BUSY || liteErr.Code()&0xff == sqlite3.SQLITE_LOCKED):
		return errs.E(errs.Unavailable, "%s: %w", what, err)
	}
	return errs.E(errs.Other, "%s: %w", what, err)
}
