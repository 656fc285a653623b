package wire

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
	BackendVM         = "vm"
)

// IsHostBackend reports whether a backend of kind runs a workspace's code
// on the machine that runs Primer (local, worktree): only an admin's
// template, asked for by an admin, may make a workspace there (the host
// rule, docs/SECURITY.md).
func IsHostBackend(kind string) bool { return kind == BackendLocal || kind == BackendWorktree }

// Workspace phases (DESIGN.md).
const (
	PhasePending     = "pending"
	PhaseRunning     = "running"
	PhaseFailed      = "failed"
	PhaseTerminating = "terminating"
	// PhaseEscalated is where stale recovery leaves a workspace when its
	// bounded attempts ran out: it needs a human.
	PhaseEscalated = "escalated"
)

// Session statuses and end reasons.
const (
	SessionOpen  = "open"
	SessionEnded = "ended"

	ReasonWorkspaceLost    = "workspace_lost"
	ReasonWorkspaceDeleted = "workspace_deleted"
	ReasonEndedByUser      = "ended_by_user"
	// ReasonWorkspaceReturned ends the sessions of a leased workspace
	// returned to its warm pool.
	ReasonWorkspaceReturned = "workspace_returned"
)

// Event types (DESIGN.md).
const (
	EventProvisioned     = "workspace.provisioned"
	EventProvisionFailed = "workspace.provision_failed"
	EventDestroyed       = "workspace.destroyed"
	EventPhaseChanged    = "workspace.phase_changed"

	// Stale recovery: a workspace's sandbox is torn down and re-provisioned.
	EventRecoveryStarted = "workspace.recovery_started"
	EventRecovered       = "workspace.recovered"
	EventRecoveryFailed  = "workspace.recovery_failed"
	EventEscalated       = "workspace.escalated"
	// EventHistoryRewritten (session_id, expected, head): a session's last
	// recorded commit is no longer on the .state history's line, so a
	// command rewrote the history (git reset, commit --amend).
	EventHistoryRewritten = "session.history_rewritten"
	// EventSandboxMissing: the backend no longer has the workspace's sandbox.
	EventSandboxMissing = "workspace.sandbox_missing"

	// Warm pools: a workspace leased from its pool, and returned to it.
	EventLeased   = "workspace.leased"
	EventReturned = "workspace.returned"
)

// Warm pool states of a workspace (Workspace.PoolState). A workspace that is
// not in a pool has the empty state.
const (
	PoolIdle      = "idle"      // warm, waiting to be leased
	PoolLeased    = "leased"    // handed out by LeaseWorkspace
	PoolReturning = "returning" // given back; being reset before it is idle again
)

// Warm pool sizes.
const (
	DefaultPoolSize = 3   // the size of a pool created with size 0
	MaxPoolSize     = 100 // the largest size a pool may have
)

// Provider says how to reach a backend. It stores connection and reachability
// only. Config is the backend-specific document (`config:` in YAML) as JSON.
type Provider struct {
	ID string `gorm:"primaryKey;size:128" json:"id"`
	// TenantID is the tenant the provider belongs to (tenant.go); rows made before
	// tenants existed belong to DefaultTenantID.
	TenantID string `gorm:"size:64;not null;default:'default';index" json:"tenant_id"`
	// Shared lets every tenant build templates on the provider without
	// seeing its config; only an admin sets it.
	Shared    bool            `gorm:"not null;default:false" json:"shared"`
	Provider  string          `gorm:"size:32;not null" json:"provider"` // local | worktree | container | kubernetes
	Config    json.RawMessage `gorm:"serializer:json;type:text" json:"config"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Template is the recipe a workspace is made from. Backend is the
// backend-specific document (`backend:` in YAML, with its `kind`) as JSON; it
// holds the image or base path, env, init commands, initial files and caps.
type Template struct {
	ID string `gorm:"primaryKey;size:128" json:"id"`
	// TenantID is the tenant the template belongs to (tenant.go); rows made before
	// tenants existed belong to DefaultTenantID.
	TenantID    string          `gorm:"size:64;not null;default:'default';index" json:"tenant_id"`
	ProviderID  string          `gorm:"size:128;not null;index" json:"provider_id"`
	Description string          `json:"description,omitempty"`
	Backend     json.RawMessage `gorm:"serializer:json;type:text" json:"backend"`
	// Generation is 1 when the template is created and grows by one with
	// every update, so a workspace made from an older recipe can be told
	// apart (Workspace.TemplateGeneration). The store sets it.
	Generation int64 `gorm:"not null;default:1" json:"generation"`
	// AdminWritten is true when an admin made the template's last write
	// (create or update; the API sets it). Only such a template may make
	// workspaces on a host backend: the activities check it wherever a
	// workspace is made, so a row written by a member, or before the rule
	// existed, never reaches the host.
	AdminWritten bool      `gorm:"not null;default:false" json:"-"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// Pool is a warm pool: Size running workspaces of a template kept idle so
// LeaseWorkspace can hand one out without waiting for a provision.
type Pool struct {
	ID string `gorm:"primaryKey;size:128" json:"id"`
	// TenantID is the tenant the pool belongs to (tenant.go); rows made before
	// tenants existed belong to DefaultTenantID.
	TenantID   string `gorm:"size:64;not null;default:'default';index" json:"tenant_id"`
	TemplateID string `gorm:"size:128;not null;index" json:"template_id"`
	// SnapshotID fills the pool from a ready snapshot (a warm start of a
	// prepared environment); empty: from the template's clean state.
	SnapshotID string    `gorm:"size:64;not null;default:''" json:"snapshot_id,omitempty"`
	Size       int       `gorm:"not null" json:"size"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// LeaseTTL is how long a lease lasts unless returned or extended, as
	// a Go duration ("30m"); empty: until returned.
	LeaseTTL string `gorm:"size:32;not null;default:''" json:"lease_ttl,omitempty"`
	// AdminWritten is true when an admin made the pool's last write: only
	// then may its refills make workspaces on a host backend (they carry
	// it as Workspace.ByAdmin).
	AdminWritten bool `gorm:"not null;default:false" json:"-"`
}

// Workspace is a live sandbox materialised from a template.
type Workspace struct {
	ID string `gorm:"primaryKey;size:64" json:"id"` // ws-<hex>
	// TenantID is the tenant the workspace belongs to (tenant.go); rows made before
	// tenants existed belong to DefaultTenantID.
	TenantID string `gorm:"size:64;not null;default:'default';index" json:"tenant_id"`
	// CPUCores and MemoryBytes are the template's limits when the
	// workspace was made (0: none); the tenant's quotas sum them.
	CPUCores    float64           `gorm:"not null;default:0" json:"cpu_cores,omitempty"`
	MemoryBytes int64             `gorm:"not null;default:0" json:"memory_bytes,omitempty"`
	TemplateID  string            `gorm:"size:128;not null;index" json:"template_id"`
	ProviderID  string            `gorm:"size:128;not null;index" json:"provider_id"`
	Backend     string            `gorm:"size:32;not null" json:"backend"`
	Phase       string            `gorm:"size:32;not null;index" json:"phase"`
	Reason      string            `json:"reason,omitempty"` // why the workspace is in its phase
	Labels      map[string]string `gorm:"serializer:json;type:text" json:"labels,omitempty"`
	// Egress is the workspace's own network egress: empty for its
	// template's, or "deny_all", which closes its outbound network where
	// the template would allow it (E2B's allow_internet_access false). It
	// narrows, never widens: set at create, applied at every provision.
	Egress string `gorm:"size:16;not null;default:''" json:"egress,omitempty"`
	// TemplateGeneration is the template's Generation when the workspace
	// was created; CreateWorkspace sets it.
	TemplateGeneration int64 `gorm:"not null;default:0" json:"template_generation"`
	// ByAdmin is true when the workspace was made on an admin's authority:
	// an admin's create or lease, or a pool or eval suite whose last write
	// was an admin's. Only such a workspace may be provisioned on a host
	// backend, or from another tenant's template.
	ByAdmin bool `gorm:"not null;default:false" json:"-"`
	// PoolID is the warm pool the workspace belongs to, empty if none.
	PoolID string `gorm:"size:128;not null;default:'';index:idx_workspaces_pool,priority:1" json:"pool_id,omitempty"`
	// PoolState is PoolIdle, PoolLeased or PoolReturning for a pool's
	// workspace, empty otherwise.
	PoolState string `gorm:"size:16;not null;default:'';index:idx_workspaces_pool,priority:2" json:"pool_state,omitempty"`
	// Lifetime deadlines (lifetime.go), nil when the workspace has none:
	// its workflow deletes it at ExpiresAt or IdleDeadline and takes it
	// back to its pool at LeaseExpiresAt; an extend moves ExpiresAt up to
	// MaxExpiresAt. MaxLifetimeMS and IdleTimeoutMS are the template's
	// bounds when the workspace was made, so a lease can start them.
	ExpiresAt      *time.Time `json:"expires_at,omitempty"`
	MaxExpiresAt   *time.Time `json:"max_expires_at,omitempty"`
	IdleDeadline   *time.Time `json:"idle_deadline,omitempty"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at,omitempty"`
	MaxLifetimeMS  int64      `gorm:"not null;default:0" json:"-"`
	IdleTimeoutMS  int64      `gorm:"not null;default:0" json:"-"`
	// ExpireAction is what happens at ExpiresAt: ExpireActionDelete
	// (empty means it) or ExpireActionPause, which pauses the workspace
	// instead (E2B's autoPause) unless ExpiresAt is its MaxExpiresAt: the
	// template's lifetime.max still deletes. Set at create.
	ExpireAction string `gorm:"size:16;not null;default:''" json:"expire_action,omitempty"`
	// Path is where the workspace lives on its backend (a directory, a volume).
	Path string `json:"workspace_path,omitempty"`
	// SnapshotID is the snapshot the workspace was made from (create with
	// snapshot_id, a fork child, a member of a pool with snapshot_id).
	SnapshotID string `gorm:"size:64;not null;default:'';index" json:"snapshot_id,omitempty"`
	// PausedMode is the mode of the pause while Phase is PhasePaused.
	PausedMode string `gorm:"size:16;not null;default:''" json:"paused_mode,omitempty"`
	// Handle is the backend's serialised handle (backend.Handle as JSON).
	Handle json.RawMessage `gorm:"serializer:json;type:text" json:"-"`
	// Env is the workspace's own environment (E2B's envVars, /v1 create's
	// env), set at create and added under every exec's and process's own
	// env. Secret, like the template's env: never returned by the API,
	// never logged, never in workflow history.
	Env map[string]string `gorm:"serializer:json;type:text" json:"-"`
	// RuntimeToken is the bearer token of the workspace's runtime. Secret:
	// never returned by the API, never logged, never in workflow history.
	RuntimeToken string    `gorm:"size:128" json:"-"`
	WorkflowID   string    `gorm:"size:128" json:"workflow_id"`
	CreatedAt    time.Time `gorm:"index" json:"created_at"` // ListWorkspaces orders by it
	UpdatedAt    time.Time `json:"updated_at"`
}

// Session is one agent run on a workspace. Ended sessions keep their reason.
type Session struct {
	ID string `gorm:"primaryKey;size:64" json:"id"` // ses-<hex>
	// TenantID is the tenant the session belongs to (tenant.go); rows made before
	// tenants existed belong to DefaultTenantID.
	TenantID    string            `gorm:"size:64;not null;default:'default';index" json:"tenant_id"`
	WorkspaceID string            `gorm:"size:64;not null;index:idx_sessions_workspace_status,priority:1" json:"workspace_id"`
	Agent       string            `json:"agent,omitempty"`
	Metadata    map[string]string `gorm:"serializer:json;type:text" json:"metadata,omitempty"`
	Status      string            `gorm:"size:16;not null;index:idx_sessions_workspace_status,priority:2" json:"status"` // open | ended
	// ResumedFrom is the id of the lost session this one resumes
	// (ResumeLostSessions), empty otherwise. A session is resumed at most
	// once: the partial unique index enforces it on both databases.
	ResumedFrom string `gorm:"size:64;not null;default:'';uniqueIndex:idx_sessions_resumed_from,where:resumed_from <> ''" json:"resumed_from,omitempty"`
	EndReason   string `json:"end_reason,omitempty"`
	// StateHead is the last commit this session recorded in its
	// workspace's .state history, kept outside the sandbox: its next
	// commit checks the commit is still on the history's line, so a
	// command that rewrote the history is reported
	// (EventHistoryRewritten).
	StateHead string `gorm:"size:64;not null;default:''" json:"state_head,omitempty"`
	// HistoryBytes is the size of the workspace's .state history after
	// this session's last commit.
	HistoryBytes int64      `gorm:"not null;default:0" json:"history_bytes"`
	CreatedAt    time.Time  `json:"created_at"`
	EndedAt      *time.Time `json:"ended_at,omitempty"`
}

// Event is one stored workspace event. ID increases monotonically, so a
// stream can resume after the last ID it saw.
type Event struct {
	ID uint64 `gorm:"primaryKey;autoIncrement;index:idx_events_workspace_id,priority:2;index:idx_events_tenant,priority:2" json:"id"`
	// TenantID is the tenant the event belongs to (tenant.go); rows made before
	// tenants existed belong to DefaultTenantID. (tenant_id, id) serves the
	// tenant's stream across its workspaces (ListTenantEvents).
	TenantID    string          `gorm:"size:64;not null;default:'default';index:idx_events_tenant,priority:1" json:"tenant_id"`
	WorkspaceID string          `gorm:"size:64;not null;index:idx_events_workspace_id,priority:1" json:"workspace_id"`
	Type        string          `gorm:"size:64;not null" json:"type"`
	Data        json.RawMessage `gorm:"serializer:json;type:text" json:"data"`
	CreatedAt   time.Time       `json:"created_at"`
}
