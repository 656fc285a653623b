package starter

import (
	"context"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// ForkSpec is what a fork of a workspace is made from: the parent, the
// implicit snapshot's mode and the children's count, labels and ttl.
type ForkSpec struct {
	Parent *wire.Workspace
	Count  int
	Mode   string
	Labels map[string]string
	TTL    time.Duration
	// ByAdmin says the fork is an admin's request (Workspace.ByAdmin).
	ByAdmin bool
}

// Fork makes req.Count workspaces from one implicit snapshot of the
// parent: the snapshot row and every child's row are stored together
// under the tenant's quota (all or nothing), the parent is asked to take
// the snapshot, then the children's workflows start (each provisions once
// the snapshot is ready). The signal goes first so that a platform killed
// in between leaves children the reconciler adopts (pending rows without
// a workflow get one) waiting for a capture that is being taken, never
// children waiting for a capture nobody was asked for. If the parent
// cannot be signalled, the snapshot fails and the children's rows are
// removed: nothing is left. A child whose workflow cannot be started is
// removed, as CreateWorkspace removes one.
func (s *Starter) Fork(ctx context.Context, req ForkSpec) (*wire.Forked, error) {
	parent := req.Parent
	t, err := s.Store.GetTemplate(ctx, parent.TemplateID)
	if err != nil {
		return nil, errs.E(errs.KindOf(err), "workspace %s: template %s: %w", parent.ID, parent.TemplateID, err)
	}
	snap := &wire.Snapshot{
		ID:          models.NewID("snap"),
		TenantID:    parent.TenantID,
		WorkspaceID: parent.ID,
		TemplateID:  parent.TemplateID,
		ProviderID:  parent.ProviderID,
		Backend:     parent.Backend,
		Mode:        req.Mode,
		Labels:      req.Labels,
		Implicit:    true,
	}
	cpu, mem := templateLimits(t.Backend)
	now := time.Now()
	children := make([]*wire.Workspace, 0, req.Count)
	for range req.Count {
		id := models.NewID("ws")
		w := &wire.Workspace{
			ID:          id,
			TenantID:    parent.TenantID,
			CPUCores:    cpu,
			MemoryBytes: mem,
			TemplateID:  parent.TemplateID,
			ProviderID:  parent.ProviderID,
			Backend:     parent.Backend,
			Phase:       wire.PhasePending,
			Labels:      req.Labels,
			Env:         parent.Env,
			Egress:      parent.Egress,
			WorkflowID:  workflows.WorkflowID(id),
			ByAdmin:     req.ByAdmin,
			SnapshotID:  snap.ID,
		}
		if err := startLifetime(w, t, CreateWorkspaceRequest{TTL: req.TTL}, now); err != nil {
			return nil, err
		}
		children = append(children, w)
	}
	if err := s.Store.CreateFork(ctx, snap, children); err != nil {
		return nil, err
	}
	if err := s.SignalSnapshot(ctx, parent, snap); err != nil {
		// Nothing will take the capture: fail it and remove the children,
		// none of which has a workflow yet.
		s.failSnapshot(ctx, snap.ID, "the workspace's workflow could not be signalled")
		for _, w := range children {
			s.removeRow(ctx, w.ID)
		}
		return nil, err
	}
	started := make([]*wire.Workspace, 0, len(children))
	for _, w := range children {
		in := s.WorkspaceInput(w, t)
		if _, err := s.Temporal.ExecuteWorkflow(ctx, workflows.StartOptions(in), workflows.WorkspaceWorkflowName, in); err != nil {
			s.logger().Error("fork: start child workflow", "workspace_id", w.ID, "snapshot_id", snap.ID, "error", err.Error())
			s.removeRow(ctx, w.ID)
			continue
		}
		started = append(started, w)
	}
	if len(started) == 0 {
		// The capture is taken anyway; it stays listed (implicit) and is
		// deleted like any snapshot.
		return nil, errs.E(errs.Unavailable, "fork of workspace %s: no child workflow could be started; snapshot %s is kept", parent.ID, snap.ID)
	}
	s.logger().Info("workspace forked", "workspace_id", parent.ID, "snapshot_id", snap.ID, "children", len(started))
	return &wire.Forked{Snapshot: snap, Workspaces: started}, nil
}

// removeRow deletes the row of a workspace whose workflow did not start.
func (s *Starter) removeRow(ctx context.Context, id string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := s.Store.DeleteWorkspace(cctx, id); err != nil && !errs.Is(err, errs.NotFound) {
		s.logger().Error("workspace: remove row after failed start", "workspace_id", id, "error", err.Error())
	}
}

// failSnapshot records that snapshot id will not be taken.
func (s *Starter) failSnapshot(ctx context.Context, id, reason string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := s.Store.SetSnapshotFailed(cctx, id, reason); err != nil && !errs.Is(err, errs.NotFound) {
		s.logger().Error("snapshot: record failure", "snapshot_id", id, "error", err.Error())
	}
}

// Snapshot stores snap (phase creating) and asks workspace w's workflow to
// take it. If the workflow cannot be signalled the snapshot is failed, so
// nothing is left half made.
func (s *Starter) Snapshot(ctx context.Context, w *wire.Workspace, snap *wire.Snapshot) error {
	if err := s.Store.CreateSnapshot(ctx, snap); err != nil {
		return err
	}
	if err := s.SignalSnapshot(ctx, w, snap); err != nil {
		s.failSnapshot(ctx, snap.ID, "the workspace's workflow could not be signalled")
		return err
	}
	return nil
}

// SignalSnapshot asks workspace w's workflow to take snapshot snap (stored
// creating) and records on the row that it was asked: a process killed
// between storing the row and asking leaves it unsignalled, and the
// reconciler asks again (activities.Lifecycle). The workflow takes a
// snapshot asked for twice once: the second capture finds it ready.
func (s *Starter) SignalSnapshot(ctx context.Context, w *wire.Workspace, snap *wire.Snapshot) error {
	if err := s.SignalWorkspace(ctx, w, workflows.SignalSnapshot, workflows.SnapshotSignal{SnapshotID: snap.ID, Mode: snap.Mode}); err != nil {
		return err
	}
	if err := s.Store.SetSnapshotSignalled(ctx, snap.ID); err != nil {
		// Asked again by the reconciler: harmless.
		s.logger().Warn("snapshot: record signalled", "snapshot_id", snap.ID, "error", err.Error())
	}
	return nil
}
