package wire

import (
	"encoding/json"
	"time"
)

// PhasePaused is the phase of a workspace whose compute is stopped with its
// files kept (POST /v1/workspaces/{id}/pause, or idle_action pause): not
// probed, not counted against max_cpu_cores and max_memory_bytes, counted
// against max_paused and storage. resume brings it back to running.
const PhasePaused = "paused"

// Snapshot phases.
const (
	// SnapshotCreating: the capture is being taken; it is never used or
	// listed as ready until it is complete.
	SnapshotCreating = "creating"
	SnapshotReady    = "ready"
	// SnapshotFailed: the capture could not be taken; Reason says why. It
	// holds nothing and may be deleted.
	SnapshotFailed = "failed"
	// SnapshotDeleting: a delete removes the capture from its backend.
	SnapshotDeleting = "deleting"
)

// Snapshot modes (Snapshot.Mode, CreateSnapshotRequest.Mode).
const (
	SnapshotModeFilesystem = "filesystem"
	SnapshotModeFull       = "full"
)

// Snapshot events.
const (
	EventSnapshotTaken  = "workspace.snapshot_taken"
	EventSnapshotFailed = "workspace.snapshot_failed"
	EventForked         = "workspace.forked"
	EventPaused         = "workspace.paused"
	EventResumed        = "workspace.resumed"
)

// Snapshot is a capture of a workspace's sandbox (kind workspace_snapshot,
// id snap-<hex>) that new workspaces start from: POST /v1/workspaces with
// snapshot_id, a fork's children, a pool with snapshot_id. It belongs to
// the tenant of the workspace it was taken from and outlives that
// workspace.
type Snapshot struct {
	ID       string `gorm:"primaryKey;size:64" json:"id"`
	TenantID string `gorm:"size:64;not null;default:'default';index" json:"tenant_id"`
	// WorkspaceID is the workspace it was taken from (which may be gone).
	WorkspaceID string `gorm:"size:64;not null;index" json:"workspace_id"`
	// TemplateID, ProviderID and Backend are the source workspace's: a
	// workspace made from the snapshot runs on a provider of that backend.
	TemplateID string `gorm:"size:128;not null" json:"template_id"`
	ProviderID string `gorm:"size:128;not null" json:"provider_id"`
	Backend    string `gorm:"size:32;not null" json:"backend"`
	// Mode is SnapshotModeFilesystem or SnapshotModeFull.
	Mode   string `gorm:"size:16;not null" json:"mode"`
	Phase  string `gorm:"size:16;not null;index" json:"phase"`
	Reason string `json:"reason,omitempty"`
	// Bytes is the capture's size once ready; it counts against the
	// tenant's max_snapshot_bytes.
	Bytes  int64             `gorm:"not null;default:0" json:"bytes"`
	Labels map[string]string `gorm:"serializer:json;type:text" json:"labels,omitempty"`
	// Implicit is set on the snapshot a fork takes for its children.
	Implicit bool `gorm:"not null;default:false" json:"implicit,omitempty"`
	// Signalled is set once the source workspace's workflow was asked to
	// take it: a row still creating without it, past the reconciler's
	// grace, was stored by a process killed before it could ask, and the
	// reconciler asks again. Never returned.
	Signalled bool `gorm:"not null;default:false" json:"-"`
	// Ref is the backend's reference to the capture (backend.SnapshotRef
	// as JSON); never returned.
	Ref       json.RawMessage `gorm:"serializer:json;type:text" json:"-"`
	CreatedAt time.Time       `json:"created_at"`
	ReadyAt   *time.Time      `json:"ready_at,omitempty"`
}

// CreateSnapshotRequest is the body of POST /v1/workspaces/{id}/snapshots.
type CreateSnapshotRequest struct {
	// Mode is "filesystem" (the default) or "full".
	Mode   string            `json:"mode,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// ForkRequest is the body of POST /v1/workspaces/{id}/fork: Count new
// workspaces from one implicit snapshot of the workspace, all or nothing
// against the tenant's quotas.
type ForkRequest struct {
	Count  int               `json:"count"`
	Mode   string            `json:"mode,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	TTL    string            `json:"ttl,omitempty"`
}

// MaxForkCount bounds ForkRequest.Count.
const MaxForkCount = 100

// Forked answers a fork: the implicit snapshot and the new workspaces
// (pending until the snapshot is ready and each is provisioned from it).
type Forked struct {
	Snapshot   *Snapshot    `json:"snapshot"`
	Workspaces []*Workspace `json:"workspaces"`
}

// PauseRequest is the optional body of POST /v1/workspaces/{id}/pause.
type PauseRequest struct {
	// Mode is "filesystem" (the default: processes stop, files stay) or
	// "full" (processes are checkpointed and continue after resume).
	Mode string `json:"mode,omitempty"`
}
