package client

import (
	"context"
	"net/http"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// SnapshotListOptions narrows ListSnapshots; empty fields match all.
type SnapshotListOptions struct {
	WorkspaceID string
	Phase       string
}

// CreateSnapshot asks for a capture of workspace id; the snapshot is
// answered in phase creating (WaitSnapshot waits until it is ready).
func (c *Client) CreateSnapshot(ctx context.Context, workspaceID string, req wire.CreateSnapshotRequest) (*wire.Snapshot, error) {
	return doInto[wire.Snapshot](ctx, c, http.MethodPost, "/v1/workspaces/"+seg(workspaceID)+"/snapshots", nil, req)
}

// GetSnapshot returns the snapshot id.
func (c *Client) GetSnapshot(ctx context.Context, id string) (*wire.Snapshot, error) {
	return doInto[wire.Snapshot](ctx, c, http.MethodGet, "/v1/snapshots/"+seg(id), nil, nil)
}

// ListSnapshots returns the caller's tenant's snapshots, newest first.
func (c *Client) ListSnapshots(ctx context.Context, opts SnapshotListOptions) ([]wire.Snapshot, error) {
	return listInto[wire.Snapshot](ctx, c, "/v1/snapshots", query("workspace_id", opts.WorkspaceID, "phase", opts.Phase))
}

// DeleteSnapshot deletes the snapshot id and returns it as it now is
// (phase deleting; the row goes once its capture is removed).
func (c *Client) DeleteSnapshot(ctx context.Context, id string) (*wire.Snapshot, error) {
	return doInto[wire.Snapshot](ctx, c, http.MethodDelete, "/v1/snapshots/"+seg(id), nil, nil)
}

// ForkWorkspace makes req.Count workspaces from one implicit snapshot of
// workspace id, all or nothing against the tenant's quotas.
func (c *Client) ForkWorkspace(ctx context.Context, id string, req wire.ForkRequest) (*wire.Forked, error) {
	return doInto[wire.Forked](ctx, c, http.MethodPost, "/v1/workspaces/"+seg(id)+"/fork", nil, req)
}

// PauseWorkspace stops workspace id's compute, keeping its files; it is
// answered as it is when the pause is asked for (WaitPhase waits for
// paused).
func (c *Client) PauseWorkspace(ctx context.Context, id string, req wire.PauseRequest) (*wire.Workspace, error) {
	return doInto[wire.Workspace](ctx, c, http.MethodPost, "/v1/workspaces/"+seg(id)+"/pause", nil, req)
}

// ResumeWorkspace starts a paused workspace again.
func (c *Client) ResumeWorkspace(ctx context.Context, id string) (*wire.Workspace, error) {
	return doInto[wire.Workspace](ctx, c, http.MethodPost, "/v1/workspaces/"+seg(id)+"/resume", nil, nil)
}

// WaitSnapshot polls snapshot id until it is ready, and fails when it
// failed, is being deleted or ctx ends.
func (c *Client) WaitSnapshot(ctx context.Context, id string) (*wire.Snapshot, error) {
	tick := time.NewTicker(c.pollInterval)
	defer tick.Stop()
	for {
		s, err := c.GetSnapshot(ctx, id)
		switch {
		case err != nil && !(retryable(err) && ctx.Err() == nil):
			return nil, err
		case err != nil:
		case s.Phase == wire.SnapshotReady:
			return s, nil
		case s.Phase == wire.SnapshotFailed, s.Phase == wire.SnapshotDeleting:
			return s, errs.E(errs.Precondition, "snapshot %s is %s: %s", id, s.Phase, s.Reason)
		}
		select {
		case <-ctx.Done():
			return nil, errs.E(errs.Timeout, "snapshot %s: not ready: %v", id, ctx.Err())
		case <-tick.C:
		}
	}
}
