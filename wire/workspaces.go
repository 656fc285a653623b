package wire

import "github.com/primerhq/primer/runtime/protocol"

// CreateWorkspaceRequest is the body of POST /v1/workspaces. TTL is a Go
// duration bounding the workspace's life within its template's max.
type CreateWorkspaceRequest struct {
	TemplateID string            `json:"template_id"`
	Labels     map[string]string `json:"labels,omitempty"`
	TTL        string            `json:"ttl,omitempty"`
	// Env is the workspace's own environment, added under every exec's
	// and process's env (Workspace.Env). Secret: no answer shows it.
	Env map[string]string `json:"env,omitempty"`
	// Egress narrows the template's network egress for this workspace:
	// empty keeps the template's; "deny_all" closes the workspace's
	// outbound network (container and kubernetes templates). It never
	// widens: no other value is accepted.
	Egress string `json:"egress,omitempty"`
	// ExpireAction is what happens when the workspace's ttl runs out:
	// "delete" (the default) or "pause" (it is paused, its files kept, and
	// an extend then a resume brings it back; E2B's autoPause). The
	// template's lifetime.max deletes either way.
	ExpireAction string `json:"expire_action,omitempty"`
	// SnapshotID starts the workspace from a ready snapshot of the
	// caller's tenant instead of the template's clean state; TemplateID
	// may then be empty (the snapshot's template is used) or any template
	// on a provider of the snapshot's backend.
	SnapshotID string `json:"snapshot_id,omitempty"`
}

// Created answers a create: the workspace and where it came from, Source
// (warm: an idle member of a pool, running already; cold: provisioned
// after the answer).
type Created struct {
	*Workspace
	Source string `json:"source"`
}

// ExtendRequest is the body of POST /v1/workspaces/{id}/extend: By (a Go
// duration) or Until (RFC 3339), never past the workspace's max.
type ExtendRequest struct {
	By    string `json:"by,omitempty"`
	Until string `json:"until,omitempty"`
	// Exact, with Until, sets the deadlines to Until even when that is
	// sooner than they are (E2B's setTimeout: the timeout becomes now plus
	// the new value); without it an extend never shortens.
	Exact bool `json:"exact,omitempty"`
}

// DirListing answers a list of a workspace directory.
type DirListing struct {
	Path  string              `json:"path"`
	Items []protocol.FileInfo `json:"items"`
}
