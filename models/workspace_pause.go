package models

import (
	"context"
	"strconv"

	"gorm.io/gorm"

	"github.com/primerhq/primer/wire"
)

// SetWorkspacePausedMode records the mode of a workspace's pause
// (wire.SnapshotModeFilesystem or wire.SnapshotModeFull), or clears it
// ("") once the workspace is resumed or its pause failed; NotFound if
// absent. The workflow sets the phase itself (SetWorkspacePhase).
func (s *Store) SetWorkspacePausedMode(ctx context.Context, id, mode string) error {
	return s.updateWorkspace(ctx, id, "set paused mode", map[string]any{"paused_mode": mode})
}

// ReservePause records mode as workspace ws's pause before its backend
// pauses it, under the tenant's quota lock: Exhausted when the tenant's
// other paused workspaces (those paused, and those being paused, whose
// paused_mode is set) already fill its max_paused. Two pauses of one
// tenant at once thus take turns. NotFound if absent.
func (s *Store) ReservePause(ctx context.Context, ws *wire.Workspace, mode string) error {
	tenantID := tenantOrDefault(ws.TenantID)
	err := s.inQuota(ctx, tenantID, func(tx *gorm.DB, q wire.Quota) error {
		if q.MaxPaused > 0 {
			var n int64
			if err := tx.Model(&wire.Workspace{}).
				Where("tenant_id = ? AND id <> ? AND (phase = ? OR paused_mode <> '')", tenantID, ws.ID, wire.PhasePaused).
				Count(&n).Error; err != nil {
				return err
			}
			if n >= q.MaxPaused {
				return exhausted(tenantID, "max_paused", strconv.FormatInt(q.MaxPaused, 10), strconv.FormatInt(n, 10), "")
			}
		}
		res := tx.Model(&wire.Workspace{}).Where("id = ?", ws.ID).Update("paused_mode", mode)
		if res.Error == nil && res.RowsAffected == 0 {
			return notFound("workspace", ws.ID)
		}
		return res.Error
	})
	return writeError(ctx, err, "workspace", ws.ID, "reserve pause")
}
