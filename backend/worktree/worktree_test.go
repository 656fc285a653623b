package worktree_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/backend/worktree"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/internal/testenv"
)

// run runs git in dir and returns its trimmed output.
func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a repository with README.md on main and FEATURE.md on
// branch feature.
func newRepo(t *testing.T) string {
	t.Helper()
	testenv.Git(t)
	repo := t.TempDir()
	run(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, repo, "add", "README.md")
	run(t, repo, "commit", "-q", "-m", "first")
	run(t, repo, "checkout", "-q", "-b", "feature")
	if err := os.WriteFile(filepath.Join(repo, "FEATURE.md"), []byte("feature\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, repo, "add", "FEATURE.md")
	run(t, repo, "commit", "-q", "-m", "feature")
	run(t, repo, "checkout", "-q", "main")
	return repo
}

func newBackend(t *testing.T) *worktree.Backend {
	t.Helper()
	b, _ := backendAt(t, t.TempDir())
	return b
}

// backendAt returns a worktree backend on its own host under root.
func backendAt(t *testing.T, root string) (*worktree.Backend, *local.Host) {
	t.Helper()
	host := local.NewHost(nil)
	t.Cleanup(func() { host.Close() })
	b, err := worktree.New(host, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, host
}

func template(repo, baseRef string) json.RawMessage {
	doc := map[string]any{"kind": "worktree", "repository": repo}
	if baseRef != "" {
		doc["base_ref"] = baseRef
	}
	out, _ := json.Marshal(doc)
	return out
}

func branchExists(t *testing.T, repo, branch string) bool {
	t.Helper()
	return exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch).Run() == nil
}

func worktreeListed(t *testing.T, repo, dir string) bool {
	t.Helper()
	return strings.Contains(run(t, repo, "worktree", "list", "--porcelain"), "worktree "+dir+"\n")
}

func TestConformance(t *testing.T) {
	repo := newRepo(t)
	var mu sync.Mutex
	hosts := map[*worktree.Backend]*local.Host{}
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backend.Backend {
			b, host := backendAt(t, t.TempDir())
			mu.Lock()
			defer mu.Unlock()
			hosts[b] = host
			return b
		},
		// A restart ends the process whose host served the runtimes; the
		// new platform has a new host over the same root.
		Restart: func(t *testing.T, old backend.Backend) backend.Backend {
			ob := old.(*worktree.Backend)
			mu.Lock()
			host := hosts[ob]
			mu.Unlock()
			host.Close()
			b, h := backendAt(t, ob.Root())
			mu.Lock()
			hosts[b] = h
			mu.Unlock()
			return b
		},
		// Paused: no host of the test serves the workspace's runtime.
		Stopped: func(t *testing.T, h backend.Handle) bool {
			mu.Lock()
			defer mu.Unlock()
			for _, host := range hosts {
				if host.URL(h.WorkspaceID) != "" {
					return false
				}
			}
			return true
		},
		SnapshotGone: func(t *testing.T, ref backend.SnapshotRef) bool {
			return exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", worktree.SnapshotRefPrefix+ref.SnapshotID).Run() != nil
		},
		Template: template(repo, ""),
		Gone: func(t *testing.T, h backend.Handle) bool {
			_, err := os.Stat(h.Path)
			return errors.Is(err, fs.ErrNotExist) &&
				!branchExists(t, repo, worktree.Branch(h.WorkspaceID)) &&
				!worktreeListed(t, repo, h.Path)
		},
		Timeout:       time.Minute,
		HostProcesses: true,
	})
	// The suite's workspaces leave nothing behind in the repository.
	if out := run(t, repo, "branch", "--list", "primer/*"); out != "" {
		t.Errorf("branches left: %s", out)
	}
	if out := run(t, repo, "worktree", "list"); strings.Count(out, "\n") != 0 {
		t.Errorf("worktrees left:\n%s", out)
	}
}

func TestBranchLifecycle(t *testing.T) {
	repo := newRepo(t)
	b := newBackend(t)
	ctx := t.Context()
	tests := []struct {
		baseRef   string
		wantFiles []string
		noFiles   []string
	}{
		{"", []string{"README.md"}, []string{"FEATURE.md"}},
		{"feature", []string{"README.md", "FEATURE.md"}, nil},
		{"main~0", []string{"README.md"}, []string{"FEATURE.md"}},
	}
	for _, tt := range tests {
		t.Run("base_ref="+tt.baseRef, func(t *testing.T) {
			id := backendtest.NewID(t)
			branch := "primer/" + id
			h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: template(repo, tt.baseRef), Token: "tok"})
			if err != nil {
				t.Fatal(err)
			}
			if h.Path != filepath.Join(b.Root(), id) || h.Attrs["branch"] != branch || h.Attrs["repository"] != repo {
				t.Errorf("handle = %+v", h)
			}
			if !branchExists(t, repo, branch) {
				t.Errorf("branch %s missing after provision", branch)
			}
			if got := run(t, h.Path, "rev-parse", "--abbrev-ref", "HEAD"); got != branch {
				t.Errorf("worktree is on %q, want %q", got, branch)
			}
			for _, f := range tt.wantFiles {
				if _, err := os.Stat(filepath.Join(h.Path, f)); err != nil {
					t.Errorf("file %s from base_ref: %v", f, err)
				}
			}
			for _, f := range tt.noFiles {
				if _, err := os.Stat(filepath.Join(h.Path, f)); err == nil {
					t.Errorf("file %s present, not on base_ref", f)
				}
			}
			if err := b.Destroy(ctx, h); err != nil {
				t.Fatal(err)
			}
			if branchExists(t, repo, branch) || worktreeListed(t, repo, h.Path) {
				t.Errorf("branch or worktree left after destroy")
			}
			if _, err := os.Stat(h.Path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("dir after destroy: %v", err)
			}
		})
	}
	if got := run(t, repo, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Errorf("the repository's own checkout moved to %q", got)
	}
}

// A provision that died half way is finished by the retry, keeping any
// work already on the branch.
func TestProvisionResumes(t *testing.T) {
	repo := newRepo(t)
	b := newBackend(t)
	ctx := t.Context()
	tmpl := template(repo, "")
	req := func(id string) backend.ProvisionRequest {
		return backend.ProvisionRequest{WorkspaceID: id, Template: tmpl, Token: "tok"}
	}

	t.Run("branch without worktree", func(t *testing.T) {
		id := backendtest.NewID(t)
		h, err := b.Provision(ctx, req(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.Path, "work.txt"), []byte("w"), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, h.Path, "add", "work.txt")
		run(t, h.Path, "commit", "-q", "-m", "work")
		run(t, repo, "worktree", "remove", h.Path)
		h2, err := b.Provision(ctx, req(id))
		if err != nil {
			t.Fatalf("provision with the branch left: %v", err)
		}
		if _, err := os.Stat(filepath.Join(h2.Path, "work.txt")); err != nil {
			t.Errorf("work committed on the branch is lost: %v", err)
		}
		if err := b.Destroy(ctx, h2); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("registered worktree without directory", func(t *testing.T) {
		id := backendtest.NewID(t)
		h, err := b.Provision(ctx, req(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(h.Path); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Provision(ctx, req(id)); err != nil {
			t.Fatalf("provision with the directory gone: %v", err)
		}
		if _, err := os.Stat(filepath.Join(h.Path, "README.md")); err != nil {
			t.Errorf("worktree not checked out again: %v", err)
		}
		if err := b.Destroy(ctx, h); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("stray directory", func(t *testing.T) {
		id := backendtest.NewID(t)
		dir := filepath.Join(b.Root(), id)
		if err := os.MkdirAll(filepath.Join(dir, "junk"), 0o700); err != nil {
			t.Fatal(err)
		}
		h, err := b.Provision(ctx, req(id))
		if err != nil {
			t.Fatalf("provision over a stray directory: %v", err)
		}
		if !worktreeListed(t, repo, h.Path) {
			t.Error("not a worktree after provision")
		}
		if err := b.Destroy(ctx, h); err != nil {
			t.Fatal(err)
		}
	})
}

func TestValidateTemplate(t *testing.T) {
	repo := newRepo(t)
	b := newBackend(t)
	notRepo := t.TempDir()
	tests := []struct {
		name      string
		doc       string
		wantField string // "" means valid
	}{
		{"default base_ref", `{"kind":"worktree","repository":"` + repo + `"}`, ""},
		{"branch", `{"kind":"worktree","repository":"` + repo + `","base_ref":"feature"}`, ""},
		{"with common", `{"kind":"worktree","repository":"` + repo + `","env":{"A":"b"},"files":{"x/y":"z"},"init":["make"]}`, ""},
		{"missing repository", `{"kind":"worktree"}`, "spec.backend.repository"},
		{"relative repository", `{"kind":"worktree","repository":"repo"}`, "spec.backend.repository"},
		{"not a repository", `{"kind":"worktree","repository":"` + notRepo + `"}`, "spec.backend.repository"},
		{"missing repository dir", `{"kind":"worktree","repository":"` + notRepo + `/nope"}`, "spec.backend.repository"},
		{"unknown base_ref", `{"kind":"worktree","repository":"` + repo + `","base_ref":"nope"}`, "spec.backend.base_ref"},
		{"option as base_ref", `{"kind":"worktree","repository":"` + repo + `","base_ref":"--orphan"}`, "spec.backend.base_ref"},
		{"local kind", `{"kind":"local","repository":"` + repo + `"}`, "spec.backend.kind"},
		{"typo", `{"kind":"worktree","repo":"` + repo + `"}`, "spec.backend.repo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := b.ValidateTemplate(json.RawMessage(tt.doc))
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("ValidateTemplate(%s) = %v", tt.doc, err)
				}
				return
			}
			if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tt.wantField {
				t.Fatalf("ValidateTemplate(%s) = %v (field %q), want invalid naming %q", tt.doc, err, errs.FieldOf(err), tt.wantField)
			}
		})
	}
}

func TestFactoryConfig(t *testing.T) {
	host := local.NewHost(nil)
	t.Cleanup(func() { host.Close() })
	root := t.TempDir() + "/wt"
	if _, err := worktree.Factory(host, nil)(json.RawMessage(`{"kind":"worktree","root_path":"` + root + `"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); err == nil {
		t.Errorf("root_path %s created by building the backend; want it made at first provision", root)
	}
	for _, cfg := range []string{`{"kind":"local","root_path":"/tmp"}`, `{"root_path":"x"}`, `{"root_path":"/tmp","x":1}`, `{}`} {
		if _, err := worktree.Factory(host, nil)(json.RawMessage(cfg)); !errs.Is(err, errs.Invalid) || errs.FieldOf(err) == "" {
			t.Errorf("factory(%s) = %v, want invalid with a field", cfg, err)
		}
	}
}

// Destroy takes the branch name from the workspace id, never from the
// handle, and cleans up when the repository itself is gone.
func TestDestroyEdgeCases(t *testing.T) {
	repo := newRepo(t)
	b := newBackend(t)
	ctx := t.Context()

	id := backendtest.NewID(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: template(repo, ""), Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	h.Attrs["branch"] = "main"
	if err := b.Destroy(ctx, h); err != nil {
		t.Fatal(err)
	}
	if !branchExists(t, repo, "main") {
		t.Fatal("destroy deleted the branch named in a forged handle")
	}
	if branchExists(t, repo, worktree.Branch(id)) {
		t.Error("workspace branch left")
	}

	// The repository was deleted by its owner: destroy still removes the
	// workspace directory and succeeds.
	repo2 := newRepo(t)
	id2 := backendtest.NewID(t)
	h2, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id2, Template: template(repo2, ""), Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(repo2); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := b.Destroy(ctx2, h2); err != nil {
		t.Fatalf("destroy with the repository gone: %v", err)
	}
	if _, err := os.Stat(h2.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dir after destroy: %v", err)
	}

	// A forged path is refused as on the local backend.
	victim := t.TempDir()
	forged := backend.Handle{Backend: worktree.Type, WorkspaceID: id, Path: victim, Attrs: map[string]string{"repository": repo}}
	if err := b.Destroy(ctx, forged); !errs.Is(err, errs.Invalid) {
		t.Errorf("destroy forged path = %v, want invalid", err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("forged path removed: %v", err)
	}
}

// The reconciler destroys what List returns with a handle it builds from
// the workspace id alone: Destroy finds the repository from the worktree
// and removes the worktree and its branch, after a Teardown too.
func TestListThenDestroyWithoutRepository(t *testing.T) {
	repo := newRepo(t)
	real, err := filepath.EvalSymlinks(repo)
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend(t)
	ctx := t.Context()
	id := backendtest.NewID(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: template(repo, "feature"), Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Teardown(ctx, h); err != nil {
		t.Fatal(err)
	}
	if !branchExists(t, repo, worktree.Branch(id)) || !worktreeListed(t, repo, h.Path) {
		t.Fatal("teardown removed the branch or the worktree")
	}
	// Not a worktree, but shaped like a workspace: listed (it is under the
	// provider's root), without a branch.
	stray := backendtest.NewID(t)
	if err := os.Mkdir(filepath.Join(b.Root(), stray), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(b.Root(), "scratch"), 0o700); err != nil {
		t.Fatal(err)
	}

	listed, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		id:    {"directory " + h.Path, "branch " + worktree.Branch(id) + " of " + real},
		stray: {"directory " + filepath.Join(b.Root(), stray)},
	}
	if len(listed) != len(want) {
		t.Errorf("List = %+v, want %v", listed, want)
	}
	for _, l := range listed {
		if w, ok := want[l.WorkspaceID]; !ok || strings.Join(l.Objects, "|") != strings.Join(w, "|") {
			t.Errorf("List returns %+v, want objects %v", l, w)
		}
		if err := b.Destroy(ctx, backend.Handle{Backend: worktree.Type, WorkspaceID: l.WorkspaceID}); err != nil {
			t.Errorf("destroy %s: %v", l.WorkspaceID, err)
		}
	}
	if branchExists(t, repo, worktree.Branch(id)) || worktreeListed(t, repo, h.Path) {
		t.Error("destroy without a repository in the handle left the branch or the worktree")
	}
	if listed, err := b.List(ctx); err != nil || len(listed) != 0 {
		t.Errorf("List after destroy = %+v, %v", listed, err)
	}
}
