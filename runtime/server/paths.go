package server

// Where a request's path points. A relative path resolves inside the
// workspace root through an os.Root, which refuses escapes even through
// symlinks. An absolute path is refused, unless the runtime serves a whole
// sandbox (--fs=whole: a container, a pod, a machine of its own), where it
// names that file of the sandbox through the plain os functions, symlinks
// followed as any program of the sandbox would.

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// fsys is what the file operations use of an os.Root; hostFS gives the
// same over the sandbox's whole file system.
type fsys interface {
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
	Open(name string) (*os.File, error)
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	Remove(name string) error
	RemoveAll(name string) error
	Mkdir(name string, perm fs.FileMode) error
	MkdirAll(name string, perm fs.FileMode) error
	Rename(oldname, newname string) error
	Readlink(name string) (string, error)
}

var _ fsys = (*os.Root)(nil)

// hostFS is the sandbox's whole file system; names are absolute.
type hostFS struct{}

func (hostFS) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (hostFS) Open(name string) (*os.File, error)        { return os.Open(name) }
func (hostFS) Stat(name string) (fs.FileInfo, error)     { return os.Stat(name) }
func (hostFS) Lstat(name string) (fs.FileInfo, error)    { return os.Lstat(name) }
func (hostFS) Remove(name string) error                  { return os.Remove(name) }
func (hostFS) RemoveAll(name string) error               { return os.RemoveAll(name) }
func (hostFS) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }
func (hostFS) MkdirAll(name string, perm fs.FileMode) error {
	return os.MkdirAll(name, perm)
}
func (hostFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }
func (hostFS) Readlink(name string) (string, error) { return os.Readlink(name) }

// target is a resolved request path: the file system it is in and its
// name there ("." or "/" for the top).
type target struct {
	fs   fsys
	name string
	abs  bool
}

// top says the target is the workspace root or the sandbox's "/".
func (t target) top() bool { return t.name == "." || t.name == "/" }

// resolve checks the path p of field for op and says where it points.
func (s *Server) resolve(op, field, p string) (target, error) {
	if filepath.IsAbs(p) && s.whole {
		if strings.IndexByte(p, 0) >= 0 {
			return target{}, errs.Field(field, "%s %q: path contains a NUL byte", op, p)
		}
		return target{fs: hostFS{}, name: filepath.Clean(p), abs: true}, nil
	}
	rel, err := cleanPath(op, field, p)
	if err != nil {
		return target{}, err
	}
	return target{fs: s.root, name: rel}, nil
}

// hostPath is where t is on the sandbox's file system.
func (s *Server) hostPath(t target) string {
	if t.abs {
		return t.name
	}
	return filepath.Join(s.rootPath, t.name)
}

// guardHistory refuses a change through an absolute path to the
// workspace's history (<root>/.state) or to a directory holding it. The
// history is changed only by the state operations and, through relative
// paths, by callers that check those themselves (the platform's files API
// refuses .state): an absolute path, which only whole-filesystem mode
// accepts, must not open a way around that check, whether it names the
// history directly, through a symlink, or by removing or moving a
// directory above it. Relative paths are left as they were.
// moves is set for remove and rename, which take a directory's content
// with it: they are refused above the history too.
func (s *Server) guardHistory(op string, t target, moves bool) error {
	if !t.abs {
		return nil
	}
	state := filepath.Join(s.rootPath, protocol.StateDir)
	// Remove and rename act on a last element that is a symlink itself,
	// not on its target; open and mkdir follow it.
	reached := []string{t.name, resolveParent(t.name)}
	if !moves {
		reached = append(reached, resolveExisting(t.name))
	}
	for _, p := range reached {
		if within(p, state) || (moves && within(state, p)) {
			return errs.E(errs.Forbidden, "%s %s: %s holds the workspace's history, changed only by its state operations", op, t.name, state)
		}
	}
	return nil
}

// within says p is dir or below it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// resolveParent is p with its parent's symlinks resolved and its last
// element kept as it is: what remove and rename act on.
func resolveParent(p string) string {
	if p == "/" {
		return p
	}
	return filepath.Join(resolveExisting(filepath.Dir(p)), filepath.Base(p))
}

// resolveExisting is p with the symlinks of its longest existing prefix
// resolved: what open and mkdir reach.
func resolveExisting(p string) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
