package wire

import "time"

// DefaultTenantID is the tenant created at first start: the first admin
// key's, and the owner of every resource made before tenants existed (the
// tenant_id columns default to it, so an upgraded database keeps its rows).
const DefaultTenantID = "default"

// API key roles.
const (
	RoleAdmin  = "admin"  // everything, every tenant
	RoleMember = "member" // read and write in its tenant
	RoleViewer = "viewer" // read only in its tenant
)

// Tenant is a team sharing one Primer: every resource belongs to exactly
// one, and a member or viewer key sees only its own tenant's.
type Tenant struct {
	ID          string    `gorm:"primaryKey;size:64" json:"id"`
	Description string    `json:"description,omitempty"`
	Quota       Quota     `gorm:"embedded;embeddedPrefix:quota_" json:"quota"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Quota bounds what a tenant may hold at once. A zero field is no limit.
type Quota struct {
	MaxWorkspaces  int64   `gorm:"not null;default:0" json:"max_workspaces,omitempty"`
	MaxCPUCores    float64 `gorm:"not null;default:0" json:"max_cpu_cores,omitempty"`
	MaxMemoryBytes int64   `gorm:"not null;default:0" json:"max_memory_bytes,omitempty"`
	MaxPools       int64   `gorm:"not null;default:0" json:"max_pools,omitempty"`
	// MaxSnapshotBytes bounds the summed Bytes of the tenant's snapshots
	// (creating ones count as 0 until ready); MaxPaused the number of its
	// paused workspaces.
	MaxSnapshotBytes int64 `gorm:"not null;default:0" json:"max_snapshot_bytes,omitempty"`
	MaxPaused        int64 `gorm:"not null;default:0" json:"max_paused,omitempty"`
	// MaxModelTokensPerDay and MaxModelRequestsPerDay bound the tenant's
	// model gateway calls per UTC day, through whichever templates they
	// come (a template's model_gateway.budget may bound less); over
	// either, a call is refused 429 in the provider's own error shape.
	MaxModelTokensPerDay   int64 `gorm:"not null;default:0" json:"max_model_tokens_per_day,omitempty"`
	MaxModelRequestsPerDay int64 `gorm:"not null;default:0" json:"max_model_requests_per_day,omitempty"`
}

// Usage is what a tenant holds now, in the units of its Quota. A workspace
// counts from its create until its row is gone (deleting ones too).
type Usage struct {
	Workspaces  int64   `json:"workspaces"`
	CPUCores    float64 `json:"cpu_cores"`
	MemoryBytes int64   `json:"memory_bytes"`
	Pools       int64   `json:"pools"`
	// SnapshotBytes sums the tenant's snapshots; Paused counts its paused
	// workspaces (which are left out of CPUCores and MemoryBytes).
	SnapshotBytes int64 `json:"snapshot_bytes"`
	Paused        int64 `json:"paused"`
}

// APIKey is one bearer key. The secret is shown once, at creation; the row
// keeps only its SHA-256 (Hash), which the API compares in constant time.
type APIKey struct {
	ID       string `gorm:"primaryKey;size:64" json:"id"` // key-<hex>, also the key's visible prefix
	TenantID string `gorm:"size:64;not null;index" json:"tenant_id"`
	Role     string `gorm:"size:16;not null" json:"role"`
	Name     string `gorm:"size:200;not null;default:''" json:"name,omitempty"`
	// Hash is the hex SHA-256 of the whole key. Never returned.
	Hash      string `gorm:"size:64;not null" json:"-"`
	CreatedBy string `gorm:"size:64;not null;default:''" json:"created_by,omitempty"`
	// ParentID is the key this one was minted under, whose life bounds
	// it: it never expires after its parent and stops working when any
	// ancestor is revoked or expired. Empty for a root key (the first admin
	// key, one an admin minted with root, or one made before parents were
	// recorded by an admin key).
	ParentID   string     `gorm:"size:64;not null;default:'';index" json:"parent_id,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
}

// AuditEntry is one mutating API request: who (key and tenant), what
// (action and resource), how it ended (the HTTP status), from where and
// when. It never holds bodies, file contents, env values or keys.
type AuditEntry struct {
	ID       uint64 `gorm:"primaryKey;autoIncrement" json:"id"`
	KeyID    string `gorm:"size:64;not null;default:''" json:"key_id,omitempty"`
	TenantID string `gorm:"size:64;not null;default:'';index:idx_audit_tenant_id,priority:1" json:"tenant_id,omitempty"`
	// Action is the resource kind and verb, e.g. workspaces.create,
	// workspaces.exec, apikeys.revoke.
	Action string `gorm:"size:64;not null" json:"action"`
	// Resource is the object acted on, e.g. workspaces/ws-1a2b.
	Resource  string    `gorm:"size:300;not null;default:''" json:"resource,omitempty"`
	Status    int       `gorm:"not null" json:"status"`
	Result    string    `gorm:"size:32;not null" json:"result"` // ok, or the error code
	Address   string    `gorm:"size:64;not null;default:''" json:"address"`
	CreatedAt time.Time `gorm:"index" json:"created_at"`
}

// AuditPending is the Result of an entry written before its request ran
// (Status 0): FinishAudit gives it the outcome. One left pending is a
// request whose server stopped before it answered.
const AuditPending = "pending"
