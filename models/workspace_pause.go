package models

import "context"

// SetWorkspacePausedMode records the mode of a workspace's pause
// (wire.SnapshotModeFilesystem or wire.SnapshotModeFull), or clears it
// ("") once the workspace is resumed; NotFound if absent. The workflow
// sets the phase itself (SetWorkspacePhase).
func (s *Store) SetWorkspacePausedMode(ctx context.Context, id, mode string) error {
	return s.updateWorkspace(ctx, id, "set paused mode", map[string]any{"paused_mode": mode})
}
