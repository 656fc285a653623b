// Package envd serves E2B's in-sandbox API (envd) for Primer workspaces:
// the Connect services process.Process and filesystem.Filesystem, the
// /files upload and download, and /health. It is a door: every call is
// translated to the workspace runtime's protocol (runtime/client) and
// nothing about workspaces is decided here.
//
// # Wiring (the /e2b/envd router in package e2b)
//
// The router authenticates a request (E2b-Sandbox-Id, X-Access-Token),
// resolves the workspace and calls Server.ServeEnvd, which is package
// e2b's Envd interface:
//
//	cfg.Envd = envd.NewServer(connector, envd.Options{Logger: log})
//
// ServeEnvd describes the workspace (its backend kind decides whether paths
// reach the whole sandbox) and serves the request. New is the same handler
// for a caller that puts the Sandbox in the request's context itself
// (WithSandbox). The request path may keep its /e2b/envd prefix:
// procedures are matched on their last two segments
// (/process.Process/Start), /files and /health on their last one.
//
// # Users and paths
//
// The user of a call is the name in its `Authorization: Basic
// base64(name:)` header (Connect calls) or its `username` query parameter
// (/files); without one, the sandbox's DefaultUser: the user its
// template names (Server reads it), else E2B's "user".
// Relative paths resolve against that user's home (/root for root,
// /home/<name> otherwise), as envd does; "~" and "~/..." too. A workspace
// whose backend confines paths to the workspace (local, worktree: no
// whole-filesystem runtime) answers every path with invalid_argument (400
// on /files) saying so.
package envd

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"path"
	"strings"

	"github.com/primerhq/primer/api/e2b/connect"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/wire"
)

// Version is the envd version Primer reports (envdVersion in the REST
// answers): the lowest one for which the pinned SDK (e2b 2.51.0) turns every
// feature on: default users (0.4.0), closeStdin (0.5.2), octet-stream
// uploads (0.5.7), watch events with entries (0.6.3) and on network mounts
// (0.6.4). File metadata (0.6.2, stored as xattrs by envd) is refused with a
// clear error rather than dropped.
const Version = "0.6.4"

// DefaultUser is E2B's default sandbox user.
const DefaultUser = "user"

// Sandbox is the workspace a request is for, resolved by the router.
type Sandbox struct {
	// Workspace is the workspace; it must be running.
	Workspace *wire.Workspace
	// WholeFS says the workspace's runtime accepts absolute paths anywhere
	// in the sandbox (container, kubernetes, vm backends).
	WholeFS bool
	// Backend names the workspace's backend kind, for error messages.
	Backend string
	// DefaultUser is the user of calls that name none; DefaultUser when empty.
	DefaultUser string
}

type sandboxKey struct{}

// WithSandbox returns ctx carrying sb for the handler New returns.
func WithSandbox(ctx context.Context, sb *Sandbox) context.Context {
	return context.WithValue(ctx, sandboxKey{}, sb)
}

// SandboxFrom returns the sandbox WithSandbox put in ctx.
func SandboxFrom(ctx context.Context) (*Sandbox, bool) {
	sb, ok := ctx.Value(sandboxKey{}).(*Sandbox)
	return sb, ok && sb != nil && sb.Workspace != nil
}

// Runtimes reaches a workspace's runtime; *connector.Connector is one.
type Runtimes interface {
	Client(ctx context.Context, ws *wire.Workspace) (*client.Client, error)
}

// Options configure the handler.
type Options struct {
	Logger *slog.Logger
	// Clock drives keepalives and deadlines; the wall clock when nil.
	Clock connect.Clock
	// MaxFileBytes bounds one /files upload; 0 means no bound here (the
	// runtime and the disk bound it).
	MaxFileBytes int64
	// HomeDir says where a user's home is, the base of relative paths and
	// of a process's default cwd: /root for root, /home/<name> otherwise
	// when nil, as in E2B's images. Tests point it into a temporary
	// directory.
	HomeDir func(user string) string
}

// handler serves one envd API for every sandbox.
type handler struct {
	rt       Runtimes
	opts     Options
	mux      *connect.Mux
	watchers *watchers
}

// New returns the envd handler.
func New(rt Runtimes, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HomeDir == nil {
		opts.HomeDir = homeOf
	}
	h := &handler{rt: rt, opts: opts, mux: connect.NewMux(connect.Options{Clock: opts.Clock}), watchers: newWatchers()}
	h.registerFilesystem()
	h.registerProcess()
	return h
}

// ServeHTTP routes /health, /files and the Connect procedures.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimRight(r.URL.Path, "/")
	switch {
	case p == "/health" || strings.HasSuffix(p, "/health"):
		// envd answers 204: the process serves.
		w.WriteHeader(http.StatusNoContent)
		return
	case p == "/files" || strings.HasSuffix(p, "/files"):
		h.files(w, r)
		return
	}
	if _, ok := SandboxFrom(r.Context()); !ok {
		http.Error(w, `{"code":"unauthenticated","message":"no sandbox resolved for this request"}`, http.StatusUnauthorized)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// userOf returns the user a Connect call names in its Basic authorization,
// or the sandbox's default.
func userOf(sb *Sandbox, header http.Header) string {
	if a := header.Get("Authorization"); strings.HasPrefix(a, "Basic ") {
		if raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "Basic ")); err == nil {
			if name, _, _ := strings.Cut(string(raw), ":"); name != "" {
				return name
			}
		}
	}
	return defaultUser(sb)
}

func defaultUser(sb *Sandbox) string {
	if sb.DefaultUser != "" {
		return sb.DefaultUser
	}
	return DefaultUser
}

// homeOf is a user's home, as envd and the runtime's user.ensure make it.
func homeOf(user string) string {
	if user == "root" {
		return "/root"
	}
	return "/home/" + user
}

// resolve turns an E2B path into the absolute path the runtime takes.
func (h *handler) resolve(sb *Sandbox, user, p string) (string, error) {
	if !sb.WholeFS {
		backend := sb.Backend
		if backend == "" {
			backend = "this"
		}
		return "", connect.NewError(connect.InvalidArgument,
			"the "+backend+" backend confines paths to the workspace: the E2B in-sandbox API needs a container, kubernetes or vm template")
	}
	home := h.opts.HomeDir(user)
	switch {
	case p == "" || p == "~":
		return home, nil
	case strings.HasPrefix(p, "~/"):
		return path.Join(home, p[2:]), nil
	case strings.HasPrefix(p, "/"):
		return path.Clean(p), nil
	}
	return path.Join(home, p), nil
}
