package activities

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/wire"
)

// archiving keeps its captures as files of a directory, as Kubernetes
// keeps its archives: it lists them (backend.SnapshotLister) and deletes
// them by id.
type archiving struct {
	backend.Backend
	dir string
}

func (b *archiving) Snapshot(context.Context, backend.Handle, backend.SnapshotRequest) (backend.SnapshotRef, error) {
	return backend.SnapshotRef{}, nil
}

func (b *archiving) DeleteSnapshot(_ context.Context, ref backend.SnapshotRef) error {
	err := os.Remove(filepath.Join(b.dir, ref.SnapshotID+".tar"))
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

func (b *archiving) ListSnapshots(context.Context) ([]backend.ListedSnapshot, error) {
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return nil, err
	}
	var out []backend.ListedSnapshot
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		id := strings.TrimSuffix(e.Name(), ".tar")
		out = append(out, backend.ListedSnapshot{Ref: backend.SnapshotRef{Backend: memory.Type, SnapshotID: id}, Modified: info.ModTime()})
	}
	return out, nil
}

// The reconciler removes a capture whose snapshot has no row once it is
// older than the grace; a capture with a row (whatever its phase), or a
// young one, stays.
func TestReconcileRemovesOrphanedSnapshots(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ab := &archiving{Backend: r.mem, dir: t.TempDir()}
	r.a.Backends = backend.NewRegistry(map[string]backend.Factory{memory.Type: func(json.RawMessage) (backend.Backend, error) { return ab, nil }})
	ws := r.workspace(t, "ws-arch", `{"kind":"memory"}`)
	r.newSnapshotRow(t, "snap-kept", ws)
	old := time.Now().Add(-time.Hour)
	for name, at := range map[string]time.Time{"snap-orphan": old, "snap-young": time.Now(), "snap-kept": old} {
		p := filepath.Join(ab.dir, name+".tar")
		if err := os.WriteFile(p, []byte("tar"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}

	out, err := r.a.Reconcile(ctx, ReconcileInput{Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.SnapshotsOrphaned, []string{"snap-orphan"}) || len(out.Errors) != 0 {
		t.Fatalf("orphaned %v, errors %v; want snap-orphan removed", out.SnapshotsOrphaned, out.Errors)
	}
	entries, err := os.ReadDir(ab.dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"snap-kept.tar", "snap-young.tar"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	if s, err := r.store.GetSnapshot(ctx, "snap-kept"); err != nil || s.Phase != wire.SnapshotCreating {
		t.Errorf("snapshot with its capture = %+v, %v; want untouched", s, err)
	}
}
