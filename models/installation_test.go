package models

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The installation id is made once, agreed on by concurrent callers, and
// kept across re-opens of the database.
func TestInstallationID(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "primer.db")
	s, err := Open(ctx, Config{SQLitePath: path})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := s.InstallationID(ctx)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || !strings.HasPrefix(id, "pri-") {
			t.Fatalf("ids = %v, want one pri- id", ids)
		}
	}
	s.Close()
	s, err = Open(ctx, Config{SQLitePath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if id, err := s.InstallationID(ctx); err != nil || id != ids[0] {
		t.Fatalf("after re-open: %q, %v; want %q", id, err, ids[0])
	}
}
