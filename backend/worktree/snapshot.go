package worktree

// Snapshots and pause of worktree workspaces.
//
// Snapshot commits the worktree as it is, without touching it: the
// worktree's own index is copied to a temporary index file (so git can
// reuse its stat cache), `git add -A` stages every tracked and untracked
// file that is not ignored into that copy, and `git commit-tree` makes a
// commit of it whose parent is the workspace's HEAD. Neither the
// workspace's branch nor its index moves. The commit's message records what
// git cannot keep: the modes (beyond git's 644/755) and the owners (other
// than the platform's) of the files and directories in it, restored after
// the checkout of a workspace made from it. The ref
// refs/primer/snapshots/<snapshot id> is written last and atomically by git
// update-ref: a crash before it leaves an unreachable commit that git's
// gc removes, never a ref that names a partial capture.
//
// A pause stops the runtime, which kills the workspace's processes (its
// cgroup, where it has one), and keeps the worktree; a resume serves it
// again.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/errs"
)

// SnapshotRefPrefix starts the hidden refs that hold snapshots. They are
// not branches or tags, so `git branch`, `git log --all` aside, users do not
// see them, and a clone does not fetch them.
const SnapshotRefPrefix = "refs/primer/snapshots/"

// snapshotsNote is what Capabilities says a worktree snapshot holds.
const snapshotsNote = "filesystem: a commit of the worktree's tracked and untracked files (not ignored ones, not empty directories) on a hidden ref, with their modes and owners; the host around it is not captured, and a reset or a fork restores the worktree only; full: a host backend keeps no process state"

// modesTrailer starts the line of a snapshot commit's message that holds
// its manifest of modes and owners.
const modesTrailer = "Primer-Modes: "

// attr is one manifest entry: a path in the tree, its permission bits and
// owner.
type attr struct {
	Path string `json:"p"`
	Mode uint32 `json:"m"`
	UID  int    `json:"u"`
	GID  int    `json:"g"`
}

var (
	_ backend.Snapshotter = (*Backend)(nil)
	_ backend.Pauser      = (*Backend)(nil)
)

// SnapshotRef returns the ref of snapshot id after checking the id.
func SnapshotRef(snapshotID string) (string, error) {
	if err := local.ValidateID(snapshotID); err != nil {
		return "", errs.E(errs.Invalid, "snapshot %q: invalid snapshot id", snapshotID)
	}
	return SnapshotRefPrefix + snapshotID, nil
}

// committer is who snapshot commits are by: git refuses a commit without
// an identity, and the platform's user may have none.
var committer = []string{
	"GIT_AUTHOR_NAME=Primer", "GIT_AUTHOR_EMAIL=primer@localhost",
	"GIT_COMMITTER_NAME=Primer", "GIT_COMMITTER_EMAIL=primer@localhost",
}

// Snapshot implements backend.Snapshotter: it records the worktree's files
// in a commit on refs/primer/snapshots/<snapshot id>. A retry finds the ref
// and returns it.
func (b *Backend) Snapshot(ctx context.Context, h backend.Handle, req backend.SnapshotRequest) (backend.SnapshotRef, error) {
	dir, err := local.CheckHandle(h, Type, b.root)
	if err != nil {
		return backend.SnapshotRef{}, err
	}
	id := h.WorkspaceID
	if req.Mode != backend.SnapshotFilesystem {
		return backend.SnapshotRef{}, errs.E(errs.Invalid, "workspace %s: snapshot: mode %q: the worktree backend takes %s snapshots only", id, req.Mode, backend.SnapshotFilesystem)
	}
	ref, err := SnapshotRef(req.SnapshotID)
	if err != nil {
		return backend.SnapshotRef{}, err
	}
	unlock := b.ids.Lock(id)
	defer unlock()
	repo := h.Attrs["repository"]
	if repo == "" || !filepath.IsAbs(repo) {
		repo = repositoryOf(dir)
	}
	if repo == "" {
		return backend.SnapshotRef{}, errs.E(errs.NotFound, "workspace %s: snapshot: %s is not a worktree", id, dir)
	}
	out := backend.SnapshotRef{Backend: Type, SnapshotID: req.SnapshotID, Mode: req.Mode, Attrs: map[string]string{"repository": repo, "ref": ref}}
	if sha, err := git(ctx, checkTimeout, repo, "rev-parse", "--verify", "--quiet", ref+"^{commit}"); err == nil {
		out.Ref = strings.TrimSpace(string(sha))
		out.Bytes = treeBytes(ctx, repo, out.Ref)
		return out, nil // taken by an earlier try
	}
	sha, err := b.commitWorktree(ctx, repo, dir, req.SnapshotID, id)
	if err != nil {
		return backend.SnapshotRef{}, fmt.Errorf("workspace %s: snapshot %s: %w", id, req.SnapshotID, err)
	}
	unlockRepo := b.repos.Lock(repo)
	// Create only (the zero old value): a concurrent try that wrote it
	// first wins, and its commit is as good as this one.
	_, err = git(ctx, gitTimeout, repo, "update-ref", "-m", "primer snapshot", ref, sha, strings.Repeat("0", len(sha)))
	unlockRepo()
	if err != nil {
		cur, rerr := git(ctx, checkTimeout, repo, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
		if rerr != nil {
			return backend.SnapshotRef{}, fmt.Errorf("workspace %s: snapshot %s: %w", id, req.SnapshotID, err)
		}
		sha = strings.TrimSpace(string(cur))
	}
	out.Ref = sha
	out.Bytes = treeBytes(ctx, repo, sha)
	b.logger.Info("workspace snapshot taken", "workspace_id", id, "snapshot_id", req.SnapshotID, "repository", repo, "commit", sha, "bytes", out.Bytes)
	return out, nil
}

// commitWorktree makes the snapshot commit of the worktree at dir and
// returns its id. It writes objects only: no ref, no index of the
// worktree's.
func (b *Backend) commitWorktree(ctx context.Context, repo, dir, snapshotID, id string) (string, error) {
	tmp, err := os.MkdirTemp("", "primer-snapshot-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	index := filepath.Join(tmp, "index")
	// Start from a copy of the worktree's index: git then rehashes only the
	// files whose stat changed.
	if p, err := git(ctx, checkTimeout, dir, "rev-parse", "--path-format=absolute", "--git-path", "index"); err == nil {
		if raw, err := os.ReadFile(strings.TrimSpace(string(p))); err == nil {
			if err := os.WriteFile(index, raw, 0o600); err != nil {
				return "", err
			}
		}
	}
	env := append([]string{"GIT_INDEX_FILE=" + index}, committer...)
	if _, err := gitEnv(ctx, addTimeout, dir, env, "add", "-A", "--", "."); err != nil {
		return "", err
	}
	tree, err := gitEnv(ctx, gitTimeout, dir, env, "write-tree")
	if err != nil {
		return "", err
	}
	list, err := gitEnv(ctx, gitTimeout, dir, env, "ls-files", "-z")
	if err != nil {
		return "", err
	}
	manifest, err := json.Marshal(attrsOf(dir, list))
	if err != nil {
		return "", err
	}
	msg := filepath.Join(tmp, "message")
	text := fmt.Sprintf("primer snapshot %s of workspace %s\n\n%s%s\n", snapshotID, id, modesTrailer, manifest)
	if err := os.WriteFile(msg, []byte(text), 0o600); err != nil {
		return "", err
	}
	args := []string{"commit-tree", strings.TrimSpace(string(tree)), "-F", msg}
	if head, err := git(ctx, checkTimeout, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err == nil {
		args = append(args, "-p", strings.TrimSpace(string(head)))
	}
	sha, err := gitEnv(ctx, gitTimeout, dir, env, args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(sha)), nil
}

// attrsOf lists the modes and owners of the files in list (NUL-separated
// paths relative to dir) and of the directories holding them that a
// checkout would not reproduce: permission bits other than 0644 and 0755,
// an owner other than the platform's user. Links are skipped (their mode
// means nothing, and git keeps them).
func attrsOf(dir string, list []byte) []attr {
	uid, gid := os.Getuid(), os.Getgid()
	var out []attr
	seen := map[string]bool{}
	add := func(rel string) {
		if seen[rel] {
			return
		}
		seen[rel] = true
		fi, err := os.Lstat(filepath.Join(dir, rel))
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			return
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return
		}
		perm := uint32(fi.Mode().Perm())
		if fi.Mode()&fs.ModeSetuid != 0 {
			perm |= 0o4000
		}
		if fi.Mode()&fs.ModeSetgid != 0 {
			perm |= 0o2000
		}
		if fi.Mode()&fs.ModeSticky != 0 {
			perm |= 0o1000
		}
		if perm == 0o644 || perm == 0o755 {
			if int(st.Uid) == uid && int(st.Gid) == gid {
				return
			}
		}
		out = append(out, attr{Path: rel, Mode: perm, UID: int(st.Uid), GID: int(st.Gid)})
	}
	for p := range strings.SplitSeq(string(list), "\x00") {
		if p == "" {
			continue
		}
		for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
			add(d)
		}
		add(p)
	}
	return out
}

// treeBytes is the size of the files in commit sha's tree.
func treeBytes(ctx context.Context, repo, sha string) int64 {
	raw, err := git(ctx, gitTimeout, repo, "ls-tree", "-r", "-l", "-z", sha)
	if err != nil {
		return 0
	}
	var n int64
	for entry := range strings.SplitSeq(string(raw), "\x00") {
		// <mode> SP <type> SP <object> SP+ <size> TAB <path>
		meta, _, ok := strings.Cut(entry, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) == 4 {
			if size, err := strconv.ParseInt(f[3], 10, 64); err == nil {
				n += size
			}
		}
	}
	return n
}

// DeleteSnapshot implements backend.Snapshotter: it deletes the snapshot's
// ref (its commit goes with git's next gc unless a branch made from it
// holds it). A repository that is gone holds nothing.
func (b *Backend) DeleteSnapshot(ctx context.Context, ref backend.SnapshotRef) error {
	name, err := SnapshotRef(ref.SnapshotID)
	if err != nil {
		return err
	}
	if ref.Backend != Type {
		return errs.E(errs.Invalid, "snapshot %s: is a %s snapshot, not a %s one", ref.SnapshotID, ref.Backend, Type)
	}
	repo := ref.Attrs["repository"]
	if repo == "" || !filepath.IsAbs(repo) {
		return errs.E(errs.Invalid, "snapshot %s: names no repository", ref.SnapshotID)
	}
	if _, err := os.Stat(repo); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock := b.repos.Lock(repo)
	defer unlock()
	if _, err := git(ctx, checkTimeout, repo, "rev-parse", "--verify", "--quiet", name); err != nil {
		return nil // deleted already
	}
	if _, err := git(ctx, gitTimeout, repo, "update-ref", "-d", name); err != nil {
		return fmt.Errorf("snapshot %s: delete: %w", ref.SnapshotID, err)
	}
	b.logger.Info("snapshot deleted", "snapshot_id", ref.SnapshotID, "repository", repo)
	return nil
}

// snapshotBase returns what a provision's branch starts from: the
// template's base_ref, or the snapshot's commit with a function that
// restores the snapshot's modes and owners in the checked out worktree.
func (b *Backend) snapshotBase(ctx context.Context, t Template, req backend.ProvisionRequest) (string, func(string) error, error) {
	s := req.Snapshot
	if s == nil {
		return t.BaseRef, nil, nil
	}
	if s.Backend != Type {
		return "", nil, errs.E(errs.Invalid, "snapshot %s is a %s snapshot, not a %s one", s.SnapshotID, s.Backend, Type)
	}
	name, err := SnapshotRef(s.SnapshotID)
	if err != nil {
		return "", nil, err
	}
	if repo := s.Attrs["repository"]; repo != "" && filepath.Clean(repo) != filepath.Clean(t.Repository) {
		return "", nil, errs.Field("spec.backend.repository", "snapshot %s was taken in repository %s; the template's is %s", s.SnapshotID, repo, t.Repository)
	}
	raw, err := git(ctx, checkTimeout, t.Repository, "rev-parse", "--verify", "--quiet", name+"^{commit}")
	if err != nil {
		return "", nil, errs.E(errs.NotFound, "snapshot %s not found in %s", s.SnapshotID, t.Repository)
	}
	sha := strings.TrimSpace(string(raw))
	if s.Ref != "" && s.Ref != sha {
		return "", nil, errs.E(errs.Conflict, "snapshot %s: ref %s names commit %s, not the snapshot's %s", s.SnapshotID, name, sha, s.Ref)
	}
	restore := func(dir string) error {
		msg, err := git(ctx, gitTimeout, t.Repository, "cat-file", "commit", sha)
		if err != nil {
			return err
		}
		return applyAttrs(dir, msg)
	}
	return sha, restore, nil
}

// applyAttrs sets the modes and owners a snapshot commit's message records
// on the checked out files. Owners are set only where this process may
// (as root); elsewhere the files stay the platform's user's.
func applyAttrs(dir string, commit []byte) error {
	var list []attr
	sc := bufio.NewScanner(bytes.NewReader(commit))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<30)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), modesTrailer); ok {
			if err := json.Unmarshal([]byte(rest), &list); err != nil {
				return fmt.Errorf("snapshot commit: modes: %w", err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// Deepest first, so a directory made read-only is changed after what
	// is in it.
	slices.SortFunc(list, func(a, b attr) int { return strings.Count(b.Path, "/") - strings.Count(a.Path, "/") })
	root := os.Getuid() == 0
	for _, a := range list {
		if !filepath.IsLocal(a.Path) {
			continue
		}
		p := filepath.Join(dir, a.Path)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			continue
		}
		if root {
			if err := os.Lchown(p, a.UID, a.GID); err != nil {
				return err
			}
		}
		mode := fs.FileMode(a.Mode & 0o777)
		if a.Mode&0o4000 != 0 {
			mode |= fs.ModeSetuid
		}
		if a.Mode&0o2000 != 0 {
			mode |= fs.ModeSetgid
		}
		if a.Mode&0o1000 != 0 {
			mode |= fs.ModeSticky
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
	return nil
}

// Pause implements backend.Pauser: it stops serving the runtime, which ends
// its connections and kills its processes, and keeps the worktree and its
// branch.
func (b *Backend) Pause(ctx context.Context, h backend.Handle, mode string) (backend.Handle, error) {
	dir, err := local.CheckHandle(h, Type, b.root)
	if err != nil {
		return backend.Handle{}, err
	}
	if mode != "" && mode != backend.SnapshotFilesystem {
		return backend.Handle{}, errs.E(errs.Invalid, "workspace %s: pause: mode %q: the worktree backend pauses in %s mode only", h.WorkspaceID, mode, backend.SnapshotFilesystem)
	}
	unlock := b.ids.Lock(h.WorkspaceID)
	defer unlock()
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		b.host.Stop(h.WorkspaceID)
		return backend.Handle{}, errs.E(errs.NotFound, "workspace %s: pause: worktree %s not found", h.WorkspaceID, dir)
	}
	// The mark first: a restart between the two finds the workspace
	// paused, never served again by an Endpoint (local.PausedDir).
	if err := local.MarkPaused(b.root, h.WorkspaceID); err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: pause: %w", h.WorkspaceID, err)
	}
	b.host.Stop(h.WorkspaceID)
	b.logger.Info("workspace paused", "workspace_id", h.WorkspaceID, "workspace_path", dir)
	return h, nil
}

// Resume implements backend.Pauser: it serves the runtime again on the
// worktree with token and env. A served workspace is left as it is.
func (b *Backend) Resume(ctx context.Context, h backend.Handle, token string, env backend.EnvFunc) (backend.Handle, error) {
	dir, err := local.CheckHandle(h, Type, b.root)
	if err != nil {
		return backend.Handle{}, err
	}
	unlock := b.ids.Lock(h.WorkspaceID)
	defer unlock()
	if _, err := local.ServeDir(ctx, b.host, h.WorkspaceID, dir, token, env); err != nil {
		return backend.Handle{}, err
	}
	if err := local.ClearPaused(b.root, h.WorkspaceID); err != nil {
		b.host.Stop(h.WorkspaceID)
		return backend.Handle{}, fmt.Errorf("workspace %s: resume: %w", h.WorkspaceID, err)
	}
	b.logger.Info("workspace resumed", "workspace_id", h.WorkspaceID)
	return h, nil
}
