package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/server"
)

// Snapshotting is the memory backend with snapshots and pause, for tests
// of the snapshot, fork and pause paths above the backend (workflow,
// activities, API) without an engine. It is a type of its own, not a knob,
// because a backend's capabilities are the interfaces it implements: the
// plain Backend stays one that cannot snapshot or pause, to test the
// refusals.
//
// A snapshot is a copy of the sandbox's directory (cp -a: modes, owners
// and links kept) under the root's .snapshots directory, made under a
// temporary name and renamed, so a capture is complete or absent. A pause
// stops the runtime and keeps the directory; a resume serves it again with
// the token and env it was provisioned with.
type Snapshotting struct {
	*Backend
}

var (
	_ backend.Backend     = Snapshotting{}
	_ backend.Snapshotter = Snapshotting{}
	_ backend.Pauser      = Snapshotting{}
)

// WithSnapshots returns b with snapshots and pause; both share b's
// sandboxes and fault knobs.
func (b *Backend) WithSnapshots() Snapshotting { return Snapshotting{b} }

// Factory returns a factory that accepts what Backend's accepts and always
// returns s.
func (s Snapshotting) Factory() backend.Factory {
	f := s.Backend.Factory()
	return func(config json.RawMessage) (backend.Backend, error) {
		if _, err := f(config); err != nil {
			return nil, err
		}
		return s, nil
	}
}

// Capabilities implements backend.Backend.
func (s Snapshotting) Capabilities() backend.Capabilities {
	c := s.Backend.Capabilities()
	c.Snapshots = []string{backend.SnapshotFilesystem}
	c.SnapshotsNote = "full: the memory backend keeps no process state"
	c.Pause = true
	return c
}

// Paused reports whether workspace id's sandbox is paused.
func (b *Backend) Paused(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	sb := b.sandboxes[id]
	return sb != nil && sb.paused
}

// snapshotDir is where captures live.
func (b *Backend) snapshotDir() string { return filepath.Join(b.root, ".snapshots") }

// snapshotPath is where snapshot id's capture lives.
func (b *Backend) snapshotPath(id string) (string, error) {
	if err := local.ValidateID(id); err != nil {
		return "", err
	}
	return filepath.Join(b.snapshotDir(), id), nil
}

// Snapshot implements backend.Snapshotter.
func (s Snapshotting) Snapshot(ctx context.Context, h backend.Handle, req backend.SnapshotRequest) (backend.SnapshotRef, error) {
	dir, err := local.CheckHandle(h, Type, s.root)
	if err != nil {
		return backend.SnapshotRef{}, err
	}
	if req.Mode != backend.SnapshotFilesystem {
		return backend.SnapshotRef{}, errs.E(errs.Invalid, "workspace %s: snapshot: the memory backend takes %s snapshots only", h.WorkspaceID, backend.SnapshotFilesystem)
	}
	dst, err := s.snapshotPath(req.SnapshotID)
	if err != nil {
		return backend.SnapshotRef{}, err
	}
	ref := backend.SnapshotRef{Backend: Type, SnapshotID: req.SnapshotID, Mode: req.Mode, Ref: dst}
	if _, err := os.Stat(dst); err == nil {
		// Taken by an earlier try.
		ref.Bytes = size(dst)
		return ref, nil
	}
	if _, err := os.Stat(dir); err != nil {
		return backend.SnapshotRef{}, errs.E(errs.NotFound, "workspace %s: snapshot: sandbox not found", h.WorkspaceID)
	}
	tmp := dst + ".partial"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(s.snapshotDir(), 0o700); err != nil {
		return backend.SnapshotRef{}, fmt.Errorf("workspace %s: snapshot: %w", h.WorkspaceID, err)
	}
	if err := copyDir(ctx, dir, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return backend.SnapshotRef{}, fmt.Errorf("workspace %s: snapshot %s: %w", h.WorkspaceID, req.SnapshotID, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.RemoveAll(tmp)
		return backend.SnapshotRef{}, fmt.Errorf("workspace %s: snapshot %s: %w", h.WorkspaceID, req.SnapshotID, err)
	}
	ref.Bytes = size(dst)
	return ref, nil
}

// DeleteSnapshot implements backend.Snapshotter.
func (s Snapshotting) DeleteSnapshot(ctx context.Context, ref backend.SnapshotRef) error {
	dst, err := s.snapshotPath(ref.SnapshotID)
	if err != nil {
		return err
	}
	if ref.Ref != "" && filepath.Clean(ref.Ref) != dst {
		return errs.E(errs.Invalid, "snapshot %s: ref %q is not %q", ref.SnapshotID, ref.Ref, dst)
	}
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("snapshot %s: delete: %w", ref.SnapshotID, err)
	}
	return nil
}

// Provision implements backend.Backend: from a snapshot, a new sandbox's
// directory starts as a copy of the capture. A sandbox that exists already
// (a retried provisioning) keeps its files.
func (s Snapshotting) Provision(ctx context.Context, req backend.ProvisionRequest) (backend.Handle, error) {
	if req.Snapshot != nil && !s.Provisioned(req.WorkspaceID) {
		src, err := s.snapshotPath(req.Snapshot.SnapshotID)
		if err != nil {
			return backend.Handle{}, err
		}
		if _, err := os.Stat(src); err != nil {
			return backend.Handle{}, errs.E(errs.NotFound, "workspace %s: provision: snapshot %s not found", req.WorkspaceID, req.Snapshot.SnapshotID)
		}
		dir, err := local.WorkspaceDir(s.root, req.WorkspaceID)
		if err != nil {
			return backend.Handle{}, err
		}
		_ = os.RemoveAll(dir)
		if err := copyDir(ctx, src, dir); err != nil {
			return backend.Handle{}, fmt.Errorf("workspace %s: provision from snapshot %s: %w", req.WorkspaceID, req.Snapshot.SnapshotID, err)
		}
	}
	return s.Backend.Provision(ctx, req)
}

// Pause implements backend.Pauser: the runtime stops (its processes end),
// the directory stays, and Endpoint refuses until Resume.
func (s Snapshotting) Pause(ctx context.Context, h backend.Handle, mode string) (backend.Handle, error) {
	if _, err := local.CheckHandle(h, Type, s.root); err != nil {
		return backend.Handle{}, err
	}
	if mode != "" && mode != backend.SnapshotFilesystem {
		return backend.Handle{}, errs.E(errs.Invalid, "workspace %s: pause: the memory backend pauses in %s mode only", h.WorkspaceID, backend.SnapshotFilesystem)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sandboxes[h.WorkspaceID]
	if sb == nil {
		return backend.Handle{}, errs.E(errs.NotFound, "workspace %s: pause: sandbox not found", h.WorkspaceID)
	}
	s.host.Stop(h.WorkspaceID)
	sb.paused = true
	return h, nil
}

// Resume implements backend.Pauser: the runtime is served again on the
// directory with token and the env it was provisioned with.
func (s Snapshotting) Resume(ctx context.Context, h backend.Handle, token string, env backend.EnvFunc) (backend.Handle, error) {
	dir, err := local.CheckHandle(h, Type, s.root)
	if err != nil {
		return backend.Handle{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sandboxes[h.WorkspaceID]
	if sb == nil {
		return backend.Handle{}, errs.E(errs.NotFound, "workspace %s: resume: sandbox not found", h.WorkspaceID)
	}
	if !sb.paused {
		return h, nil
	}
	sb.token = token
	url, err := s.host.Serve(ctx, h.WorkspaceID, server.Config{Root: dir, Token: token, Env: sb.env})
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: resume: %w", h.WorkspaceID, err)
	}
	sb.url, sb.paused, sb.killed = url, false, false
	return h, nil
}

// copyDir copies src to dst (which must not exist) with cp -a, which keeps
// modes, owners, times and symbolic links.
func copyDir(ctx context.Context, src, dst string) error {
	out, err := exec.CommandContext(ctx, "cp", "-a", src, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cp -a: %w: %s", err, out)
	}
	return nil
}

// size sums the sizes of the regular files under dir.
func size(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
