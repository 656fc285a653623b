package worktree

// Branches left by a crash. `git worktree add -b primer/<id>` makes the
// branch before it checks out the directory; a platform that dies between
// the two (or an operator who removed the directory) leaves a branch that
// no directory under root names, which List could not see: the provider
// does not know the templates' repositories. So the backend writes down,
// under its root and before its first add, every repository it adds
// worktrees to (repositoriesFile), and List also reports each branch
// primer/<id> of those repositories whose directory is gone. The
// reconciler then removes the branch when no workspace row has that id
// (Destroy finds the repository in the same list), and leaves it when one
// does: that workspace's next Provision checks the branch out again
// (adopts it).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/primerhq/primer/backend"
)

// repositoriesFile lists, one path a line, the repositories the backend
// added worktrees to. Its name is not a workspace id, so ListDirs skips it.
const repositoriesFile = ".repositories"

// rememberRepo adds repo to repositoriesFile unless it is there.
func (b *Backend) rememberRepo(repo string) error {
	b.reposMu.Lock()
	defer b.reposMu.Unlock()
	if slices.Contains(b.knownRepos(), repo) {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(b.root, repositoriesFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(repo + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// knownRepos reads repositoriesFile.
func (b *Backend) knownRepos() []string {
	raw, err := os.ReadFile(filepath.Join(b.root, repositoriesFile))
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); filepath.IsAbs(line) && !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	return out
}

// strayBranches lists the branches primer/<id> of the known repositories
// whose directory root/<id> does not exist. Created is the branch's last
// update (its reflog or loose ref file), or now when git keeps neither, so
// a branch of unknown age waits a pass.
func (b *Backend) strayBranches(ctx context.Context) []backend.Listed {
	var out []backend.Listed
	for _, repo := range b.knownRepos() {
		if _, err := os.Stat(repo); err != nil {
			continue
		}
		raw, err := git(ctx, gitTimeout, repo, "for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads/"+BranchPrefix)
		if err != nil {
			b.logger.Warn("list workspace branches", "repository", repo, "error", err.Error())
			continue
		}
		common := commonDir(ctx, repo)
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			id, ok := strings.CutPrefix(sc.Text(), BranchPrefix)
			if !ok || !backend.IsWorkspaceID(id) {
				continue
			}
			if _, err := os.Lstat(filepath.Join(b.root, id)); !errors.Is(err, fs.ErrNotExist) {
				continue // listed with its directory
			}
			out = append(out, backend.Listed{
				WorkspaceID: id,
				Created:     branchTime(common, sc.Text()),
				Objects:     []string{"branch " + Branch(id) + " of " + repo},
				Remnant:     true,
			})
		}
	}
	return out
}

// repoWithBranch returns the known repository holding branch primer/<id>,
// or "".
func (b *Backend) repoWithBranch(ctx context.Context, id string) string {
	for _, repo := range b.knownRepos() {
		if _, err := git(ctx, checkTimeout, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+Branch(id)); err == nil {
			return repo
		}
	}
	return ""
}

// commonDir is repo's git directory (where refs and logs live).
func commonDir(ctx context.Context, repo string) string {
	raw, err := git(ctx, gitTimeout, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
}

// branchTime is when branch was last updated, from its reflog or loose ref.
func branchTime(common, branch string) time.Time {
	if common != "" {
		for _, p := range []string{filepath.Join(common, "logs", "refs", "heads", branch), filepath.Join(common, "refs", "heads", branch)} {
			if fi, err := os.Stat(p); err == nil {
				return fi.ModTime()
			}
		}
	}
	return time.Now()
}
