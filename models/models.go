// Package models holds Primer's GORM models and the Store that reads and
// writes them, on SQLite (the embedded default) or PostgreSQL.
package models

import (
	"encoding/json"
	"time"
)

// Reserved names created at first start.
const (
	LocalProviderID   = "local"   // the reserved local provider; 409 on create, 403 on update or delete
	DefaultTemplateID = "default" // the default template on the local provider
)

// Backend types, as a provider's `provider` field and a template's backend.kind.
const (
	BackendLocal      = "local"
	BackendWorktree   = "worktree"
	BackendContainer  = "container"
	BackendKubernetes = "kubernetes"
)

// Workspace phases (DESIGN.md).
const (
	PhasePending     = "pending"
	PhaseRunning     = "running"
	PhaseFailed      = "failed"
	PhaseTerminating = "terminating"
)

// Session statuses and end reasons.
const (
	SessionOpen  = "open"
	SessionEnded = "ended"

	ReasonWorkspaceLost    = "workspace_lost"
	ReasonWorkspaceDeleted = "workspace_deleted"
	ReasonEndedByUser      = "ended_by_user"
)

// Event types (DESIGN.md).
const (
	EventProvisioned     = "workspace.provisioned"
	EventProvisionFailed = "workspace.provision_failed"
	EventDestroyed       = "workspace.destroyed"
	EventPhaseChanged    = "workspace.phase_changed"
)

// Provider says how to reach a backend. It stores connection and reachability
// only. Config is the backend-specific document (`config:` in YAML) as JSON.
type Provider struct {
	ID        string          `gorm:"primaryKey;size:128" json:"id"`
	Provider  string          `gorm:"size:32;not null" json:"provider"` // local | worktree | container | kubernetes
	Config    json.RawMessage `gorm:"serializer:json;type:text" json:"config"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Template is the recipe a workspace is made from. Backend is the
// backend-specific document (`backend:` in YAML, with its `kind`) as JSON; it
// holds the image or base path, env, init commands, initial files and caps.
type Template struct {
	ID          string          `gorm:"primaryKey;size:128" json:"id"`
	ProviderID  string          `gorm:"size:128;not null;index" json:"provider_id"`
	Description string          `json:"description,omitempty"`
	Backend     json.RawMessage `gorm:"serializer:json;type:text" json:"backend"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// Workspace is a live sandbox materialised from a template.
type Workspace struct {
	ID         string            `gorm:"primaryKey;size:64" json:"id"` // ws-<hex>
	TemplateID string            `gorm:"size:128;not null;index" json:"template_id"`
	ProviderID string            `gorm:"size:128;not null;index" json:"provider_id"`
	Backend    string            `gorm:"size:32;not null" json:"backend"`
	Phase      string            `gorm:"size:32;not null;index" json:"phase"`
	Reason     string            `json:"reason,omitempty"` // why the workspace is in its phase
	Labels     map[string]string `gorm:"serializer:json;type:text" json:"labels,omitempty"`
	// Path is where the workspace lives on its backend (a directory, a volume).
	Path string `json:"workspace_path,omitempty"`
	// Handle is the backend's serialised handle (backend.Handle as JSON).
	Handle json.RawMessage `gorm:"serializer:json;type:text" json:"-"`
	// RuntimeToken is the bearer token of the workspace's runtime. Secret:
	// never returned by the API, never logged, never in workflow history.
	RuntimeToken string    `gorm:"size:128" json:"-"`
	WorkflowID   string    `gorm:"size:128" json:"workflow_id"`
	CreatedAt    time.Time `gorm:"index" json:"created_at"` // ListWorkspaces orders by it
	UpdatedAt    time.Time `json:"updated_at"`
}

// Session is one agent run on a workspace. Ended sessions keep their reason.
type Session struct {
	ID          string            `gorm:"primaryKey;size:64" json:"id"` // ses-<hex>
	WorkspaceID string            `gorm:"size:64;not null;index:idx_sessions_workspace_status,priority:1" json:"workspace_id"`
	Agent       string            `json:"agent,omitempty"`
	Metadata    map[string]string `gorm:"serializer:json;type:text" json:"metadata,omitempty"`
	Status      string            `gorm:"size:16;not null;index:idx_sessions_workspace_status,priority:2" json:"status"` // open | ended
	EndReason   string            `json:"end_reason,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	EndedAt     *time.Time        `json:"ended_at,omitempty"`
}

// Event is one stored workspace event. ID increases monotonically, so a
// stream can resume after the last ID it saw.
type Event struct {
	ID          uint64          `gorm:"primaryKey;autoIncrement;index:idx_events_workspace_id,priority:2" json:"id"`
	WorkspaceID string          `gorm:"size:64;not null;index:idx_events_workspace_id,priority:1" json:"workspace_id"`
	Type        string          `gorm:"size:64;not null" json:"type"`
	Data        json.RawMessage `gorm:"serializer:json;type:text" json:"data"`
	CreatedAt   time.Time       `json:"created_at"`
}

// WorkspaceFilter selects workspaces in ListWorkspaces. Empty fields match all.
type WorkspaceFilter struct {
	TemplateID string
	ProviderID string
	Backend    string
	Phase      string
	Limit      int // 0: no limit
}

// SessionFilter selects sessions in ListSessions. Empty fields match all.
type SessionFilter struct {
	WorkspaceID string
	Status      string
}
