package wire

import "encoding/json"

// ProviderSpec is the body of POST and PUT /v1/providers. Shared (admins
// only) lets every tenant build templates on it without seeing its config.
type ProviderSpec struct {
	ID       string          `json:"id,omitempty"`
	Provider string          `json:"provider"`
	Config   json.RawMessage `json:"config,omitempty"`
	Shared   *bool           `json:"shared,omitempty"`
}

// TemplateSpec is the body of POST and PUT /v1/templates.
type TemplateSpec struct {
	ID          string          `json:"id,omitempty"`
	ProviderID  string          `json:"provider_id"`
	Description string          `json:"description,omitempty"`
	Backend     json.RawMessage `json:"backend,omitempty"`
}

// PoolSpec is the body of POST and PUT /v1/pools. Size 0 is
// DefaultPoolSize; LeaseTTL is a Go duration (empty: until returned).
type PoolSpec struct {
	ID         string `json:"id,omitempty"`
	TemplateID string `json:"template_id"`
	Size       int    `json:"size,omitempty"`
	LeaseTTL   string `json:"lease_ttl,omitempty"`
	// SnapshotID fills the pool from a ready snapshot of the caller's
	// tenant taken on the template's backend.
	SnapshotID string `json:"snapshot_id,omitempty"`
}

// PoolStatus counts a pool's workspaces by state.
type PoolStatus struct {
	Idle      int `json:"idle"`
	Starting  int `json:"starting"`
	Leased    int `json:"leased"`
	Returning int `json:"returning"`
}

// PoolView is a pool as the API shows it: the row and its live counts.
type PoolView struct {
	Pool
	Status PoolStatus `json:"status"`
}

// LeaseRequest is the body of POST /v1/pools/{id}/lease.
type LeaseRequest struct {
	Labels   map[string]string `json:"labels,omitempty"`
	LeaseTTL string            `json:"lease_ttl,omitempty"`
}

// Lease answers a lease: the workspace and its Source (warm or cold).
type Lease struct {
	Workspace *Workspace `json:"workspace"`
	Source    string     `json:"source"`
}

// TenantSpec is the body of POST and PUT /v1/tenants.
type TenantSpec struct {
	ID          string `json:"id,omitempty"`
	Description string `json:"description"`
	Quota       Quota  `json:"quota"`
}

// TenantInfo is a tenant as the API shows it: the row and its usage.
type TenantInfo struct {
	Tenant
	Usage Usage `json:"usage"`
}

// TenantEventPage is one page of a tenant's events; LatestID is the newest
// event's id, to resume the stream after.
type TenantEventPage struct {
	Items    []Event `json:"items"`
	LatestID uint64  `json:"latest_id"`
}
