package vm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/vm/vmtest"
	"github.com/primerhq/primer/errs"
)

// TestSnapshotPartialNotTaken: an archive a crash cut off (left under its
// temporary name) is never taken for the snapshot: a provision from it
// fails with NotFound and leaves nothing on the host, and the next
// Snapshot with that id removes it and archives the whole directory. The
// snapshots directory is not listed as a workspace.
func TestSnapshotPartialNotTaken(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	b := newBackend(t, providerConfig(t, host.Connection(t), host), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	tmpl := `{"kind":"vm","root":"` + testRoot + `","user":"primer-ws"}`
	token := backendtest.NewToken(t)
	h := provision(t, b, tmpl, token, nil)
	host.Exec(t, "printf complete > "+testRoot+"/"+h.WorkspaceID+"/f")

	snapID := backendtest.NewSnapshotID(t)
	// What a crash mid-archive leaves.
	host.Exec(t, "mkdir -p /var/lib/primer/snapshots && printf half > /var/lib/primer/snapshots/."+snapID+".tar.partial-123")
	ref := backend.SnapshotRef{Backend: "vm", SnapshotID: snapID, Mode: backend.SnapshotFilesystem, Attrs: map[string]string{"host": h.Attrs["host"]}}
	child := backendtest.NewID(t)
	if ch, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: child, Template: []byte(tmpl), Token: token, Snapshot: &ref}); err == nil {
		_ = b.Destroy(context.Background(), ch)
		t.Fatal("provision from a partial archive succeeded")
	} else if errs.KindOf(err) != errs.NotFound {
		t.Errorf("provision from a partial archive: %v, want NotFound", err)
	}
	if !gone(t, host, child) {
		t.Error("a failed provision from a partial archive left something on the host")
	}

	got, err := b.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: snapID, Mode: backend.SnapshotFilesystem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.DeleteSnapshot(context.Background(), got) })
	if out := host.Exec(t, "ls -a /var/lib/primer/snapshots"); strings.Contains(out, ".partial-") {
		t.Errorf("a partial archive is left after a complete snapshot:\n%s", out)
	}
	if out := host.Exec(t, "tar -xOf /var/lib/primer/snapshots/"+snapID+".tar ./f"); out != "complete" {
		t.Errorf("archive holds f = %q, want %q", out, "complete")
	}
	listed, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].WorkspaceID != h.WorkspaceID {
		t.Errorf("List = %+v, want only workspace %s", listed, h.WorkspaceID)
	}
}
