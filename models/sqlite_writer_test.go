package models

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"
)

// TestSQLiteWriterStatementWhileTransaction: a statement run on the
// writer outside a transaction, while a transaction holds the one writer
// connection, waits for that connection; the transaction then runs the
// same statement and must not wait for the other. With GORM's statement
// cache on the writer the transaction waited for the other's prepare,
// which waited for the transaction's connection: both hung until the
// outside call's context ended (a CI run's burst of creates held every
// write for minutes).
func TestSQLiteWriterStatementWhileTransaction(t *testing.T) {
	s := openTestSQLite(t)
	wdb, err := s.w.DB()
	if err != nil {
		t.Fatal(err)
	}
	const query = "SELECT count(*) FROM tenants WHERE id = ? AND description <> 'writer-statement-test'"
	inTx, release := make(chan struct{}), make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- s.w.WithContext(context.Background()).Transaction(func(tx *gorm.DB) error {
			close(inTx)
			<-release
			var n int64
			return tx.Raw(query, "x").Scan(&n).Error
		})
	}()
	<-inTx
	waitsBefore := wdb.Stats().WaitCount
	outside := make(chan error, 1)
	octx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		var n int64
		outside <- s.w.WithContext(octx).Raw(query, "x").Scan(&n).Error
	}()
	// The outside call is queued for the writer connection once the pool
	// counts its wait.
	for deadline := time.Now().Add(10 * time.Second); wdb.Stats().WaitCount == waitsBefore; {
		if time.Now().After(deadline) {
			t.Fatal("the outside statement never waited for the writer connection")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	select {
	case err := <-txDone:
		if err != nil {
			t.Fatalf("transaction: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the transaction's statement waited for the outside one (deadlock on the writer)")
	}
	if err := <-outside; err != nil {
		t.Fatalf("outside statement: %v", err)
	}
}
