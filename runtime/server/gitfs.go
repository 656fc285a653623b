package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/go-git/go-billy/v5"
)

// rootFS is the billy.Filesystem go-git's object storage runs on, confined
// to an os.Root: a symlink an agent plants inside .state cannot make the
// runtime read or write outside it. It follows osfs's behaviour where
// go-git relies on it: creating a file or renaming into a missing
// directory creates the directory.
type rootFS struct {
	root *os.Root
}

var (
	_ billy.Filesystem = (*rootFS)(nil)
	_ billy.Chmod      = (*rootFS)(nil)
)

// rel turns a billy path into one os.Root accepts.
func (*rootFS) rel(name string) string {
	name = path.Clean("/" + strings.ReplaceAll(name, "\\", "/"))
	if name == "/" {
		return "."
	}
	return name[1:]
}

func (r *rootFS) Create(name string) (billy.File, error) {
	return r.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (r *rootFS) Open(name string) (billy.File, error) {
	return r.OpenFile(name, os.O_RDONLY, 0)
}

func (r *rootFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	p := r.rel(name)
	f, err := r.root.OpenFile(p, flag, perm.Perm())
	if flag&os.O_CREATE != 0 && r.retryInParent(p, err) {
		f, err = r.root.OpenFile(p, flag, perm.Perm())
	}
	if err != nil {
		return nil, err
	}
	return &rootFile{File: f, name: p}, nil
}

// retryInParent creates p's parent directory after err said it is
// missing, and reports whether to try again. Trying first and creating
// only when needed spares every write the syscalls of MkdirAll, which
// matter on a commit's short path.
func (r *rootFS) retryInParent(p string, err error) bool {
	if !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	dir := path.Dir(p)
	return dir != "." && r.root.MkdirAll(dir, 0o755) == nil
}

func (r *rootFS) Stat(name string) (os.FileInfo, error)  { return r.root.Stat(r.rel(name)) }
func (r *rootFS) Lstat(name string) (os.FileInfo, error) { return r.root.Lstat(r.rel(name)) }
func (r *rootFS) Remove(name string) error               { return r.root.Remove(r.rel(name)) }
func (r *rootFS) Join(elem ...string) string             { return path.Join(elem...) }
func (r *rootFS) Readlink(name string) (string, error)   { return r.root.Readlink(r.rel(name)) }
func (r *rootFS) Root() string                           { return r.root.Name() }

func (r *rootFS) Chmod(name string, mode os.FileMode) error {
	return r.root.Chmod(r.rel(name), mode)
}

func (r *rootFS) Rename(from, to string) error {
	from, to = r.rel(from), r.rel(to)
	err := r.root.Rename(from, to)
	if r.retryInParent(to, err) {
		// The source may be what is missing: then this fails the same way.
		err = r.root.Rename(from, to)
	}
	return err
}

// MkdirAll drops type bits: go-git passes os.ModeDir, which os.Root
// refuses.
func (r *rootFS) MkdirAll(name string, perm os.FileMode) error {
	return r.root.MkdirAll(r.rel(name), perm.Perm())
}

func (r *rootFS) Symlink(target, link string) error {
	link = r.rel(link)
	err := r.root.Symlink(target, link)
	if r.retryInParent(link, err) {
		err = r.root.Symlink(target, link)
	}
	return err
}

func (r *rootFS) ReadDir(name string) ([]os.FileInfo, error) {
	f, err := r.root.Open(r.rel(name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]os.FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, fi)
	}
	slices.SortFunc(out, func(a, b os.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// TempFile creates a new file in dir; go-git writes objects to one and
// renames it into place.
func (r *rootFS) TempFile(dir, prefix string) (billy.File, error) {
	dir = r.rel(dir)
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		p := path.Join(dir, prefix+hex.EncodeToString(b[:]))
		f, err := r.root.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if r.retryInParent(p, err) {
			f, err = r.root.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &rootFile{File: f, name: p}, nil
	}
}

// Chroot is used by go-git for submodules and alternates only, which this
// repository never has; the sub-root lives as long as the process.
func (r *rootFS) Chroot(name string) (billy.Filesystem, error) {
	sub, err := r.root.OpenRoot(r.rel(name))
	if err != nil {
		return nil, err
	}
	return &rootFS{root: sub}, nil
}

// rootFile is an os.File named relative to its rootFS, as go-git expects
// when it renames a temporary file, with flock(2) locks.
type rootFile struct {
	*os.File
	name string
}

func (f *rootFile) Name() string { return f.name }
func (f *rootFile) Lock() error  { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
func (f *rootFile) Unlock() error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
