// Package worktree is the backend whose workspaces are git worktrees of a
// repository on the platform's host: each workspace is a new branch,
// primer/<workspace id>, checked out from the template's base ref at
// root_path/<workspace id>. Its runtime runs inside the platform process on
// the shared local.Host, exactly like the local backend, and is just as
// unisolated: commands run on the host as the platform's user.
//
// A snapshot of a worktree workspace is a commit on the hidden ref
// refs/primer/snapshots/<snapshot id> of its repository (snapshot.go): the
// worktree's tracked and untracked files as they were at the capture
// (ignored files are not in it, as git leaves them out of every commit),
// with the modes and owners git does not keep recorded beside it. A
// workspace made from it, a fork, and a reset to it get a new worktree on
// a new branch primer/<id> at that commit, whose parent is the source's
// HEAD: what was uncommitted in the source is committed in it. Nothing
// outside the worktree (the host, ignored files, empty directories) is
// captured or restored. A pause stops the runtime and kills the
// workspace's processes, keeping the worktree and its branch.
package worktree

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/internal/keylock"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/server"
	"github.com/primerhq/primer/wire"
)

// Type is the backend type and template kind of this backend.
const Type = wire.BackendWorktree

// BranchPrefix starts the name of every branch the backend creates; destroy
// deletes only primer/<id>, never a branch named by a handle.
const BranchPrefix = "primer/"

// Timeouts for git commands: checking out a large tree takes a while,
// everything else is quick.
const (
	addTimeout   = 5 * time.Minute
	gitTimeout   = 30 * time.Second
	checkTimeout = 10 * time.Second
)

// Template is the worktree backend's template document.
type Template struct {
	backend.Common
	// Repository is the absolute path of the git repository on the host.
	Repository string `json:"repository"`
	// BaseRef is what each workspace branch starts from; default HEAD.
	BaseRef string `json:"base_ref,omitempty"`
}

// ParseTemplate decodes and checks a worktree template document without
// touching git.
func ParseTemplate(doc json.RawMessage) (Template, error) {
	var t Template
	if err := backend.DecodeStrict(doc, "spec.backend", &t); err != nil {
		return t, err
	}
	if err := t.Common.Check(Type); err != nil {
		return t, err
	}
	var err error
	if t.Repository, err = backend.AbsPath("spec.backend.repository", t.Repository); err != nil {
		return t, err
	}
	if t.BaseRef == "" {
		t.BaseRef = "HEAD"
	}
	// A ref starting with '-' would be read by git as an option.
	if strings.HasPrefix(t.BaseRef, "-") || strings.ContainsAny(t.BaseRef, " \t\n\x00") {
		return t, errs.Field("spec.backend.base_ref", "spec.backend.base_ref: %q is not a valid ref", t.BaseRef)
	}
	return t, nil
}

// Backend makes workspaces as git worktrees under a root path.
type Backend struct {
	root   string
	host   *local.Host
	logger *slog.Logger
	ids    keylock.Map // workspace id
	repos  keylock.Map // repository path: git's worktree and ref updates
	// reposMu serialises writes of repositoriesFile (branches.go).
	reposMu sync.Mutex
}

var (
	_ backend.Backend     = (*Backend)(nil)
	_ backend.RuntimeHost = (*Backend)(nil)
	_ backend.Keeper      = (*Backend)(nil)
	_ backend.Lister      = (*Backend)(nil)
)

// New returns a worktree backend whose worktrees live under root (absolute,
// created if missing) and whose runtimes host serves.
func New(host *local.Host, root string, logger *slog.Logger) (*Backend, error) {
	raw, err := json.Marshal(local.ProviderConfig{RootPath: root})
	if err != nil {
		return nil, err
	}
	c, err := local.ParseProviderConfig(raw, Type)
	if err != nil {
		return nil, err
	}
	if err := local.EnsureRoot(c.RootPath); err != nil {
		return nil, err
	}
	return newBackend(host, c.RootPath, logger), nil
}

// newBackend builds a backend on a root ParseProviderConfig has checked.
func newBackend(host *local.Host, root string, logger *slog.Logger) *Backend {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Backend{root: root, host: host, logger: logger.With("backend", Type)}
}

// Factory builds worktree backends from provider configs
// ({"kind": "worktree", "root_path": "/abs/path"}); they share host.
func Factory(host *local.Host, logger *slog.Logger) backend.Factory {
	return func(config json.RawMessage) (backend.Backend, error) {
		c, err := local.ParseProviderConfig(config, Type)
		if err != nil {
			return nil, err
		}
		return newBackend(host, c.RootPath, logger), nil
	}
}

// Root returns the directory the backend's worktrees live in.
func (b *Backend) Root() string { return b.root }

// Branch returns the branch of workspace id.
func Branch(id string) string { return BranchPrefix + id }

// Capabilities implements backend.Backend.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		Isolation: "none", PersistentAcrossRestart: true,
		Snapshots: []string{backend.SnapshotFilesystem}, SnapshotsNote: snapshotsNote, Pause: true,
		Reset: backend.ResetScopeWorkspace, ResetNote: backend.HostResetNote,
	}
}

// ValidateTemplate implements backend.Backend. Besides the document it
// checks that the repository is a git repository and base_ref names a
// commit in it, so a typo fails when the template is saved rather than at
// every provision.
func (b *Backend) ValidateTemplate(tmpl json.RawMessage) error {
	t, err := ParseTemplate(tmpl)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*checkTimeout)
	defer cancel()
	return checkRepo(ctx, t)
}

func checkRepo(ctx context.Context, t Template) error {
	if _, err := git(ctx, checkTimeout, t.Repository, "rev-parse", "--git-dir"); err != nil {
		return errs.Field("spec.backend.repository", "spec.backend.repository: %s is not a git repository: %v", t.Repository, err)
	}
	if _, err := git(ctx, checkTimeout, t.Repository, "rev-parse", "--verify", "--quiet", "--end-of-options", t.BaseRef+"^{commit}"); err != nil {
		return errs.Field("spec.backend.base_ref", "spec.backend.base_ref: %q is not a commit in %s", t.BaseRef, t.Repository)
	}
	return nil
}

// Provision implements backend.Backend: it adds the worktree on a new branch
// primer/<id> from base_ref and serves its runtime. A retry reuses the
// worktree, or the branch when only the branch was made.
func (b *Backend) Provision(ctx context.Context, req backend.ProvisionRequest) (backend.Handle, error) {
	id := req.WorkspaceID
	dir, err := local.WorkspaceDir(b.root, id)
	if err != nil {
		return backend.Handle{}, err
	}
	t, err := ParseTemplate(req.Template)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", id, err)
	}
	unlock := b.ids.Lock(id)
	defer unlock()
	if err := local.EnsureRoot(b.root); err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", id, err)
	}
	// Before the add makes a branch, so a crash cannot leave one in a
	// repository the reconciler does not know (branches.go).
	if err := b.rememberRepo(t.Repository); err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: record repository: %w", id, err)
	}
	base, restore, err := b.snapshotBase(ctx, t, req)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", id, err)
	}
	created, err := b.addWorktree(ctx, t.Repository, base, id, dir)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", id, err)
	}
	if created && restore != nil {
		if err := restore(dir); err != nil {
			return backend.Handle{}, fmt.Errorf("workspace %s: provision from snapshot %s: %w", id, req.Snapshot.SnapshotID, err)
		}
	}
	// A provision of a paused workspace (a replacement) serves it again.
	if err := local.ClearPaused(b.root, id); err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", id, err)
	}
	if _, err := b.host.Serve(ctx, id, server.Config{Root: dir, Token: req.Token, Env: req.Env}); err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", id, err)
	}
	b.logger.Info("workspace provisioned", "workspace_id", id, "workspace_path", dir, "repository", t.Repository)
	return backend.Handle{
		Backend:     Type,
		WorkspaceID: id,
		Path:        dir,
		Attrs:       map[string]string{"repository": t.Repository, "branch": Branch(id)},
	}, nil
}

// addWorktree adds the worktree root/<id> of repo on branch primer/<id>,
// made from base when missing, and reports whether it checked it out (false
// when a retry found it in place).
func (b *Backend) addWorktree(ctx context.Context, repo, base, id, dir string) (bool, error) {
	unlock := b.repos.Lock(repo)
	defer unlock()

	registered, err := isWorktree(ctx, repo, dir)
	if err != nil {
		return false, err
	}
	_, statErr := os.Stat(dir)
	switch {
	case registered && statErr == nil:
		return false, nil // a retry: the first try got this far
	case registered:
		// Registered but the directory is gone: forget it so it can be added again.
		if _, err := git(ctx, gitTimeout, repo, "worktree", "prune"); err != nil {
			return false, err
		}
	case statErr == nil:
		// A directory that git does not know: left by an add that died
		// before registering. It is ours (root/<id>); start it afresh.
		if err := local.RemoveDir(ctx, b.root, id); err != nil {
			return false, err
		}
	}
	branch := Branch(id)
	_, err = git(ctx, checkTimeout, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	if err == nil {
		_, err = git(ctx, addTimeout, repo, "worktree", "add", "--end-of-options", dir, branch)
	} else {
		_, err = git(ctx, addTimeout, repo, "worktree", "add", "-b", branch, "--end-of-options", dir, base)
	}
	return err == nil, err
}

// isWorktree reports whether dir is a registered worktree of repo.
func isWorktree(ctx context.Context, repo, dir string) (bool, error) {
	out, err := git(ctx, gitTimeout, repo, "worktree", "list", "--porcelain")
	if err != nil {
		return false, err
	}
	want := canonical(dir)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "worktree "); ok && canonical(p) == want {
			return true, nil
		}
	}
	return false, sc.Err()
}

// canonical resolves symlinks in p's parent (git prints real paths; a root
// under a symlinked /tmp would not match otherwise).
func canonical(p string) string {
	if parent, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(parent, filepath.Base(p))
	}
	return filepath.Clean(p)
}

// Endpoint implements backend.Backend; see local.Backend.Endpoint.
func (b *Backend) Endpoint(ctx context.Context, h backend.Handle, token string) (backend.Endpoint, error) {
	return b.ServeRuntime(ctx, h, token, nil)
}

// ServeRuntime implements backend.RuntimeHost; see local.Backend.ServeRuntime.
func (b *Backend) ServeRuntime(ctx context.Context, h backend.Handle, token string, env backend.EnvFunc) (backend.Endpoint, error) {
	dir, err := local.CheckHandle(h, Type, b.root)
	if err != nil {
		return backend.Endpoint{}, err
	}
	unlock := b.ids.Lock(h.WorkspaceID)
	defer unlock()
	if err := local.CheckNotPaused(b.root, h.WorkspaceID); err != nil {
		return backend.Endpoint{}, err
	}
	return local.ServeDir(ctx, b.host, h.WorkspaceID, dir, token, env)
}

// Destroy implements backend.Backend: it stops the runtime, removes the
// worktree and deletes branch primer/<id>. Parts already gone are skipped.
// Uncommitted and unmerged work in the workspace is discarded. A handle
// without a repository (one the reconciler built from List) finds it from
// the worktree's .git file.
func (b *Backend) Destroy(ctx context.Context, h backend.Handle) error {
	dir, err := local.CheckHandle(h, Type, b.root)
	if err != nil {
		return err
	}
	id := h.WorkspaceID
	unlock := b.ids.Lock(id)
	defer unlock()
	b.host.Stop(id)

	repo := h.Attrs["repository"]
	if repo != "" && !filepath.IsAbs(repo) {
		return errs.E(errs.Invalid, "workspace %s: handle repository %q is not absolute", id, repo)
	}
	if repo == "" {
		repo = repositoryOf(dir)
	}
	if repo == "" {
		// The directory is gone (or never was): a branch a crashed add
		// left in a repository the backend added worktrees to.
		repo = b.repoWithBranch(ctx, id)
	}
	if repo != "" {
		if err := b.removeWorktree(ctx, repo, id, dir); err != nil {
			return fmt.Errorf("workspace %s: destroy: %w", id, err)
		}
	}
	// Whatever git left (or a directory git never knew) goes too.
	if err := local.RemoveDir(ctx, b.root, id); err != nil {
		return err
	}
	if err := local.ClearPaused(b.root, id); err != nil {
		return fmt.Errorf("workspace %s: destroy: %w", id, err)
	}
	b.logger.Info("workspace destroyed", "workspace_id", id, "workspace_path", dir)
	return nil
}

// Teardown implements backend.Keeper: it stops serving the runtime, which
// ends its connections and kills its processes, and keeps the worktree and
// its branch for the next Provision. As with the local backend, Endpoint
// serves a torn down workspace again.
func (b *Backend) Teardown(ctx context.Context, h backend.Handle) error {
	dir, err := local.CheckHandle(h, Type, b.root)
	if err != nil {
		return err
	}
	unlock := b.ids.Lock(h.WorkspaceID)
	defer unlock()
	b.host.Stop(h.WorkspaceID)
	b.logger.Info("workspace torn down", "workspace_id", h.WorkspaceID, "workspace_path", dir)
	return nil
}

// List implements backend.Lister: the workspace directories under root
// (see local.ListDirs), each with its branch when its repository can be
// told from the worktree, and the branches primer/<id> of the repositories
// the backend added worktrees to whose directory is gone (branches.go).
func (b *Backend) List(ctx context.Context) ([]backend.Listed, error) {
	out, err := local.ListDirs(ctx, b.root)
	if err != nil {
		return nil, err
	}
	for i, l := range out {
		if repo := repositoryOf(filepath.Join(b.root, l.WorkspaceID)); repo != "" {
			out[i].Objects = append(out[i].Objects, "branch "+Branch(l.WorkspaceID)+" of "+repo)
		}
	}
	return append(out, b.strayBranches(ctx)...), nil
}

// repositoryOf returns the repository a worktree directory belongs to, read
// from its .git file (gitdir: <repo>/.git/worktrees/<name>) and that
// directory's commondir file, without running git (which would search the
// parent directories for a repository when dir is not a worktree). It
// returns "" when dir is not a linked worktree.
func repositoryOf(dir string) string {
	raw, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		return ""
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(raw)), "gitdir: ")
	if !ok || gitdir == "" {
		return ""
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(dir, gitdir)
	}
	raw, err = os.ReadFile(filepath.Join(gitdir, "commondir"))
	if err != nil {
		return ""
	}
	common := strings.TrimSpace(string(raw))
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitdir, common)
	}
	common = filepath.Clean(common)
	if filepath.Base(common) == ".git" {
		return filepath.Dir(common) // a repository with a work tree
	}
	return common // a bare repository
}

func (b *Backend) removeWorktree(ctx context.Context, repo, id, dir string) error {
	if _, err := os.Stat(repo); errors.Is(err, fs.ErrNotExist) {
		return nil // the repository is gone, and its branches and worktree records with it
	}
	unlock := b.repos.Lock(repo)
	defer unlock()

	registered, err := isWorktree(ctx, repo, dir)
	if err != nil {
		return err
	}
	if registered {
		// --force twice also removes a worktree left locked by an add that
		// died mid-checkout.
		if _, err := git(ctx, gitTimeout, repo, "worktree", "remove", "--force", "--force", "--end-of-options", dir); err != nil {
			return err
		}
	}
	// One git call instead of a check and a delete: git says "branch ... not
	// found" (LC_ALL=C) when a retry already deleted it.
	if _, err := git(ctx, gitTimeout, repo, "branch", "-D", "--end-of-options", Branch(id)); err != nil &&
		!strings.Contains(err.Error(), "not found") {
		return err
	}
	_, err = git(ctx, gitTimeout, repo, "worktree", "prune")
	return err
}

// git runs git -C dir args with its own timeout and returns stdout; errors
// carry git's stderr.
func git(ctx context.Context, timeout time.Duration, dir string, args ...string) ([]byte, error) {
	return gitEnv(ctx, timeout, dir, nil, args...)
}

// gitEnv is git with extra environment variables (a GIT_INDEX_FILE of its
// own, a committer).
func gitEnv(ctx context.Context, timeout time.Duration, dir string, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	// No prompts, no pager, messages in English for the error text, and no
	// inherited GIT_DIR pointing somewhere else.
	cmd.Env = append(append(filteredEnv(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "LC_ALL=C"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, errs.E(errs.Timeout, "git %s: %w (after %s)", strings.Join(args, " "), ctx.Err(), timeout)
		}
		if ctx.Err() != nil {
			return nil, errs.E(errs.Canceled, "git %s: %w", strings.Join(args, " "), ctx.Err())
		}
		if msg == "" {
			return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return stdout.Bytes(), nil
}

// filteredEnv is the process environment without variables that would make
// git look at another repository than the one named with -C.
func filteredEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR", "LC_ALL":
			continue
		}
		out = append(out, kv)
	}
	return out
}
