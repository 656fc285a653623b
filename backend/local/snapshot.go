package local

// Snapshots and pause of local workspaces.
//
// A snapshot is a copy of the workspace directory, nothing else: the host
// around it (its /tmp, its installed packages, the platform's user's home)
// is not the workspace's and is neither captured nor restored. The copy is
// made with cp -a --reflink=auto (modes, owners where the platform may set
// them, links and times kept; blocks shared where the filesystem can
// reflink, so a snapshot of a large tree on btrfs or XFS costs little) into
// the provider's snapshot store, root_path/.snapshots/<snapshot id>: beside
// the workspaces, so it survives a restart, and under a name that is not a
// workspace id, so the Lister never takes it for an orphaned workspace.
//
// A capture is made under a temporary name (.<snapshot id>.partial-<rand>)
// and renamed once cp has finished, so a crash mid-copy leaves a partial
// directory that no later call takes for the snapshot: the next Snapshot
// with that id removes it and copies afresh.
//
// A pause stops the workspace's runtime, which kills its processes (its
// cgroup, where it has one), and keeps the directory; a resume serves the
// runtime again with the workspace's token and env.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// SnapshotsDir is the directory under a host backend's root_path that holds
// its snapshots. Its name is not a workspace id, so ListDirs skips it.
const SnapshotsDir = ".snapshots"

var (
	_ backend.Snapshotter = (*Backend)(nil)
	_ backend.Pauser      = (*Backend)(nil)
)

// snapshotsNote is what Capabilities says a local snapshot holds.
const snapshotsNote = "filesystem: a copy of the workspace directory only (the host around it is not captured, and a reset or a fork restores the directory only); full: a host backend keeps no process state"

// SnapshotPath returns root/.snapshots/<snapshot id> after checking the id.
func SnapshotPath(root, snapshotID string) (string, error) {
	if err := ValidateID(snapshotID); err != nil {
		return "", errs.E(errs.Invalid, "snapshot %q: invalid snapshot id", snapshotID)
	}
	return filepath.Join(root, SnapshotsDir, snapshotID), nil
}

// snapshotSource returns where ref's capture lives: ref.Ref when it is a
// snapshot store path of that id (a snapshot taken on another local
// provider), else this backend's store.
func (b *Backend) snapshotSource(ref backend.SnapshotRef) (string, error) {
	if ref.Backend != Type {
		return "", errs.E(errs.Invalid, "snapshot %s: is a %s snapshot, not a %s one", ref.SnapshotID, ref.Backend, Type)
	}
	own, err := SnapshotPath(b.root, ref.SnapshotID)
	if err != nil {
		return "", err
	}
	if p := filepath.Clean(ref.Ref); ref.Ref != "" && filepath.IsAbs(p) &&
		filepath.Base(p) == ref.SnapshotID && filepath.Base(filepath.Dir(p)) == SnapshotsDir {
		return p, nil
	}
	return own, nil
}

// Snapshot implements backend.Snapshotter: it copies the workspace
// directory into the snapshot store. A retry finds a finished copy and
// returns it; a partial one is removed and made again.
func (b *Backend) Snapshot(ctx context.Context, h backend.Handle, req backend.SnapshotRequest) (backend.SnapshotRef, error) {
	dir, err := CheckHandle(h, Type, b.root)
	if err != nil {
		return backend.SnapshotRef{}, err
	}
	if req.Mode != backend.SnapshotFilesystem {
		return backend.SnapshotRef{}, errs.E(errs.Invalid, "workspace %s: snapshot: mode %q: the local backend takes %s snapshots only", h.WorkspaceID, req.Mode, backend.SnapshotFilesystem)
	}
	dst, err := SnapshotPath(b.root, req.SnapshotID)
	if err != nil {
		return backend.SnapshotRef{}, err
	}
	unlock := b.locks.Lock(h.WorkspaceID)
	defer unlock()
	bytes, err := CaptureDir(ctx, dir, dst)
	if err != nil {
		return backend.SnapshotRef{}, fmt.Errorf("workspace %s: snapshot %s: %w", h.WorkspaceID, req.SnapshotID, err)
	}
	b.logger.Info("workspace snapshot taken", "workspace_id", h.WorkspaceID, "snapshot_id", req.SnapshotID, "path", dst, "bytes", bytes)
	return backend.SnapshotRef{Backend: Type, SnapshotID: req.SnapshotID, Mode: req.Mode, Ref: dst, Bytes: bytes}, nil
}

// CaptureDir copies dir to dst (cp -a --reflink=auto) through a temporary
// name beside dst, renamed once complete, and returns the capture's size.
// A dst that exists is a finished capture and is kept. Partial copies of
// dst an earlier call left are removed first. A missing dir is NotFound.
func CaptureDir(ctx context.Context, dir, dst string) (int64, error) {
	if _, err := os.Stat(dst); err == nil {
		return TreeBytes(dst), nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return 0, errs.E(errs.NotFound, "directory %s not found", dir)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return 0, err
	}
	removePartials(dst)
	tmp := partialName(dst)
	if err := copyTree(ctx, dir, tmp); err != nil {
		_ = removeTree(tmp)
		return 0, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = removeTree(tmp)
		return 0, err
	}
	return TreeBytes(dst), nil
}

// partialName is a temporary name beside dst for a copy in progress.
func partialName(dst string) string {
	return filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".partial-"+randomSuffix())
}

// removePartials removes what copies of dst cut off by a crash left.
func removePartials(dst string) {
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".partial-*"))
	for _, p := range left {
		_ = removeTree(p)
	}
}

// copyTree copies src to dst, which must not exist, keeping modes, owners
// (where this process may set them), links and times, and sharing blocks
// where the filesystem can reflink.
func copyTree(ctx context.Context, src, dst string) error {
	out, err := exec.CommandContext(ctx, "cp", "-a", "--reflink=auto", "--", src, dst).CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("cp -a %s %s: %w: %s", src, dst, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeTree removes p like RemoveDir does (read-only directories made
// writable first when needed).
func removeTree(p string) error {
	if err := os.RemoveAll(p); err == nil {
		return nil
	}
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(q, 0o700)
		}
		return nil
	})
	return os.RemoveAll(p)
}

// TreeBytes is the apparent size of everything under p (files, links and
// directories), which a capture counts against max_snapshot_bytes.
func TreeBytes(p string) int64 {
	var n int64
	_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// DeleteSnapshot implements backend.Snapshotter: it removes the capture
// and any partial copy of it.
func (b *Backend) DeleteSnapshot(ctx context.Context, ref backend.SnapshotRef) error {
	p, err := b.snapshotSource(ref)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	removePartials(p)
	if err := removeTree(p); err != nil {
		return fmt.Errorf("snapshot %s: delete %s: %w", ref.SnapshotID, p, err)
	}
	b.logger.Info("snapshot deleted", "snapshot_id", ref.SnapshotID, "path", p)
	return nil
}

// restoreDir makes dir a copy of the capture of ref, unless dir exists (a
// retried provision keeps what the workspace has made since). The copy is
// made under a temporary name and renamed, so a crash leaves no directory
// that looks like the workspace's.
func (b *Backend) restoreDir(ctx context.Context, ref backend.SnapshotRef, id, dir string) error {
	if _, err := os.Lstat(dir); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	src, err := b.snapshotSource(ref)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return errs.E(errs.NotFound, "workspace %s: snapshot %s not found (%s)", id, ref.SnapshotID, src)
	}
	if err := EnsureRoot(b.root); err != nil {
		return err
	}
	removePartials(dir)
	tmp := partialName(dir)
	if err := copyTree(ctx, src, tmp); err != nil {
		_ = removeTree(tmp)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = removeTree(tmp)
		return err
	}
	return nil
}

// Pause implements backend.Pauser: it stops serving the runtime, which ends
// its connections and kills its processes (the workspace's cgroup, where
// it has one), and keeps the directory.
func (b *Backend) Pause(ctx context.Context, h backend.Handle, mode string) (backend.Handle, error) {
	dir, err := CheckHandle(h, Type, b.root)
	if err != nil {
		return backend.Handle{}, err
	}
	if mode != "" && mode != backend.SnapshotFilesystem {
		return backend.Handle{}, errs.E(errs.Invalid, "workspace %s: pause: mode %q: the local backend pauses in %s mode only", h.WorkspaceID, mode, backend.SnapshotFilesystem)
	}
	unlock := b.locks.Lock(h.WorkspaceID)
	defer unlock()
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		b.host.Stop(h.WorkspaceID)
		return backend.Handle{}, errs.E(errs.NotFound, "workspace %s: pause: directory %s not found", h.WorkspaceID, dir)
	}
	// The mark first: a restart between the two finds the workspace
	// paused, never served again by an Endpoint.
	if err := MarkPaused(b.root, h.WorkspaceID); err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: pause: %w", h.WorkspaceID, err)
	}
	b.host.Stop(h.WorkspaceID)
	b.logger.Info("workspace paused", "workspace_id", h.WorkspaceID, "workspace_path", dir)
	return h, nil
}

// Resume implements backend.Pauser: it serves the runtime again on the
// directory with token and env. A served workspace is left as it is.
func (b *Backend) Resume(ctx context.Context, h backend.Handle, token string, env backend.EnvFunc) (backend.Handle, error) {
	dir, err := CheckHandle(h, Type, b.root)
	if err != nil {
		return backend.Handle{}, err
	}
	unlock := b.locks.Lock(h.WorkspaceID)
	defer unlock()
	if _, err := ServeDir(ctx, b.host, h.WorkspaceID, dir, token, env); err != nil {
		return backend.Handle{}, err
	}
	if err := ClearPaused(b.root, h.WorkspaceID); err != nil {
		b.host.Stop(h.WorkspaceID)
		return backend.Handle{}, fmt.Errorf("workspace %s: resume: %w", h.WorkspaceID, err)
	}
	b.logger.Info("workspace resumed", "workspace_id", h.WorkspaceID, "workspace_path", dir)
	return backend.Handle{Backend: Type, WorkspaceID: h.WorkspaceID, Path: dir}, nil
}

// PausedDir is the directory under a host backend's root_path that marks
// its paused workspaces (PausedDir/<workspace id>, an empty file), so a
// paused workspace stays paused across a platform restart: Endpoint, which
// otherwise serves a workspace's runtime again after a restart, refuses
// one with a mark until Resume or Provision removes it. Its name is not a
// workspace id, so ListDirs skips it.
const PausedDir = ".paused"

// MarkPaused marks workspace id under root as paused.
func MarkPaused(root, id string) error {
	p, err := WorkspaceDir(filepath.Join(root, PausedDir), id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return os.WriteFile(p, nil, 0o600)
}

// ClearPaused removes workspace id's paused mark; none is not an error.
func ClearPaused(root, id string) error {
	p, err := WorkspaceDir(filepath.Join(root, PausedDir), id)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// CheckNotPaused returns Unavailable when workspace id under root is
// paused.
func CheckNotPaused(root, id string) error {
	p, err := WorkspaceDir(filepath.Join(root, PausedDir), id)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(p); err == nil {
		return errs.E(errs.Unavailable, "workspace %s: paused (resume it first)", id)
	}
	return nil
}
