package server

import (
	"context"
	"testing"

	"github.com/primerhq/primer/errs"
)

// A state operation that waited for stateMu while its connection closed
// does not run, and leaves the mutex free for the next.
func TestLockStateAfterClose(t *testing.T) {
	s := &Server{}
	ctx, cancel := context.WithCancel(context.Background())
	unlock, err := s.lockState(ctx)
	if err != nil {
		t.Fatalf("lockState on a live connection: %v", err)
	}
	unlock()
	cancel()
	if _, err := s.lockState(ctx); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("lockState after the connection closed = %v, want unavailable", err)
	}
	if !s.stateMu.TryLock() {
		t.Fatal("stateMu held after a refused lockState")
	}
}
