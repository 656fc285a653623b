package temporalserver

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"google.golang.org/protobuf/types/known/durationpb"
)

// dbFile is the SQLite file under Config.DataDir.
const dbFile = "temporal.db"

// sqlConfig is the persistence config the server runs on.
//
// One connection: the sqlite plugin shares one pool per file between all four
// services, and SQLite has one writer at a time anyway; more connections only
// trade queueing in Go for SQLITE_BUSY errors on the read-then-write
// transactions the history service runs (the plugin turns unknown connect
// attributes into pragmas, so _txlock=immediate cannot be set). WAL with synchronous=normal makes
// each commit an append instead of a journal rewrite plus two fsyncs: a
// process crash loses nothing, a power cut can lose the last commits.
func sqlConfig(path string) *config.SQL {
	return &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: path,
		ConnectAttributes: map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  "normal",
			// Only other processes (a sqlite3 shell) can hold the lock.
			"busy_timeout": "10000",
		},
		MaxConns:     1,
		MaxIdleConns: 1,
	}
}

// prepareDatabase creates DataDir and the schema if missing, and the
// namespace if missing, and returns the server's persistence config.
func prepareDatabase(ctx context.Context, cfg Config) (*config.SQL, error) {
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("temporal server: data dir %s: %w", cfg.DataDir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("temporal server: data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, dbFile)
	if err := prepareFile(ctx, path); err != nil {
		return nil, fmt.Errorf("temporal server: database %s: %w", path, err)
	}

	sqlCfg := sqlConfig(path)
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, cfg.Namespace, false, cfg.SearchAttributes)
	if err != nil {
		return nil, fmt.Errorf("temporal server: namespace %s: %w", cfg.Namespace, err)
	}
	ns.Detail.Config.Retention = durationpb.New(cfg.Retention)
	// A no-op when the namespace exists, so a restart keeps its id and every
	// workflow in it. Search attributes added to Config since are registered
	// through the operator service once the server runs (ensureNamespace).
	if err := sqliteschema.CreateNamespaces(sqlCfg, ns); err != nil {
		return nil, fmt.Errorf("temporal server: namespace %s: create: %w", cfg.Namespace, err)
	}
	return sqlCfg, nil
}

// prepareFile creates the Temporal schema in path unless it is there, and
// forgets the cluster members of the previous run.
//
// It runs the server's own schema statements in one transaction on a
// connection of its own: a crash half-way through the first start leaves an
// empty database that the next start sets up again, not a half schema the
// server would fail on. (The plugin's connections are never closed, so they
// are no place for a throw-away transaction.)
//
// Each service seeds its membership ring with every member that heartbeated
// in the last 20 s. After a quick restart those are the previous run's
// services, now dead, and the ring does not form until joining them times
// out (30 s, during which matching has "not enough hosts"). This server is the
// database's only user, so no row there can belong to a live member.
func prepareFile(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=rwc&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer db.Close()

	var n int
	err = db.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'namespaces'`).Scan(&n)
	if err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	if n > 0 {
		if _, err := db.ExecContext(ctx, `DELETE FROM cluster_membership`); err != nil {
			return fmt.Errorf("forget cluster members: %w", err)
		}
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := sqliteschema.SetupSchemaOnDB(schemaTx{ctx: ctx, tx: tx}); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create schema: commit: %w", err)
	}
	return nil
}

// schemaTx gives SetupSchemaOnDB, which only calls Exec, a transaction to
// run in. The embedded interface is nil: any other method would panic, and
// the schema test would show it.
type schemaTx struct {
	sqlplugin.AdminDB
	ctx context.Context
	tx  *sql.Tx
}

func (s schemaTx) Exec(stmt string, args ...any) error {
	_, err := s.tx.ExecContext(s.ctx, stmt, args...)
	return err
}
