package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// TestAbsolutePaths checks that whole-filesystem mode opens absolute paths
// to every file operation and to exec's cwd, relative ones staying in the
// root, and that root mode refuses them all as before.
func TestAbsolutePaths(t *testing.T) {
	for _, fsMode := range []string{protocol.FSRoot, protocol.FSWhole} {
		t.Run(fsMode, func(t *testing.T) {
			e := runtimetest.Start(t, server.Config{FS: fsMode})
			ctx, c := runtimetest.Ctx(t), e.Client
			out := filepath.Join(e.Dir, "out") // beside the workspace: the sandbox's file system
			whole := fsMode == protocol.FSWhole
			ok := func(op string, err error) {
				t.Helper()
				switch {
				case whole && err != nil:
					t.Errorf("%s: %v", op, err)
				case !whole && !errs.Is(err, errs.Invalid):
					t.Errorf("%s = %v, want invalid in root mode", op, err)
				}
			}
			ok("mkdir", c.Mkdir(ctx, out+"/d", true))
			ok("write", c.WriteFile(ctx, out+"/d/f", []byte("abs"), 0o600))
			b, err := c.ReadFile(ctx, out+"/d/f")
			ok("read", err)
			if whole && string(b) != "abs" {
				t.Errorf("read = %q", b)
			}
			fi, err := c.Stat(ctx, out+"/d/f")
			ok("stat", err)
			if whole && (fi.Path != out+"/d/f" || fi.Size != 3 || fi.Mode != 0o600) {
				t.Errorf("stat = %+v, want the absolute path, 3 bytes, 0600", fi)
			}
			ents, err := c.List(ctx, out+"/d")
			ok("list", err)
			if whole && (len(ents) != 1 || ents[0].Path != out+"/d/f") {
				t.Errorf("list = %+v", ents)
			}
			r, err := c.OpenFile(ctx, "/etc/hostname")
			ok("read.range", err)
			if err == nil {
				_ = r.Close()
			}
			ok("rename in", c.Rename(ctx, out+"/d/f", "in"))
			ok("rename out", c.Rename(ctx, "in", out+"/d/g"))
			res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"pwd"}, Cwd: out}, nil, nil)
			ok("exec cwd", err)
			if whole && string(res.Stdout) != out+"\n" {
				t.Errorf("exec in %s printed %q", out, res.Stdout)
			}
			ok("remove", c.Remove(ctx, out, true))
			if whole {
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("%s still there after remove: %v", out, err)
				}
			} else if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("root mode created %s", out)
			}
			// Relative paths still mean the workspace root in both modes.
			if err := c.WriteFile(ctx, "rel", []byte("r"), 0); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(e.Root, "rel")); err != nil || string(b) != "r" {
				t.Errorf("relative write landed elsewhere: %q, %v", b, err)
			}
			if _, err := c.ReadFile(ctx, "../out"); !errs.Is(err, errs.Invalid) {
				t.Errorf("read ../out = %v, want invalid in every mode", err)
			}
			// The roots themselves are never removed.
			for _, p := range []string{"/", "."} {
				if err := c.Remove(ctx, p, true); !errs.Is(err, errs.Invalid) {
					t.Errorf("remove %s = %v, want invalid", p, err)
				}
			}
		})
	}
}

// TestAbsolutePathsKeepTheHistory checks that whole-filesystem mode opens
// no way to change the workspace's history (<root>/.state), which the
// platform's files API refuses by relative path: not by its absolute
// path, not through a symlink outside the root, not by removing or moving
// a directory above it. Reading stays allowed, as by relative path.
func TestAbsolutePathsKeepTheHistory(t *testing.T) {
	e := runtimetest.Start(t, server.Config{FS: protocol.FSWhole})
	ctx, c := runtimetest.Ctx(t), e.Client
	if err := c.WriteFile(ctx, "a.txt", []byte("a"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StateCommit(ctx, protocol.StateCommitParams{Message: "first"}); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(e.Root, protocol.StateDir)
	link := filepath.Join(e.Dir, "link")
	if err := os.Symlink(state, link); err != nil {
		t.Fatal(err)
	}
	uplink := filepath.Join(e.Dir, "uplink")
	if err := os.Symlink(e.Root, uplink); err != nil {
		t.Fatal(err)
	}
	before := tree(t, state)

	attempts := map[string]error{
		"write in":              c.WriteFile(ctx, state+"/HEAD", []byte("x"), 0),
		"write new":             c.WriteFile(ctx, state+"/new", []byte("x"), 0),
		"write via ..":          c.WriteFile(ctx, e.Root+"/sub/../.state/new", []byte("x"), 0),
		"write via link":        c.WriteFile(ctx, link+"/new", []byte("x"), 0),
		"write via parent link": c.WriteFile(ctx, uplink+"/.state/new", []byte("x"), 0),
		"mkdir in":              c.Mkdir(ctx, state+"/objects/d", true),
		"remove it":             c.Remove(ctx, state, true),
		"remove in":             c.Remove(ctx, state+"/HEAD", false),
		"remove the root":       c.Remove(ctx, e.Root, true),
		"remove above the root": c.Remove(ctx, e.Dir, true),
		"remove via link":       c.Remove(ctx, uplink+"/.state", true),
		"move it":               c.Rename(ctx, state, e.Dir+"/stolen"),
		"move the root":         c.Rename(ctx, e.Root, e.Dir+"/stolen"),
		"move into":             c.Rename(ctx, "a.txt", state+"/HEAD"),
		"move into via link":    c.Rename(ctx, "a.txt", link+"/HEAD"),
	}
	for name, err := range attempts {
		if !errs.Is(err, errs.Forbidden) {
			t.Errorf("%s = %v, want forbidden", name, err)
		}
	}
	if after := tree(t, state); !slices.Equal(before, after) {
		t.Fatalf("the history changed:\nbefore %v\nafter  %v", before, after)
	}
	if _, err := os.Stat(filepath.Join(e.Root, "a.txt")); err != nil {
		t.Fatalf("a.txt moved: %v", err)
	}
	if _, err := c.ReadFile(ctx, state+"/HEAD"); err != nil {
		t.Fatalf("read the history by absolute path: %v", err)
	}
	// The link itself is outside the history: removing it is fine.
	if err := c.Remove(ctx, link, false); err != nil {
		t.Fatalf("remove the link: %v", err)
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("removing the link took the history: %v", err)
	}
}

// tree lists every path under dir with its size, to compare.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprint(p, " ", fi.Mode(), " ", fi.Size()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
