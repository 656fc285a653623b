// Package backend defines the one small interface every workspace backend
// implements (local directory, git worktree, container, Kubernetes, vm), the
// values that travel between the workflow, the database and the backend, and
// the registry that builds a backend from a provider row.
//
// It is the floor both planes stand on: the control plane reaches it through
// activities (API -> workflows -> activities -> backend), the data plane
// through the connector, which asks a backend where a workspace's runtime
// listens (API -> connector -> runtime). Optional capabilities are separate
// interfaces found by type assertion.
package backend

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/primerhq/primer/errs"
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

// Keeper is implemented by backends that can replace a sandbox's compute
// while keeping its data, which is what stale recovery does: Teardown removes
// the container or the served runtime (and with it every process in the
// sandbox) but keeps the volume, the directory, the worktree and its branch,
// so that a Provision of the same workspace id, with a new token, makes a
// fresh sandbox that finds the files. Teardown is idempotent: tearing down a
// sandbox that is already torn down or gone is not an error. Destroy after
// Teardown removes the kept data too.
type Keeper interface {
	Teardown(ctx context.Context, h Handle) error
}

// Lister is implemented by backends that can enumerate the sandboxes they
// manage, so the reconciler can destroy those whose workspace has no
// database row. List returns only what is certainly Primer's (labelled,
// named and shaped as the backend makes it), including sandboxes that were
// torn down but keep data; it never returns anything else, since whatever it
// returns may be destroyed.
type Lister interface {
	List(ctx context.Context) ([]Listed, error)
}

// Tidier is implemented by backends that keep shared objects beside their
// sandboxes (the container backend's tenant networks). Tidy removes those
// no sandbox uses any more and that were made more than grace ago, and
// describes what it removed ("network primer-tenant-acme"), for logs. The
// reconciler calls it on every pass.
type Tidier interface {
	Tidy(ctx context.Context, grace time.Duration) ([]string, error)
}

// TokenKeeper is implemented by backends that keep the runtime token
// beside the sandbox (Kubernetes: in the workspace's Secret, which the pod
// reads it from). When the runtime refuses the token the platform stored
// (a database restored from a backup, a token changed by hand), the
// platform re-attaches with the backend's token and stores it again,
// instead of losing a sandbox that still runs.
type TokenKeeper interface {
	RuntimeToken(ctx context.Context, h Handle) (string, error)
}

// Listed is one sandbox found by a Lister.
type Listed struct {
	WorkspaceID string `json:"workspace_id"`
	// Created is when the oldest of its objects was made, or for host
	// directories when the directory last changed (a later time only delays
	// the reconciler). Zero when the backend cannot tell.
	Created time.Time `json:"created"`
	// Objects describes what the backend holds of it ("container
	// primer-ws-1a2b", "volume primer-ws-1a2b", "directory /srv/ws-1a2b"),
	// for logs and events.
	Objects []string `json:"objects,omitempty"`
	// Remnant is set when only part of a sandbox is left (a worktree
	// branch whose directory is gone): removed like any orphan when no
	// workspace has its id, but a running workspace with only a remnant
	// still misses its sandbox.
	Remnant bool `json:"remnant,omitempty"`
}

// workspaceIDPattern is the form of the ids the server mints
// (models.NewID("ws"): ws- and hex).
var workspaceIDPattern = regexp.MustCompile(`^ws-[0-9a-f]{1,64}$`)

// IsWorkspaceID reports whether s has the form of a workspace id the server
// mints, ws-<hex>. Listers use it so a directory or object that merely sits
// next to Primer's ("notes", "ws-backup") is never taken for a workspace.
func IsWorkspaceID(s string) bool { return workspaceIDPattern.MatchString(s) }

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
	// Snapshots lists the snapshot modes the backend takes
	// (SnapshotFilesystem, SnapshotFull); empty when it implements no
	// Snapshotter. A mode missing here is refused by the API with 400.
	Snapshots []string `json:"snapshots,omitempty"`
	// SnapshotsNote says why a mode is missing where that is a fact of this
	// machine (e.g. "full: criu check failed: ..."), for the API's refusal.
	SnapshotsNote string `json:"snapshots_note,omitempty"`
	// Pause is true when the backend implements Pauser.
	Pause bool `json:"pause,omitempty"`
	// Reset says what a reset (a pool return, an eval case on a reused
	// workspace) restores: ResetScopeSandbox (the backend implements
	// Restorer) or ResetScopeWorkspace.
	Reset string `json:"reset,omitempty"`
	// ResetNote says exactly what a reset restores and what it leaves.
	ResetNote string `json:"reset_note,omitempty"`
}

// ProvisionRequest is what a backend needs to make a sandbox. It is built by
// the provision activity from database rows and never enters workflow
// history: Token and Env may hold secrets.
type ProvisionRequest struct {
	WorkspaceID string
	// TenantID is the workspace's tenant (models.DefaultTenantID when
	// empty). Backends label the sandbox with it and keep the sandboxes of
	// different tenants from reaching each other over the network.
	TenantID string
	// Template is the template's backend document (with its kind) as JSON.
	Template json.RawMessage
	// Env is the environment every exec in the sandbox starts with.
	Env map[string]string
	// Token is the runtime's bearer token (PRIMER_RUNTIME_TOKEN).
	Token string
	// Snapshot, when set, is the capture the sandbox starts from instead
	// of the template's clean state (a workspace made from a snapshot, a
	// fork child, a pool filled from a snapshot, a reset to the base). The
	// template's files and init are not applied again.
	Snapshot *SnapshotRef
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

// DecodeHandle reads the handle stored in workspace workspaceID's row (raw,
// its JSON); ok is false when the row has none yet.
func DecodeHandle(workspaceID string, raw []byte) (h Handle, ok bool, err error) {
	if s := strings.TrimSpace(string(raw)); s == "" || s == "null" {
		return Handle{}, false, nil
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return Handle{}, false, errs.E(errs.Other, "workspace %s: decode handle: %w", workspaceID, err)
	}
	return h, true, nil
}

// CheckType checks a handle that may have been built from the workspace id
// alone (Destroy and Teardown of a sandbox whose handle was never stored):
// its Backend, when set, must be typ.
func (h Handle) CheckType(typ string) error {
	if h.Backend != "" && h.Backend != typ {
		return h.wrongType(typ)
	}
	return nil
}

// Endpoint is where a runtime listens: a ws:// or wss:// URL.
type Endpoint struct {
	URL string `json:"url"`
}

// Common is the part of every template backend document that the platform
// applies the same way on every backend: environment, initial files and init
// commands, harness.toml (applied after Provision, through the runtime), and the
// lifecycle policy the workspace workflow follows (see Policy).
type Common struct {
	Kind  string            `json:"kind"`
	Env   map[string]string `json:"env,omitempty"`
	Files map[string]string `json:"files,omitempty"` // relative path -> content
	Init  []string          `json:"init,omitempty"`  // shell commands run in order with sh -c
	// ConfigTOML is written as HarnessPath (harness.toml) at the workspace
	// root, mode 0600, with Files and before Init; it must be valid TOML and
	// hold none of Env's values (see HarnessTOML).
	ConfigTOML string `json:"config_toml,omitempty"`
	// StartTimeout is how long a workspace may stay pending before it
	// fails, as a Go duration ("10m"); default DefaultStartTimeout.
	StartTimeout string `json:"start_timeout,omitempty"`
	// Recovery is the stale recovery policy; defaults apply when it is
	// missing.
	Recovery *Recovery `json:"recovery,omitempty"`
	// Lifetime bounds how long a workspace of the template lives; nil (or
	// empty fields) means it lives until it is deleted.
	Lifetime *Lifetime `json:"lifetime,omitempty"`
	// ModelGateway routes the workspace's model calls through the platform
	// (gateway.go); nil: none.
	ModelGateway *ModelGateway `json:"model_gateway,omitempty"`
}

// Recovery is a template's stale recovery policy: once a workspace has been
// failed for After, its sandbox is replaced (torn down and provisioned anew
// on the same data), up to MaxAttempts times; after that, or when a
// replacement fails, the workspace is escalated and WebhookURL, when set, is
// sent a POST.
type Recovery struct {
	// MaxAttempts bounds the replacements; nil means DefaultMaxAttempts and
	// 0 means never replace: escalate as soon as After has passed.
	MaxAttempts *int `json:"max_attempts,omitempty"`
	// After is how long a workspace stays failed before recovery starts, as
	// a Go duration ("30s"); default DefaultRecoverAfter.
	After string `json:"after,omitempty"`
	// WebhookURL is an http or https URL POSTed to on escalation. It may
	// carry a token, so it is read from the template by the activity that
	// sends it and never enters workflow history, logs or error messages.
	WebhookURL string `json:"webhook_url,omitempty"`
}
