package activities

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// A snapshot stored creating by a process killed before it asked the
// workspace's workflow to take it (a fork's children wait for it) is
// asked for by the reconciler once it is older than the grace, and only
// once; one that was asked for, or is younger, is left alone.
func TestReconcileSignalsUnaskedSnapshots(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	lc := &fakeLifecycle{store: r.store}
	r.a.Lifecycle = lc
	ws := r.workspace(t, "ws-src", `{"kind":"memory"}`)
	old := time.Now().Add(-time.Hour)
	for _, s := range []struct {
		id       string
		at       time.Time
		implicit bool
	}{{"snap-unasked", old, true}, {"snap-asked", old, false}, {"snap-young", time.Now(), false}} {
		if err := r.store.CreateSnapshot(ctx, &wire.Snapshot{ID: s.id, WorkspaceID: ws.ID, TemplateID: ws.TemplateID,
			ProviderID: ws.ProviderID, Backend: ws.Backend, Mode: wire.SnapshotModeFilesystem, Implicit: s.implicit, CreatedAt: s.at}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.store.SetSnapshotSignalled(ctx, "snap-asked"); err != nil {
		t.Fatal(err)
	}

	out, err := r.a.Reconcile(ctx, ReconcileInput{Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.SnapshotsSignalled, []string{"snap-unasked"}) || !slices.Equal(lc.signalled, []string{"snap-unasked@ws-src"}) {
		t.Fatalf("signalled %v (asked %v), want snap-unasked of ws-src only", out.SnapshotsSignalled, lc.signalled)
	}
	for _, id := range []string{"snap-unasked", "snap-asked", "snap-young"} {
		if s, err := r.store.GetSnapshot(ctx, id); err != nil || s.Phase != wire.SnapshotCreating {
			t.Errorf("snapshot %s = %+v, %v; want still creating", id, s, err)
		}
	}
	if out, err = r.a.Reconcile(ctx, ReconcileInput{Grace: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if len(out.SnapshotsSignalled) != 0 || len(lc.signalled) != 1 {
		t.Fatalf("a second pass asked for %v (all asks %v), want nothing more", out.SnapshotsSignalled, lc.signalled)
	}
}
