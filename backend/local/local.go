// Package local is the backend whose workspaces are directories on the
// platform's host: a workspace is root_path/<workspace id>, and its runtime
// runs inside the platform process, rooted at that directory. Nothing
// isolates it from the host: a command run in a local workspace can read and
// change anything the platform's user can.
//
// The runtimes of all host-process workspaces (local, worktree, memory) are
// served by one Host: one loopback HTTP listener that routes /w/{id} to each
// workspace's runtime server. A runtime is a handful of goroutines and a map
// entry, not a process, so one platform process holding 1,000 local
// workspaces costs 1,000 small servers behind one port rather than 1,000
// processes, 1,000 ports and 1,000 process probes.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/internal/keylock"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/server"
	"github.com/primerhq/primer/wire"
)

// Type is the backend type and template kind of this backend.
const Type = wire.BackendLocal

// ValidateID returns an Invalid error unless id is safe to use as a
// directory name under a root path (backend.CheckID).
func ValidateID(id string) error { return backend.CheckID(id) }

// WorkspaceDir returns root/id after checking id; it is the only directory a
// host backend ever creates or removes for a workspace.
func WorkspaceDir(root, id string) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	return filepath.Join(root, id), nil
}

// CheckHandle checks that h belongs to a backend of type kind rooted at root
// and returns the workspace directory. A handle whose Path is anything but
// root/<id> is refused, so a forged or stale handle can never make a backend
// serve or remove another directory.
func CheckHandle(h backend.Handle, kind, root string) (string, error) {
	if err := h.Check(kind, nil); err != nil {
		return "", err
	}
	dir, err := WorkspaceDir(root, h.WorkspaceID)
	if err != nil {
		return "", err
	}
	if h.Path != "" && filepath.Clean(h.Path) != dir {
		return "", errs.E(errs.Invalid, "workspace %s: handle path %q is not %q under this provider's root_path", h.WorkspaceID, h.Path, dir)
	}
	return dir, nil
}

// ProviderConfig is the provider document shared by the host backends:
// {"kind": "local", "root_path": "/abs/path"}.
type ProviderConfig struct {
	Kind     string `json:"kind,omitempty" access:"any"`
	RootPath string `json:"root_path" access:"admin:path"`
}

// ParseProviderConfig decodes and checks a host backend's provider config
// for backend type kind. It has no side effects: a root_path that does not
// exist yet is valid and is created (0700) by the first provision (see
// EnsureRoot), so validating a provider document never touches the disk.
func ParseProviderConfig(config json.RawMessage, kind string) (ProviderConfig, error) {
	var c ProviderConfig
	if err := backend.OpenProviderConfig(config, &c, &c.Kind, kind); err != nil {
		return c, err
	}
	var err error
	if c.RootPath, err = backend.AbsPath("spec.config.root_path", c.RootPath); err != nil {
		return c, err
	}
	if fi, err := os.Stat(c.RootPath); err == nil && !fi.IsDir() {
		return c, errs.Field("spec.config.root_path", "spec.config.root_path: %q is not a directory", c.RootPath)
	}
	return c, nil
}

// EnsureRoot creates root (0700, with its parents) if it is missing: the
// first provision on a provider makes its root_path.
func EnsureRoot(root string) error {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("create root_path %s: %w", root, err)
	}
	return nil
}

// Template is the local backend's template document: only the common part.
type Template struct {
	backend.Common
}

// ParseTemplate decodes and checks a local template backend document.
func ParseTemplate(doc json.RawMessage) (Template, error) {
	var t Template
	if err := backend.DecodeStrict(doc, "spec.backend", &t); err != nil {
		return t, err
	}
	return t, t.Common.Check(Type)
}

// Backend makes workspaces as directories under a root path.
type Backend struct {
	root   string
	host   *Host
	logger *slog.Logger
	locks  keylock.Map // workspace id
}

var (
	_ backend.Backend     = (*Backend)(nil)
	_ backend.RuntimeHost = (*Backend)(nil)
	_ backend.Keeper      = (*Backend)(nil)
	_ backend.Lister      = (*Backend)(nil)
)

// New returns a local backend whose workspaces live under root (absolute,
// created if missing) and whose runtimes host serves.
func New(host *Host, root string, logger *slog.Logger) (*Backend, error) {
	raw, err := json.Marshal(ProviderConfig{RootPath: root})
	if err != nil {
		return nil, err
	}
	c, err := ParseProviderConfig(raw, Type)
	if err != nil {
		return nil, err
	}
	if err := EnsureRoot(c.RootPath); err != nil {
		return nil, err
	}
	return newBackend(host, c.RootPath, logger), nil
}

// newBackend builds a backend on a root ParseProviderConfig has checked.
func newBackend(host *Host, root string, logger *slog.Logger) *Backend {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Backend{root: root, host: host, logger: logger.With("backend", Type)}
}

// Factory builds local backends from provider configs
// ({"kind": "local", "root_path": "/abs/path"}); they share host.
func Factory(host *Host, logger *slog.Logger) backend.Factory {
	return func(config json.RawMessage) (backend.Backend, error) {
		c, err := ParseProviderConfig(config, Type)
		if err != nil {
			return nil, err
		}
		return newBackend(host, c.RootPath, logger), nil
	}
}

// Root returns the directory the backend's workspaces live in.
func (b *Backend) Root() string { return b.root }

// Capabilities implements backend.Backend.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		Isolation: "none", PersistentAcrossRestart: true,
		Snapshots: []string{backend.SnapshotFilesystem}, SnapshotsNote: snapshotsNote, Pause: true,
		Reset: backend.ResetScopeWorkspace, ResetNote: backend.HostResetNote,
	}
}

// ValidateTemplate implements backend.Backend.
func (b *Backend) ValidateTemplate(tmpl json.RawMessage) error {
	_, err := ParseTemplate(tmpl)
	return err
}

// Provision implements backend.Backend: it creates root/<id> (0700), or
// with req.Snapshot a copy of the capture, and serves its runtime. A retry
// finds the directory and the runtime in place (and does not copy the
// snapshot over what the workspace has made since).
func (b *Backend) Provision(ctx context.Context, req backend.ProvisionRequest) (backend.Handle, error) {
	dir, err := WorkspaceDir(b.root, req.WorkspaceID)
	if err != nil {
		return backend.Handle{}, err
	}
	if len(req.Template) > 0 {
		if _, err := ParseTemplate(req.Template); err != nil {
			return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", req.WorkspaceID, err)
		}
	}
	unlock := b.locks.Lock(req.WorkspaceID)
	defer unlock()

	if req.Snapshot != nil {
		if err := b.restoreDir(ctx, *req.Snapshot, req.WorkspaceID, dir); err != nil {
			return backend.Handle{}, fmt.Errorf("workspace %s: provision from snapshot %s: %w", req.WorkspaceID, req.Snapshot.SnapshotID, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", req.WorkspaceID, err)
	}
	// A provision of a paused workspace (a replacement) serves it again.
	if err := ClearPaused(b.root, req.WorkspaceID); err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", req.WorkspaceID, err)
	}
	if _, err := b.host.Serve(ctx, req.WorkspaceID, server.Config{Root: dir, Token: req.Token, Env: req.Env}); err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", req.WorkspaceID, err)
	}
	b.logger.Info("workspace provisioned", "workspace_id", req.WorkspaceID, "workspace_path", dir)
	return backend.Handle{Backend: Type, WorkspaceID: req.WorkspaceID, Path: dir}, nil
}

// Endpoint implements backend.Backend. After a platform restart the
// directory is still there but nothing serves it: serving it again here
// with the stored token is what makes local workspaces survive restarts.
// The base environment given at provision time is not stored (it may hold
// secrets) and is not restored by a re-serve.
func (b *Backend) Endpoint(ctx context.Context, h backend.Handle, token string) (backend.Endpoint, error) {
	dir, err := CheckHandle(h, Type, b.root)
	if err != nil {
		return backend.Endpoint{}, err
	}
	unlock := b.locks.Lock(h.WorkspaceID)
	defer unlock()
	if err := CheckNotPaused(b.root, h.WorkspaceID); err != nil {
		return backend.Endpoint{}, err
	}
	return ServeDir(ctx, b.host, h.WorkspaceID, dir, token, nil)
}

// ServeRuntime is Endpoint that serves the runtime again with env after a
// platform restart (backend.RuntimeHost).
func (b *Backend) ServeRuntime(ctx context.Context, h backend.Handle, token string, env backend.EnvFunc) (backend.Endpoint, error) {
	dir, err := CheckHandle(h, Type, b.root)
	if err != nil {
		return backend.Endpoint{}, err
	}
	unlock := b.locks.Lock(h.WorkspaceID)
	defer unlock()
	if err := CheckNotPaused(b.root, h.WorkspaceID); err != nil {
		return backend.Endpoint{}, err
	}
	return ServeDir(ctx, b.host, h.WorkspaceID, dir, token, env)
}

// ServeDir serves the runtime of workspace id rooted at dir and returns its
// endpoint, or NotFound when dir is gone. The host backends share it for
// Endpoint.
func ServeDir(ctx context.Context, host *Host, id, dir, token string, env backend.EnvFunc) (backend.Endpoint, error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		host.Stop(id)
		return backend.Endpoint{}, errs.E(errs.NotFound, "workspace %s: directory %s not found", id, dir)
	}
	if err != nil {
		return backend.Endpoint{}, fmt.Errorf("workspace %s: endpoint: %w", id, err)
	}
	if !fi.IsDir() {
		return backend.Endpoint{}, errs.E(errs.NotFound, "workspace %s: %s is not a directory", id, dir)
	}
	if url, ok := host.Serving(id, token, dir); ok {
		return backend.Endpoint{URL: url}, nil
	}
	var vars map[string]string
	if env != nil {
		if vars, err = env(ctx); err != nil {
			return backend.Endpoint{}, fmt.Errorf("workspace %s: endpoint: env: %w", id, err)
		}
	}
	url, err := host.Serve(ctx, id, server.Config{Root: dir, Token: token, Env: vars})
	if err != nil {
		return backend.Endpoint{}, fmt.Errorf("workspace %s: endpoint: %w", id, err)
	}
	return backend.Endpoint{URL: url}, nil
}

// Destroy implements backend.Backend: it stops the runtime (killing its
// processes) and removes root/<id>. It never removes anything else.
func (b *Backend) Destroy(ctx context.Context, h backend.Handle) error {
	dir, err := CheckHandle(h, Type, b.root)
	if err != nil {
		return err
	}
	unlock := b.locks.Lock(h.WorkspaceID)
	defer unlock()
	b.host.Stop(h.WorkspaceID)
	if err := RemoveDir(ctx, b.root, h.WorkspaceID); err != nil {
		return err
	}
	if err := ClearPaused(b.root, h.WorkspaceID); err != nil {
		return fmt.Errorf("workspace %s: destroy: %w", h.WorkspaceID, err)
	}
	b.logger.Info("workspace destroyed", "workspace_id", h.WorkspaceID, "workspace_path", dir)
	return nil
}

// Teardown implements backend.Keeper: it stops serving the runtime, which
// ends its connections and kills its processes, and keeps root/<id> for the
// next Provision. Note that Endpoint serves a torn down workspace again
// (that is how local workspaces survive a platform restart), with whatever
// token it is given.
func (b *Backend) Teardown(ctx context.Context, h backend.Handle) error {
	dir, err := CheckHandle(h, Type, b.root)
	if err != nil {
		return err
	}
	unlock := b.locks.Lock(h.WorkspaceID)
	defer unlock()
	b.host.Stop(h.WorkspaceID)
	b.logger.Info("workspace torn down", "workspace_id", h.WorkspaceID, "workspace_path", dir)
	return nil
}

// List implements backend.Lister: the workspace directories under root.
func (b *Backend) List(ctx context.Context) ([]backend.Listed, error) {
	return ListDirs(ctx, b.root)
}

// ListDirs returns the workspace directories under root: directories (not
// symlinks, not files) named like a workspace id the server mints
// (backend.IsWorkspaceID). Created is the directory's modification time;
// filesystems do not all keep a creation time, and a later time only makes
// the reconciler wait longer.
func ListDirs(ctx context.Context, root string) ([]backend.Listed, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no provision has made root yet: nothing to list
	}
	if err != nil {
		return nil, fmt.Errorf("list workspaces in %s: %w", root, err)
	}
	var out []backend.Listed
	for _, e := range entries {
		if !e.IsDir() || !backend.IsWorkspaceID(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since ReadDir
		}
		if err != nil {
			return nil, fmt.Errorf("list workspaces in %s: %w", root, err)
		}
		dir := filepath.Join(root, e.Name())
		out = append(out, backend.Listed{WorkspaceID: e.Name(), Created: fi.ModTime(), Objects: []string{"directory " + dir}})
	}
	return out, nil
}

// RemoveDir removes root/<id> and everything in it; a missing directory is
// not an error. The path is rebuilt from root and a checked id, never taken
// from a handle.
func RemoveDir(ctx context.Context, root, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir, err := WorkspaceDir(root, id)
	if err != nil {
		return err
	}
	if dir == root || filepath.Dir(dir) != root {
		return errs.E(errs.Invalid, "workspace %s: refusing to remove %s", id, dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		// A command may have left read-only directories; make them writable
		// and try once more before giving up.
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("workspace %s: remove %s: %w", id, dir, err)
		}
	}
	return nil
}
