// Package memory is a backend for tests: its sandboxes are entries in a map,
// each with a scratch directory and a real runtime on a local.Host, so
// workflow and API tests exercise real probes, files and exec without a
// Docker engine or a git repository. Fault knobs make provisions fail and
// runtimes stop answering on demand. It passes the same conformance suite
// as every other backend.
package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/server"
)

// Type is the backend type and template kind of this backend.
const Type = "memory"

// Backend keeps its sandboxes in a map. It is safe for concurrent use.
type Backend struct {
	host    *local.Host
	root    string
	rootErr error

	mu            sync.Mutex
	sandboxes     map[string]*sandbox
	failProvision error
	failDestroy   error
	failTeardown  error
}

type sandbox struct {
	dir     string
	url     string
	token   string
	env     map[string]string
	created time.Time
	killed  bool
	// down is set by Teardown: the runtime is gone, the files stay, and
	// the next Provision serves a new runtime on them.
	down      bool
	teardowns int
	// paused is set by Snapshotting's Pause: the runtime is stopped on
	// purpose and Endpoint refuses until Resume.
	paused bool
}

var (
	_ backend.Backend = (*Backend)(nil)
	_ backend.Keeper  = (*Backend)(nil)
	_ backend.Lister  = (*Backend)(nil)
)

// New returns a memory backend whose scratch directories live under root
// (created if missing; a new temporary directory when empty) and whose
// runtimes host serves.
func New(host *local.Host, root string) *Backend {
	b := &Backend{host: host, root: root, sandboxes: map[string]*sandbox{}}
	if root == "" {
		b.root, b.rootErr = os.MkdirTemp("", "primer-memory-")
	} else {
		b.rootErr = os.MkdirAll(root, 0o700)
	}
	return b
}

// Factory returns a factory that accepts {"kind": "memory"} (or an empty
// config) and always returns b, so a test that wires a registry keeps its
// hands on the fault knobs.
func (b *Backend) Factory() backend.Factory {
	return func(config json.RawMessage) (backend.Backend, error) {
		if len(config) == 0 || string(config) == "null" {
			return b, nil
		}
		var c struct {
			Kind string `json:"kind,omitempty"`
		}
		if err := backend.DecodeStrict(config, "spec.config", &c); err != nil {
			return nil, err
		}
		if err := backend.CheckKind("spec.config", c.Kind, Type, true); err != nil {
			return nil, err
		}
		return b, nil
	}
}

// FailProvision makes every following Provision fail with err, until it is
// called again with nil.
func (b *Backend) FailProvision(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failProvision = err
}

// FailDestroy makes every following Destroy fail with err, until it is
// called again with nil.
func (b *Backend) FailDestroy(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failDestroy = err
}

// FailTeardown makes every following Teardown fail with err, until it is
// called again with nil.
func (b *Backend) FailTeardown(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failTeardown = err
}

// Teardowns returns how many times workspace id's sandbox was torn down
// (stale recovery replaced it), 0 for an unknown id.
func (b *Backend) Teardowns(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.sandboxes[id]; s != nil {
		return s.teardowns
	}
	return 0
}

// Kill makes workspace id's runtime stop answering, as if its sandbox
// crashed: the runtime is closed (its connections and processes end) and
// Endpoint keeps returning its old URL, so probes miss. Its files stay.
func (b *Backend) Kill(id string) {
	b.mu.Lock()
	s := b.sandboxes[id]
	if s != nil {
		s.killed = true
	}
	b.mu.Unlock()
	if s != nil {
		b.host.Stop(id)
	}
}

// Revive serves a killed runtime again on the same URL, with the token and
// environment it was provisioned with.
func (b *Backend) Revive(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sandboxes[id]
	if s == nil {
		return errs.E(errs.NotFound, "workspace %s: not provisioned", id)
	}
	if _, err := b.host.Serve(context.Background(), id, server.Config{Root: s.dir, Token: s.token, Env: s.env}); err != nil {
		return fmt.Errorf("workspace %s: revive: %w", id, err)
	}
	s.killed = false
	return nil
}

// Provisioned reports whether workspace id has a sandbox.
func (b *Backend) Provisioned(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sandboxes[id] != nil
}

// Count returns how many sandboxes exist.
func (b *Backend) Count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sandboxes)
}

// Root returns the directory the scratch directories live in.
func (b *Backend) Root() string { return b.root }

// Capabilities implements backend.Backend.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{Isolation: "none", PersistentAcrossRestart: false,
		Reset: backend.ResetScopeWorkspace, ResetNote: "workspace: a reset empties the in-memory workspace; there is nothing else"}
}

// ValidateTemplate implements backend.Backend: {"kind": "memory"} plus the
// common fields.
func (b *Backend) ValidateTemplate(tmpl json.RawMessage) error {
	var t struct{ backend.Common }
	if err := backend.DecodeStrict(tmpl, "spec.backend", &t); err != nil {
		return err
	}
	if err := backend.CheckKind("spec.backend", t.Kind, Type, false); err != nil {
		return err
	}
	return t.Common.Validate("spec.backend")
}

// Provision implements backend.Backend. An empty template is accepted so
// tests need not write one.
func (b *Backend) Provision(ctx context.Context, req backend.ProvisionRequest) (backend.Handle, error) {
	id := req.WorkspaceID
	if b.rootErr != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", id, b.rootErr)
	}
	dir, err := local.WorkspaceDir(b.root, id)
	if err != nil {
		return backend.Handle{}, err
	}
	if len(req.Template) > 0 {
		if err := b.ValidateTemplate(req.Template); err != nil {
			return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", id, err)
		}
	}
	// The lock is held across the host call so Provision, Kill and Destroy
	// of one id never interleave; the host call is cheap.
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failProvision != nil {
		return backend.Handle{}, b.failProvision
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", id, err)
	}
	s := b.sandboxes[id]
	if s == nil {
		s = &sandbox{dir: dir, created: time.Now()}
	}
	s.token, s.env = req.Token, maps.Clone(req.Env)
	if s.down || s.paused {
		// A replacement after Teardown, or of a paused sandbox: a new
		// runtime on the kept files.
		s.down, s.killed, s.paused = false, false, false
	}
	if !s.killed {
		url, err := b.host.Serve(ctx, id, server.Config{Root: dir, Token: s.token, Env: s.env})
		if err != nil {
			return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", id, err)
		}
		s.url = url
	}
	b.sandboxes[id] = s
	return backend.Handle{Backend: Type, WorkspaceID: id, Path: dir}, nil
}

// Endpoint implements backend.Backend. A killed sandbox still has an
// endpoint; it just does not answer there. A torn down one has none until
// it is provisioned again.
func (b *Backend) Endpoint(ctx context.Context, h backend.Handle, token string) (backend.Endpoint, error) {
	if _, err := local.CheckHandle(h, Type, b.root); err != nil {
		return backend.Endpoint{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sandboxes[h.WorkspaceID]
	if s == nil {
		return backend.Endpoint{}, errs.E(errs.NotFound, "workspace %s: sandbox not found", h.WorkspaceID)
	}
	if s.down {
		return backend.Endpoint{}, errs.E(errs.NotFound, "workspace %s: sandbox torn down", h.WorkspaceID)
	}
	if s.paused {
		return backend.Endpoint{}, errs.E(errs.Unavailable, "workspace %s: sandbox paused", h.WorkspaceID)
	}
	if s.killed {
		return backend.Endpoint{URL: s.url}, nil
	}
	s.token = token
	url, err := b.host.Serve(ctx, h.WorkspaceID, server.Config{Root: s.dir, Token: token, Env: s.env})
	if err != nil {
		return backend.Endpoint{}, fmt.Errorf("workspace %s: endpoint: %w", h.WorkspaceID, err)
	}
	s.url = url
	return backend.Endpoint{URL: url}, nil
}

// Destroy implements backend.Backend.
func (b *Backend) Destroy(ctx context.Context, h backend.Handle) error {
	if _, err := local.CheckHandle(h, Type, b.root); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failDestroy != nil {
		return b.failDestroy
	}
	b.host.Stop(h.WorkspaceID)
	if err := local.RemoveDir(ctx, b.root, h.WorkspaceID); err != nil {
		return err
	}
	delete(b.sandboxes, h.WorkspaceID)
	return nil
}

// Teardown implements backend.Keeper: the runtime stops (its connections and
// processes end) and the scratch directory stays for the next Provision.
func (b *Backend) Teardown(ctx context.Context, h backend.Handle) error {
	if _, err := local.CheckHandle(h, Type, b.root); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failTeardown != nil {
		return b.failTeardown
	}
	b.host.Stop(h.WorkspaceID)
	if s := b.sandboxes[h.WorkspaceID]; s != nil && !s.down {
		s.down = true
		s.teardowns++
	}
	return nil
}

// List implements backend.Lister: every sandbox in the map, torn down ones
// included.
func (b *Backend) List(ctx context.Context) ([]backend.Listed, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]backend.Listed, 0, len(b.sandboxes))
	for id, s := range b.sandboxes {
		out = append(out, backend.Listed{WorkspaceID: id, Created: s.created, Objects: []string{"directory " + s.dir}})
	}
	slices.SortFunc(out, func(a, b backend.Listed) int { return strings.Compare(a.WorkspaceID, b.WorkspaceID) })
	return out, nil
}
