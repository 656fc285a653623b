// Package backend defines the one small interface every workspace backend
// implements (local directory, git worktree, container, Kubernetes), the
// values that travel between the workflow, the database and the backend, and
// the registry that builds a backend from a provider row.
//
// The interface is owned by its caller, the activities package; optional
// capabilities are separate interfaces found by type assertion.
package backend

import (
	"context"
	"encoding/json"
)

// Backend creates and destroys sandboxes and says where their runtime listens.
// Implementations are safe for concurrent use. Provision and Destroy are
// idempotent on the workspace id: a retry after a crash finds what the first
// try made and finishes the job.
type Backend interface {
	// Capabilities describes what the backend offers.
	Capabilities() Capabilities
	// ValidateTemplate checks a template's backend document (with its kind)
	// and returns an Invalid error naming the field at fault.
	ValidateTemplate(tmpl json.RawMessage) error
	// Provision makes the sandbox for req.WorkspaceID and starts the runtime
	// in it with req.Token, returning the handle to find it again.
	Provision(ctx context.Context, req ProvisionRequest) (Handle, error)
	// Endpoint returns where the workspace's runtime can be reached now. A
	// backend whose runtime lives in the platform's process (local) may start
	// serving it again here after a restart; token is the stored runtime token.
	Endpoint(ctx context.Context, h Handle, token string) (Endpoint, error)
	// Destroy removes everything the sandbox owns. Destroying a sandbox that is
	// already gone is not an error.
	Destroy(ctx context.Context, h Handle) error
}

// RuntimeHost is implemented by backends whose runtime is served by the
// platform's own process (local, worktree). After a platform restart they
// serve it again, and only the caller knows the template's env to serve it
// with: env may hold secrets, so it is never part of the handle. Callers use
// ServeRuntime instead of Endpoint when a backend has it.
type RuntimeHost interface {
	ServeRuntime(ctx context.Context, h Handle, token string, env EnvFunc) (Endpoint, error)
}

// EnvFunc loads a workspace's env. RuntimeHost calls it only when it must
// start serving a runtime, so the calls that find it served (every exec and
// file call) read nothing.
type EnvFunc func(ctx context.Context) (map[string]string, error)

// Capabilities describes a backend.
type Capabilities struct {
	// Isolation names what separates the sandbox from the host: "none",
	// "container", "pod", "machine".
	Isolation string `json:"isolation"`
	// PersistentAcrossRestart is true when the sandbox survives a restart of
	// the platform process and can be re-attached from its handle.
	PersistentAcrossRestart bool `json:"persistent_across_restart"`
}

// ProvisionRequest is what a backend needs to make a sandbox. It is built by
// the provision activity from database rows and never enters workflow
// history: Token and Env may hold secrets.
type ProvisionRequest struct {
	WorkspaceID string
	// Template is the template's backend document (with its kind) as JSON.
	Template json.RawMessage
	// Env is the environment every exec in the sandbox starts with.
	Env map[string]string
	// Token is the runtime's bearer token (PRIMER_RUNTIME_TOKEN).
	Token string
}

// Handle is what a backend needs to find its sandbox again: a value, not a
// connection. It is serialisable, travels through workflow history and the
// database, and lets any worker re-attach after a restart. It holds no secret.
type Handle struct {
	Backend     string `json:"backend"`
	WorkspaceID string `json:"workspace_id"`
	// Path is where the workspace lives on its backend (directory, volume).
	Path string `json:"path,omitempty"`
	// RuntimeURL is the runtime's WebSocket URL where it is fixed at provision
	// time (containers); empty where Endpoint computes it.
	RuntimeURL string `json:"runtime_url,omitempty"`
	// Attrs holds backend-specific identifiers (container id, branch name).
	Attrs map[string]string `json:"attrs,omitempty"`
}

// Endpoint is where a runtime listens: a ws:// or wss:// URL.
type Endpoint struct {
	URL string `json:"url"`
}

// Common is the part of every template backend document that the platform
// applies the same way on every backend, after Provision, through the
// runtime: environment, initial files and init commands.
type Common struct {
	Kind  string            `json:"kind"`
	Env   map[string]string `json:"env,omitempty"`
	Files map[string]string `json:"files,omitempty"` // relative path -> content
	Init  []string          `json:"init,omitempty"`  // shell commands run in order with sh -c
}
