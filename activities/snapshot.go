package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// SnapshotInput asks for one capture of a workspace's sandbox into the
// snapshot row the API made (phase creating).
type SnapshotInput struct {
	WorkspaceID string
	SnapshotID  string
	// Mode is wire.SnapshotModeFilesystem (empty means it) or
	// wire.SnapshotModeFull.
	Mode string
	// Handle is the handle the workflow holds; used when the row has none.
	Handle *backend.Handle `json:",omitempty"`
}

// SnapshotOutput is the size of the capture taken.
type SnapshotOutput struct {
	Bytes int64
	// Discarded is set when the snapshot row left phase creating while the
	// capture was taken (deleted meanwhile): the capture was removed again.
	Discarded bool `json:",omitempty"`
}

// FailSnapshotInput records why a capture could not be taken.
type FailSnapshotInput struct {
	WorkspaceID string
	SnapshotID  string
	Reason      string
}

// FailSnapshotOutput is empty; it exists so fields can be added.
type FailSnapshotOutput struct{}

// Snapshot captures a workspace's sandbox (workflow SignalSnapshot): it
// asks the backend's Snapshotter for the capture, stores its reference and
// size on the snapshot row (creating -> ready) and records
// workspace.snapshot_taken. A backend without a Snapshotter, or without the
// mode, fails it for good (Invalid), as does a snapshot row no longer
// creating. When the row left creating while the capture was taken (a
// delete), the capture is removed again and the output says so. The
// workflow records a failure with FailSnapshot.
//
// A delete of the workspace interrupts it as it interrupts a provisioning.
// Backends are idempotent on the snapshot id, so a retry after a crash
// finds or replaces the capture the first try made.
func (a *Activities) Snapshot(ctx context.Context, in SnapshotInput) (SnapshotOutput, error) {
	defer KeepAliveInterruptible(ctx)()
	out, err := a.snapshot(ctx, in)
	if err != nil {
		return SnapshotOutput{}, interrupted(ctx, Classify(err))
	}
	return out, nil
}

func (a *Activities) snapshot(ctx context.Context, in SnapshotInput) (SnapshotOutput, error) {
	what := "workspace " + in.WorkspaceID + ": snapshot " + in.SnapshotID
	snap, err := a.Store.GetSnapshot(ctx, in.SnapshotID)
	if err != nil {
		return SnapshotOutput{}, errs.Within(what, err)
	}
	if snap.WorkspaceID != in.WorkspaceID {
		return SnapshotOutput{}, errs.E(errs.Invalid, "%s: it is of workspace %s", what, snap.WorkspaceID)
	}
	switch snap.Phase {
	case wire.SnapshotCreating:
	case wire.SnapshotReady:
		// An earlier attempt stored it and its worker died before it
		// answered (kill -9 of primer serve): it is done.
		return SnapshotOutput{Bytes: snap.Bytes}, nil
	default:
		return SnapshotOutput{}, errs.E(errs.Invalid, "%s: it is %s, not creating", what, snap.Phase)
	}
	ws, err := a.Store.GetWorkspace(ctx, in.WorkspaceID)
	if err != nil {
		return SnapshotOutput{}, errs.Within(what, err)
	}
	h, found, err := backend.DecodeHandle(ws.ID, ws.Handle)
	if err != nil {
		return SnapshotOutput{}, errs.Within(what, err)
	}
	if !found && in.Handle != nil {
		h, found = *in.Handle, true
	}
	if !found {
		return SnapshotOutput{}, errs.E(errs.Invalid, "%s: the workspace has no sandbox", what)
	}
	b, err := BackendFor(ctx, a.Store, a.Backends, ws)
	if err != nil {
		return SnapshotOutput{}, errs.Within(what, err)
	}
	mode := in.Mode
	if mode == "" {
		mode = wire.SnapshotModeFilesystem
	}
	sn, err := snapshotterOf(b, ws.Backend, mode)
	if err != nil {
		return SnapshotOutput{}, errs.Within(what, err)
	}
	ref, err := sn.Snapshot(ctx, h, backend.SnapshotRequest{SnapshotID: in.SnapshotID, TenantID: ws.TenantID, Mode: mode})
	if err != nil {
		return SnapshotOutput{}, RedactErr(errs.Within(what, err), ws.RuntimeToken)
	}
	raw, err := json.Marshal(ref)
	if err != nil {
		return SnapshotOutput{}, fmt.Errorf("%s: encode ref: %w", what, err)
	}
	err = a.Store.SetSnapshotReady(ctx, in.SnapshotID, raw, ref.Bytes)
	if errs.Is(err, errs.Conflict) || errs.Is(err, errs.NotFound) {
		// Deleted (or failed by the reconciler) while the capture was
		// taken: nobody will ever use it, so it goes now.
		if derr := sn.DeleteSnapshot(ctx, ref); derr != nil {
			return SnapshotOutput{}, errs.Within(what+": remove the capture of a snapshot deleted meanwhile", derr)
		}
		a.logger().Info("snapshot discarded: deleted while it was taken", "workspace_id", in.WorkspaceID, "snapshot_id", in.SnapshotID)
		return SnapshotOutput{Discarded: true}, nil
	}
	if err != nil {
		return SnapshotOutput{}, errs.Within(what, err)
	}
	if _, err := a.recordEvent(ctx, in.WorkspaceID, wire.EventSnapshotTaken, map[string]any{
		"snapshot_id": in.SnapshotID, "mode": mode, "bytes": ref.Bytes,
	}); err != nil {
		// The snapshot is ready; a retry would find it ready and fail.
		a.logger().Warn("record snapshot taken", "workspace_id", in.WorkspaceID, "snapshot_id", in.SnapshotID, "error", err)
	}
	a.logger().Info("snapshot taken", "workspace_id", in.WorkspaceID, "snapshot_id", in.SnapshotID, "mode", mode, "bytes", ref.Bytes)
	return SnapshotOutput{Bytes: ref.Bytes}, nil
}

// snapshotterOf returns b as a Snapshotter that takes mode, or an Invalid
// error saying why not.
func snapshotterOf(b backend.Backend, typ, mode string) (backend.Snapshotter, error) {
	sn, ok := b.(backend.Snapshotter)
	if !ok {
		return nil, errs.E(errs.Invalid, "the %s backend cannot take snapshots", typ)
	}
	caps := b.Capabilities()
	for _, m := range caps.Snapshots {
		if m == mode {
			return sn, nil
		}
	}
	msg := fmt.Sprintf("the %s backend cannot take %s snapshots", typ, mode)
	if caps.SnapshotsNote != "" {
		msg += ": " + caps.SnapshotsNote
	}
	return nil, errs.E(errs.Invalid, "%s", msg)
}

// FailSnapshot records a capture that could not be taken: the snapshot
// row moves from creating to failed with the reason, and
// workspace.snapshot_failed is recorded. A row no longer creating (deleted
// meanwhile, or failed by an earlier try) keeps its phase and no event is
// recorded. It runs as a local activity.
func (a *Activities) FailSnapshot(ctx context.Context, in FailSnapshotInput) (FailSnapshotOutput, error) {
	err := a.Store.SetSnapshotFailed(ctx, in.SnapshotID, in.Reason)
	if errs.Is(err, errs.Conflict) || errs.Is(err, errs.NotFound) {
		return FailSnapshotOutput{}, nil
	}
	if err != nil {
		return FailSnapshotOutput{}, Classify(errs.Within("workspace "+in.WorkspaceID+": snapshot "+in.SnapshotID+": set failed", err))
	}
	if _, err := a.recordEvent(ctx, in.WorkspaceID, wire.EventSnapshotFailed, map[string]any{
		"snapshot_id": in.SnapshotID, "reason": in.Reason,
	}); err != nil {
		return FailSnapshotOutput{}, Classify(err)
	}
	a.logger().Info("snapshot failed", "workspace_id", in.WorkspaceID, "snapshot_id", in.SnapshotID, "reason", in.Reason)
	return FailSnapshotOutput{}, nil
}

// snapshotPoll is how often a provisioning from a snapshot still being
// taken reads its row again: a fork's children all wait so for its
// capture, and half a poll on average is added to each one's start (at
// 500 ms, a quarter of a second of a fork that is otherwise a few
// seconds). Each read is a lookup by key: a fork of 8 reads 80 times a
// second, one of the most children (wire.MaxForkCount) 1,000, for the
// capture's few seconds.
const snapshotPoll = 100 * time.Millisecond

// readySnapshot waits until the snapshot ws is made from is ready and
// returns its backend reference. A snapshot still creating is waited for
// (a fork's children are created before their snapshot is taken) until
// ctx ends, then the error is Unavailable, so the provisioning is retried
// within its start timeout; one failed, deleting or gone fails the
// provisioning for good, naming the snapshot and why.
func (a *Activities) readySnapshot(ctx context.Context, ws *wire.Workspace) (*backend.SnapshotRef, error) {
	what := fmt.Sprintf("workspace %s: provision: snapshot %s", ws.ID, ws.SnapshotID)
	for {
		snap, err := a.Store.GetSnapshot(ctx, ws.SnapshotID)
		if errs.Is(err, errs.NotFound) {
			return nil, errs.E(errs.Invalid, "%s: it no longer exists", what)
		}
		if err != nil {
			return nil, errs.Within(what, err)
		}
		switch snap.Phase {
		case wire.SnapshotReady:
			if snap.Backend != ws.Backend {
				return nil, errs.E(errs.Invalid, "%s: it was taken on the %s backend, the workspace is on %s", what, snap.Backend, ws.Backend)
			}
			var ref backend.SnapshotRef
			if err := json.Unmarshal(snap.Ref, &ref); err != nil {
				return nil, errs.E(errs.Invalid, "%s: ref: %w", what, err)
			}
			return &ref, nil
		case wire.SnapshotCreating:
			select {
			case <-ctx.Done():
				return nil, errs.E(errs.Unavailable, "%s: still being taken", what)
			case <-time.After(snapshotPoll):
			}
		default:
			msg := fmt.Sprintf("%s: it is %s", what, snap.Phase)
			if snap.Reason != "" {
				msg += ": " + snap.Reason
			}
			return nil, errs.E(errs.Invalid, "%s", msg)
		}
	}
}
