package activities

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// snapMem is the memory backend with snapshots and pause
// (memory.Snapshotting), with a hook inside Snapshot and a record of the
// captures deleted.
type snapMem struct {
	memory.Snapshotting
	dir string // where captures live

	mu sync.Mutex
	// onSnapshot, when set, runs inside Snapshot after the capture.
	onSnapshot func()
	deleted    []string // DeleteSnapshot's refs
}

func (b *snapMem) Snapshot(ctx context.Context, h backend.Handle, req backend.SnapshotRequest) (backend.SnapshotRef, error) {
	ref, err := b.Snapshotting.Snapshot(ctx, h, req)
	b.mu.Lock()
	hook := b.onSnapshot
	b.mu.Unlock()
	if hook != nil && err == nil {
		hook()
	}
	return ref, err
}

func (b *snapMem) DeleteSnapshot(ctx context.Context, ref backend.SnapshotRef) error {
	b.mu.Lock()
	b.deleted = append(b.deleted, ref.Ref)
	b.mu.Unlock()
	return b.Snapshotting.DeleteSnapshot(ctx, ref)
}

// snapRig is a rig whose memory backend takes snapshots and pauses.
func snapRig(t *testing.T) (*rig, *snapMem) {
	t.Helper()
	r := newRig(t)
	sm := &snapMem{Snapshotting: r.mem.WithSnapshots(), dir: filepath.Join(r.mem.Root(), ".snapshots")}
	reg := backend.NewRegistry(map[string]backend.Factory{memory.Type: func(json.RawMessage) (backend.Backend, error) { return sm, nil }})
	r.a.Backends, r.a.Connector.Backends = reg, reg
	return r, sm
}

// newSnapshotRow makes a snapshot row of workspace ws, creating.
func (r *rig) newSnapshotRow(t *testing.T, id string, ws *wire.Workspace) {
	t.Helper()
	if err := r.store.CreateSnapshot(context.Background(), &wire.Snapshot{
		ID: id, WorkspaceID: ws.ID, TemplateID: ws.TemplateID, ProviderID: ws.ProviderID,
		Backend: ws.Backend, Mode: wire.SnapshotModeFilesystem,
	}); err != nil {
		t.Fatal(err)
	}
}

// workspaceFrom creates a template with tmplDoc and a pending workspace
// from it made from snapshot snapID.
func (r *rig) workspaceFrom(t *testing.T, id, tmplDoc, snapID string) {
	t.Helper()
	ctx := context.Background()
	tmplID := "tmpl-" + id
	if err := r.store.CreateTemplate(ctx, &wire.Template{ID: tmplID, ProviderID: "mem", Backend: json.RawMessage(tmplDoc)}); err != nil {
		t.Fatal(err)
	}
	ws := &wire.Workspace{ID: id, TemplateID: tmplID, ProviderID: "mem", Backend: memory.Type, Phase: wire.PhasePending, SnapshotID: snapID}
	if err := r.store.CreateWorkspace(ctx, ws); err != nil {
		t.Fatal(err)
	}
}

// hasEvent returns the data of workspace id's first event of type typ,
// nil when it has none.
func (r *rig) hasEvent(t *testing.T, id, typ string) map[string]any {
	t.Helper()
	for _, e := range r.events(t, id) {
		if e.Type == typ {
			return eventData(t, e)
		}
	}
	return nil
}

// A snapshot, then a workspace made from it: it has the captured files,
// and the template's files and init are not applied again.
func TestSnapshotAndProvisionFromIt(t *testing.T) {
	r, sm := snapRig(t)
	ctx := context.Background()
	src := r.workspace(t, "ws-src", fullTemplate)
	out, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-src"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out.Handle.Path, "work.txt"), []byte("made by the agent"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.newSnapshotRow(t, "snap-a", src)
	got, err := r.a.Snapshot(ctx, SnapshotInput{WorkspaceID: "ws-src", SnapshotID: "snap-a"})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := r.store.GetSnapshot(ctx, "snap-a")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Phase != wire.SnapshotReady || snap.Bytes <= 0 || snap.Bytes != got.Bytes {
		t.Errorf("snapshot = %+v, output %+v; want ready with its size", snap, got)
	}
	var ref backend.SnapshotRef
	if err := json.Unmarshal(snap.Ref, &ref); err != nil || ref.SnapshotID != "snap-a" || ref.Mode != wire.SnapshotModeFilesystem {
		t.Errorf("stored ref = %s (%v)", snap.Ref, err)
	}
	if d := r.hasEvent(t, "ws-src", wire.EventSnapshotTaken); d == nil || d["snapshot_id"] != "snap-a" {
		t.Errorf("snapshot_taken event data = %v", d)
	}
	// A retry after a worker died between storing it and answering finds
	// it done, and a FailSnapshot then (the workflow's, after a cut-off
	// answer) changes nothing.
	again, err := r.a.Snapshot(ctx, SnapshotInput{WorkspaceID: "ws-src", SnapshotID: "snap-a"})
	if err != nil || again.Bytes != got.Bytes {
		t.Errorf("retried snapshot = %+v, %v; want the first's size", again, err)
	}
	if _, err := r.a.FailSnapshot(ctx, FailSnapshotInput{WorkspaceID: "ws-src", SnapshotID: "snap-a", Reason: "late"}); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.store.GetSnapshot(ctx, "snap-a"); s == nil || s.Phase != wire.SnapshotReady {
		t.Errorf("snapshot after a late FailSnapshot = %+v, want ready", s)
	}
	if d := r.hasEvent(t, "ws-src", wire.EventSnapshotFailed); d != nil {
		t.Errorf("snapshot_failed recorded for a ready snapshot: %v", d)
	}

	// A workspace from it, on a template whose files and init would leave
	// marks: none is there, the captured files are.
	r.workspaceFrom(t, "ws-child", `{"kind":"memory","files":{"fresh.txt":"x"},"init":["touch init-ran"]}`, "snap-a")
	cout, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-child"})
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"work.txt": "made by the agent", "hello.txt": "hi\n", "init.out": "hello from env\n"} {
		if b, err := os.ReadFile(filepath.Join(cout.Handle.Path, rel)); err != nil || string(b) != want {
			t.Errorf("child %s = %q (%v), want %q", rel, b, err, want)
		}
	}
	for _, rel := range []string{"fresh.txt", "init-ran"} {
		if _, err := os.Stat(filepath.Join(cout.Handle.Path, rel)); !os.IsNotExist(err) {
			t.Errorf("child has %s (%v): the template was applied again", rel, err)
		}
	}
	if len(sm.deleted) != 0 {
		t.Errorf("captures deleted: %v", sm.deleted)
	}
}

// A snapshot row deleted while the capture is taken: the capture is
// removed again and the row keeps its phase.
func TestSnapshotDeletedMeanwhile(t *testing.T) {
	r, sm := snapRig(t)
	ctx := context.Background()
	ws := r.workspace(t, "ws-del", `{"kind":"memory"}`)
	if _, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-del"}); err != nil {
		t.Fatal(err)
	}
	r.newSnapshotRow(t, "snap-del", ws)
	sm.onSnapshot = func() {
		if _, err := r.store.MarkSnapshotDeleting(ctx, "snap-del", "deleted by test"); err != nil {
			t.Error(err)
		}
	}
	out, err := r.a.Snapshot(ctx, SnapshotInput{WorkspaceID: "ws-del", SnapshotID: "snap-del"})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Discarded {
		t.Errorf("output = %+v, want discarded", out)
	}
	if _, err := os.Stat(filepath.Join(sm.dir, "snap-del")); !os.IsNotExist(err) {
		t.Errorf("capture still there (%v)", err)
	}
	if snap, _ := r.store.GetSnapshot(ctx, "snap-del"); snap == nil || snap.Phase != wire.SnapshotDeleting {
		t.Errorf("snapshot = %+v, want still deleting", snap)
	}
}

// A backend without a Snapshotter fails the snapshot for good with a clear
// reason; FailSnapshot records it.
func TestSnapshotRefused(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ws := r.workspace(t, "ws-nosnap", `{"kind":"memory"}`)
	if _, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-nosnap"}); err != nil {
		t.Fatal(err)
	}
	r.newSnapshotRow(t, "snap-no", ws)
	_, err := r.a.Snapshot(ctx, SnapshotInput{WorkspaceID: "ws-nosnap", SnapshotID: "snap-no"})
	ae := appError(t, err, errs.Invalid.String(), false)
	if !strings.Contains(ae.Message(), "memory backend cannot take snapshots") {
		t.Errorf("error = %q", ae.Message())
	}
	if _, err := r.a.FailSnapshot(ctx, FailSnapshotInput{WorkspaceID: "ws-nosnap", SnapshotID: "snap-no", Reason: ae.Message()}); err != nil {
		t.Fatal(err)
	}
	snap, err := r.store.GetSnapshot(ctx, "snap-no")
	if err != nil || snap.Phase != wire.SnapshotFailed || snap.Reason != ae.Message() {
		t.Errorf("snapshot = %+v (%v), want failed with the reason", snap, err)
	}
	if d := r.hasEvent(t, "ws-nosnap", wire.EventSnapshotFailed); d == nil || d["reason"] != ae.Message() {
		t.Errorf("snapshot_failed event data = %v", d)
	}
	// Pause is refused the same way.
	_, err = r.a.Pause(ctx, PauseInput{WorkspaceID: "ws-nosnap"})
	if ae := appError(t, err, errs.Invalid.String(), false); !strings.Contains(ae.Message(), "memory backend cannot pause") {
		t.Errorf("pause error = %q", ae.Message())
	}
}

// Provisioning from a snapshot waits for one being taken (retryable), and
// fails for good from one failed or gone, naming it.
func TestProvisionFromUnreadySnapshot(t *testing.T) {
	r, _ := snapRig(t)
	ctx := context.Background()
	src := r.workspace(t, "ws-src", `{"kind":"memory"}`)
	r.newSnapshotRow(t, "snap-creating", src)
	r.newSnapshotRow(t, "snap-failed", src)
	if err := r.store.SetSnapshotFailed(ctx, "snap-failed", "engine said no"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		snap      string
		retryable bool
		want      string
	}{
		{"snap-creating", true, "snapshot snap-creating: still being taken"},
		{"snap-failed", false, "snapshot snap-failed: it is failed: engine said no"},
		{"snap-gone", false, "snapshot snap-gone: it no longer exists"},
	}
	for _, tt := range tests {
		t.Run(tt.snap, func(t *testing.T) {
			id := "ws-" + tt.snap
			r.workspaceFrom(t, id, `{"kind":"memory"}`, tt.snap)
			// The creating one is read a few times before the deadline;
			// the others fail at the first read, however slow.
			cctx, cancel := context.WithTimeout(ctx, 5*snapshotPoll)
			defer cancel()
			_, err := r.a.provision(cctx, id, false, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
			if got := retryable(errs.KindOf(err)); got != tt.retryable {
				t.Errorf("retryable = %v, want %v (%v)", got, tt.retryable, err)
			}
			if r.mem.Provisioned(id) {
				t.Errorf("a sandbox was made")
			}
		})
	}
}

// Pause stops the runtime (probes miss), keeps the files and records the
// mode; Resume brings it back (probes hit) and clears it.
func TestPauseResume(t *testing.T) {
	r, _ := snapRig(t)
	ctx := context.Background()
	r.workspace(t, "ws-pause", `{"kind":"memory"}`)
	out, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-pause"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out.Handle.Path, "kept.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := func() ProbeOutput {
		t.Helper()
		res, err := r.a.Probe(ctx, ProbeInput{WorkspaceID: "ws-pause", Handle: out.Handle})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if !probe().Hit {
		t.Fatal("probe before the pause missed")
	}
	if _, err := r.a.Pause(ctx, PauseInput{WorkspaceID: "ws-pause", Reason: "by test"}); err != nil {
		t.Fatal(err)
	}
	ws, _ := r.store.GetWorkspace(ctx, "ws-pause")
	if ws.PausedMode != wire.SnapshotModeFilesystem {
		t.Errorf("paused mode = %q", ws.PausedMode)
	}
	if d := r.hasEvent(t, "ws-pause", wire.EventPaused); d == nil || d["reason"] != "by test" || d["mode"] != wire.SnapshotModeFilesystem {
		t.Errorf("paused event data = %v", d)
	}
	if res := probe(); res.Hit {
		t.Errorf("probe of a paused workspace hit")
	}
	if _, err := r.a.Resume(ctx, ResumeInput{WorkspaceID: "ws-pause"}); err != nil {
		t.Fatal(err)
	}
	if res := probe(); !res.Hit {
		t.Errorf("probe after the resume missed: %s", res.Reason)
	}
	ws, _ = r.store.GetWorkspace(ctx, "ws-pause")
	if ws.PausedMode != "" {
		t.Errorf("paused mode after resume = %q", ws.PausedMode)
	}
	if b, err := os.ReadFile(filepath.Join(out.Handle.Path, "kept.txt")); err != nil || string(b) != "kept" {
		t.Errorf("kept.txt = %q (%v)", b, err)
	}
	if r.hasEvent(t, "ws-pause", wire.EventResumed) == nil {
		t.Errorf("no resumed event")
	}
}

// The reconciler removes a deleting snapshot's capture and row, and fails
// a creating one whose workspace is gone.
func TestReconcileSnapshots(t *testing.T) {
	r, sm := snapRig(t)
	ctx := context.Background()
	ws := r.workspace(t, "ws-rec", `{"kind":"memory"}`)
	if _, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: "ws-rec"}); err != nil {
		t.Fatal(err)
	}
	r.newSnapshotRow(t, "snap-ready", ws)
	if _, err := r.a.Snapshot(ctx, SnapshotInput{WorkspaceID: "ws-rec", SnapshotID: "snap-ready"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.MarkSnapshotDeleting(ctx, "snap-ready", "deleted by test"); err != nil {
		t.Fatal(err)
	}
	// A capture cut off before its row was ready (the row failed), then
	// deleted: what it left, named after its id, goes too.
	r.newSnapshotRow(t, "snap-cut", ws)
	h, _, _ := backend.DecodeHandle("ws-rec", mustWorkspace(t, r, "ws-rec").Handle)
	if _, err := sm.Snapshotting.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: "snap-cut", Mode: backend.SnapshotFilesystem}); err != nil {
		t.Fatal(err)
	}
	if err := r.store.SetSnapshotFailed(ctx, "snap-cut", "worker died"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.MarkSnapshotDeleting(ctx, "snap-cut", "deleted by test"); err != nil {
		t.Fatal(err)
	}
	r.newSnapshotRow(t, "snap-kept", ws)
	// One its live workspace's workflow never took (it predates
	// snapshots), creating for longer than any snapshot step lasts.
	if err := r.store.CreateSnapshot(ctx, &wire.Snapshot{
		ID: "snap-stuck", WorkspaceID: ws.ID, TemplateID: ws.TemplateID, ProviderID: ws.ProviderID,
		Backend: ws.Backend, Mode: wire.SnapshotModeFilesystem, CreatedAt: time.Now().Add(-SnapshotStuckAfter - time.Minute),
	}); err != nil {
		t.Fatal(err)
	}
	orphan := &wire.Workspace{ID: "ws-gone", TemplateID: ws.TemplateID, ProviderID: "mem", Backend: memory.Type}
	r.newSnapshotRow(t, "snap-orphan", orphan)

	out, err := r.a.Reconcile(ctx, ReconcileInput{Grace: 0})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.SnapshotsRemoved, []string{"snap-cut", "snap-ready"}) && !slices.Equal(out.SnapshotsRemoved, []string{"snap-ready", "snap-cut"}) {
		t.Errorf("removed = %v, want snap-ready and snap-cut", out.SnapshotsRemoved)
	}
	if _, err := os.Stat(filepath.Join(sm.dir, "snap-cut")); !os.IsNotExist(err) {
		t.Errorf("cut-off capture still there (%v)", err)
	}
	slices.Sort(out.SnapshotsFailed)
	if !slices.Equal(out.SnapshotsFailed, []string{"snap-orphan", "snap-stuck"}) {
		t.Errorf("failed = %v, want snap-orphan and snap-stuck", out.SnapshotsFailed)
	}
	if s, _ := r.store.GetSnapshot(ctx, "snap-stuck"); s == nil || s.Phase != wire.SnapshotFailed || !strings.Contains(s.Reason, "not taken within") {
		t.Errorf("stuck snapshot = %+v, want failed saying so", s)
	}
	if _, err := r.store.GetSnapshot(ctx, "snap-ready"); !errs.Is(err, errs.NotFound) {
		t.Errorf("deleted snapshot's row: %v, want gone", err)
	}
	if _, err := os.Stat(filepath.Join(sm.dir, "snap-ready")); !os.IsNotExist(err) {
		t.Errorf("deleted snapshot's capture still there (%v)", err)
	}
	if s, _ := r.store.GetSnapshot(ctx, "snap-kept"); s == nil || s.Phase != wire.SnapshotCreating {
		t.Errorf("snapshot of a live workspace = %+v, want still creating", s)
	}
	if s, _ := r.store.GetSnapshot(ctx, "snap-orphan"); s == nil || s.Phase != wire.SnapshotFailed || !strings.Contains(s.Reason, "ws-gone") {
		t.Errorf("snapshot of a gone workspace = %+v, want failed naming it", s)
	}
}

// CheckLifetime says the template's idle_action once the idle deadline
// has passed.
func TestCheckLifetimeIdleAction(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	for _, tt := range []struct{ doc, want string }{
		{`{"kind":"memory","lifetime":{"idle":"1h","idle_action":"pause"}}`, backend.IdleActionPause},
		{`{"kind":"memory","lifetime":{"idle":"1h"}}`, backend.IdleActionDelete},
	} {
		id := "ws-idle-" + tt.want
		r.workspace(t, id, tt.doc)
		past := time.Now().Add(-time.Minute)
		if err := r.store.SetDeadlines(ctx, id, wire.Deadlines{IdleDeadline: &past}); err != nil {
			t.Fatal(err)
		}
		out, err := r.a.CheckLifetime(ctx, CheckLifetimeInput{WorkspaceID: id})
		if err != nil {
			t.Fatal(err)
		}
		if out.IdleAction != tt.want {
			t.Errorf("%s: idle action = %q, want %q", tt.doc, out.IdleAction, tt.want)
		}
	}
}

// A workspace paused by its workflow on another worker: this worker's
// Prober, whose probes now miss, finds it paused and stops watching it
// without a signal (a paused workspace is not lost).
func TestProberDropsPausedWorkspace(t *testing.T) {
	r, in := provisioned(t, "ws-paused")
	pr := newProbeRecorder(r)
	defer pr.p.Stop()
	ctx := context.Background()
	watch := in
	watch.Watch = &WatchRequest{WorkflowID: "workspace-ws-paused", Interval: 20 * time.Millisecond, Backstop: time.Hour, MissesToFail: 3}
	if out, err := r.a.Probe(ctx, watch); err != nil || !out.Watched {
		t.Fatalf("the workflow's probe = %+v, %v; want watched", out, err)
	}
	r.mem.Kill("ws-paused")
	if err := r.store.SetWorkspacePhase(ctx, "ws-paused", wire.PhasePaused, "paused elsewhere"); err != nil {
		t.Fatal(err)
	}
	outs, _ := pr.waitProbes(t, 1)
	deadline := time.Now().Add(10 * time.Second)
	for pr.p.Watching() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still watching a paused workspace after %d probes", len(outs))
		}
		time.Sleep(20 * time.Millisecond) // polling the Prober's own clock
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if len(pr.signals) != 0 {
		t.Errorf("signals for a paused workspace: %+v", pr.signals)
	}
	if last := pr.outs[len(pr.outs)-1]; !last.Paused {
		t.Errorf("last probe = %+v, want paused", last)
	}
}

// A tenant's max_paused refuses a pause that would pass it, before the
// backend is asked; the paused workspace holds its place until resumed.
func TestPauseMaxPaused(t *testing.T) {
	r, _ := snapRig(t)
	ctx := context.Background()
	if err := r.store.CreateTenant(ctx, &wire.Tenant{ID: wire.DefaultTenantID, Quota: wire.Quota{MaxPaused: 1}}); err != nil {
		t.Fatal(err)
	}
	var err error
	for _, id := range []string{"ws-p1", "ws-p2"} {
		r.workspace(t, id, `{"kind":"memory"}`)
		if _, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.a.Pause(ctx, PauseInput{WorkspaceID: "ws-p1"}); err != nil {
		t.Fatal(err)
	}
	_, err = r.a.Pause(ctx, PauseInput{WorkspaceID: "ws-p2"})
	if ae := appError(t, err, errs.Exhausted.String(), true); !strings.Contains(ae.Message(), "max_paused") {
		t.Errorf("second pause = %q, want max_paused named", ae.Message())
	}
	if r.mem.Paused("ws-p2") {
		t.Error("the refused pause reached the backend")
	}
	if _, err := r.a.Resume(ctx, ResumeInput{WorkspaceID: "ws-p1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.a.Pause(ctx, PauseInput{WorkspaceID: "ws-p2"}); err != nil {
		t.Errorf("pause after the other's resume: %v", err)
	}
}

func mustWorkspace(t *testing.T, r *rig, id string) *wire.Workspace {
	t.Helper()
	ws, err := r.store.GetWorkspace(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}
