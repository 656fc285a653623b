package models

// WorkspaceFilter selects workspaces in ListWorkspaces. Empty fields match all.
type WorkspaceFilter struct {
	// TenantID limits the list to one tenant's workspaces (the API's
	// callers); internal callers leave it empty and see every tenant.
	TenantID   string
	TemplateID string
	ProviderID string
	Backend    string
	Phase      string
	PoolID     string
	PoolState  string
	Limit      int // 0: no limit
}

// SessionFilter selects sessions in ListSessions. Empty fields match all.
type SessionFilter struct {
	// TenantID limits the list to one tenant's sessions; empty: all.
	TenantID    string
	WorkspaceID string
	Status      string
}
