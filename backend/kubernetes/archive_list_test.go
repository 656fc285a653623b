package kubernetes

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
)

// ListSnapshots lists the store's archives, complete and partial, by
// snapshot id, and nothing else of the directory; DeleteSnapshot of what
// it lists removes every file of that snapshot. No cluster is needed: the
// store is a directory of the platform.
func TestListSnapshotArchives(t *testing.T) {
	dir := t.TempDir()
	b := &Backend{opts: Options{SnapshotDir: dir}, logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	if got, err := (&Backend{opts: Options{SnapshotDir: filepath.Join(dir, "none")}}).ListSnapshots(ctx); err != nil || len(got) != 0 {
		t.Fatalf("list a store never made = %v, %v; want nothing", got, err)
	}
	old := time.Now().Add(-time.Hour)
	files := map[string]time.Time{
		"snap-aa.tar":              old,
		".snap-aa.tar.partial-123": time.Now(), // a retry under way
		".snap-bb.tar.partial-9":   old,        // a capture cut off
		"snap-cc.tar":              old,
		"notes.txt":                old,
		"snap-dd.tar.bak":          old,
		"ws-1a2b.tar":              old,
		"snap-UPPER.tar":           old,
		".snap-ee.tar":             old,
		"snap-ff.tar.partial-1":    old,
	}
	for name, at := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("tar"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "snap-dir.tar"), 0o700); err != nil {
		t.Fatal(err)
	}

	listed, err := b.ListSnapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	by := map[string]backend.ListedSnapshot{}
	for _, l := range listed {
		ids = append(ids, l.Ref.SnapshotID)
		by[l.Ref.SnapshotID] = l
	}
	if want := []string{"snap-aa", "snap-bb", "snap-cc"}; !slices.Equal(ids, want) {
		t.Fatalf("listed %v, want %v", ids, want)
	}
	if aa := by["snap-aa"]; len(aa.Objects) != 2 || time.Since(aa.Modified) > time.Minute {
		t.Errorf("snap-aa = %+v, want both its files and the partial's recent time", aa)
	}
	if cc := by["snap-cc"]; cc.Modified.Sub(old).Abs() > time.Second {
		t.Errorf("snap-cc modified %s, want %s", cc.Modified, old)
	}

	for _, id := range []string{"snap-aa", "snap-bb"} {
		if err := b.DeleteSnapshot(ctx, by[id].Ref); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	want := []string{".snap-ee.tar", "notes.txt", "snap-UPPER.tar", "snap-cc.tar", "snap-dd.tar.bak", "snap-dir.tar", "snap-ff.tar.partial-1", "ws-1a2b.tar"}
	if !slices.Equal(names, want) {
		t.Fatalf("left in the store %v, want %v", names, want)
	}
}
