package models

import (
	"time"

	"testing"

	"github.com/primerhq/primer/wire"
)

// BenchmarkLeaseWorkspace is the pool's hot path on SQLite: lease the one
// idle workspace and return it. BenchmarkRawLeaseSQL is the floor under it,
// the same two row updates as plain SQL on the same database, so the ratio
// is what the store adds. make bench runs both and prints ns/op for each.
func BenchmarkLeaseWorkspace(b *testing.B) {
	s, w := leaseBenchFixture(b)
	ctx := b.Context()
	for b.Loop() {
		got, err := s.LeaseWorkspace(ctx, "pool-1")
		if err != nil || got == nil || got.ID != w.ID {
			b.Fatalf("lease = %v, %v; want %s", got, err, w.ID)
		}
		if err := s.SetPoolState(ctx, w.ID, wire.PoolLeased, wire.PoolIdle); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawLeaseSQL(b *testing.B) {
	s, w := leaseBenchFixture(b)
	db, err := s.w.DB()
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	for b.Loop() {
		res, err := db.ExecContext(ctx, `UPDATE workspaces SET pool_state = ? WHERE id = ? AND pool_state = ?`, wire.PoolLeased, w.ID, wire.PoolIdle)
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			b.Fatalf("raw lease updated %d rows, want 1", n)
		}
		if _, err := db.ExecContext(ctx, `UPDATE workspaces SET pool_state = ? WHERE id = ?`, wire.PoolIdle, w.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// leaseBenchFixture opens a SQLite store with pool-1 holding one idle,
// running workspace.
func leaseBenchFixture(b *testing.B) (*Store, *wire.Workspace) {
	s, err := Open(b.Context(), Config{SQLitePath: b.TempDir() + "/primer.db"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	ctx := b.Context()
	for _, err := range []error{
		s.CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendLocal}),
		s.CreateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p"}),
		s.CreatePool(ctx, &wire.Pool{ID: "pool-1", TemplateID: "t", Size: 1}),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	w := newPoolWorkspace("pool-1", wire.PoolIdle, wire.PhaseRunning, time.Now().UTC())
	if err := s.CreateWorkspace(ctx, w); err != nil {
		b.Fatal(err)
	}
	return s, w
}
