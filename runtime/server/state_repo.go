package server

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// stateConfig makes `git --git-dir=ROOT/.state` find its work tree by
// itself; go-git never reads it.
const stateConfig = `[core]
	repositoryformatversion = 0
	filemode = true
	bare = false
	worktree = ..
	logallrefupdates = false
`

// treeFile is a file of a commit's tree: its blob and mode.
type treeFile struct {
	hash plumbing.Hash
	mode filemode.FileMode
}

// stateRepo is the open history. It is only used under Server.stateMu.
type stateRepo struct {
	dir      *os.Root // the .state directory
	dev, ino uint64   // .state's identity when opened, to notice it replaced
	fs       *rootFS
	st       *filesystem.Storage

	head  plumbing.Hash       // refs/heads/main as last read; zero before the first commit
	files map[string]treeFile // head's tree, flattened
	// hashes maps a work tree path to its blob while its stat data holds.
	hashes map[string]cachedHash
	// known holds objects certainly in the store, so they are neither
	// looked up nor written again.
	known map[plumbing.Hash]struct{}
}

// openState returns the history, opening or (with create) initialising
// it. Without create and without a repository it returns nil. The caller
// holds stateMu.
func (s *Server) openState(op string, create bool) (*stateRepo, error) {
	fi, err := s.root.Lstat(protocol.StateDir)
	if errors.Is(err, fs.ErrNotExist) {
		s.dropState()
		if !create {
			return nil, nil
		}
		if err := s.root.Mkdir(protocol.StateDir, 0o755); err != nil {
			return nil, fsError(op, protocol.StateDir, err)
		}
		fi, err = s.root.Lstat(protocol.StateDir)
	}
	if err != nil {
		return nil, fsError(op, protocol.StateDir, err)
	}
	if !fi.IsDir() {
		s.dropState()
		return nil, errs.E(errs.Conflict, "%s: %s is not a directory", op, protocol.StateDir)
	}
	sys := fi.Sys().(*syscall.Stat_t)
	if r := s.state; r != nil && r.dev == uint64(sys.Dev) && r.ino == sys.Ino {
		if err := r.refresh(); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		return r, nil
	}
	// New, or replaced behind the runtime's back (rm -rf .state): start
	// from what is on disk.
	s.dropState()
	dir, err := s.root.OpenRoot(protocol.StateDir)
	if err != nil {
		return nil, fsError(op, protocol.StateDir, err)
	}
	r := &stateRepo{
		dir:    dir,
		dev:    uint64(sys.Dev),
		ino:    sys.Ino,
		fs:     &rootFS{root: dir},
		hashes: map[string]cachedHash{},
		known:  map[plumbing.Hash]struct{}{},
	}
	r.st = filesystem.NewStorage(r.fs, cache.NewObjectLRUDefault())
	if _, err := dir.Lstat("HEAD"); errors.Is(err, fs.ErrNotExist) {
		if !create {
			_ = dir.Close()
			return nil, nil
		}
		err = r.init()
		if err != nil {
			_ = dir.Close()
			return nil, fmt.Errorf("%s: init %s: %w", op, protocol.StateDir, err)
		}
	} else if err != nil {
		_ = dir.Close()
		return nil, fsError(op, protocol.StateDir+"/HEAD", err)
	}
	if err := r.refresh(); err != nil {
		_ = dir.Close()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	s.state = r
	return r, nil
}

// dropState forgets the open history and its caches.
func (s *Server) dropState() {
	if s.state != nil {
		_ = s.state.dir.Close()
		s.state = nil
	}
}

// init lays out an empty repository whose HEAD is main.
func (r *stateRepo) init() error {
	if err := r.st.Init(); err != nil {
		return err
	}
	if err := r.writeFile("config", stateConfig); err != nil {
		return err
	}
	// The git CLI, pointed at the work tree, would list .state as untracked.
	if err := r.writeFile("info/exclude", "/"+protocol.StateDir+"/\n"); err != nil {
		return err
	}
	// HEAD last: its presence is what makes the directory a repository.
	return r.writeFile("HEAD", "ref: "+stateBranch.String()+"\n")
}

// writeFile replaces a file of the repository atomically, so a crash never
// leaves a ref half written.
func (r *stateRepo) writeFile(name, content string) error {
	f, err := r.fs.TempFile(".", "tmp_")
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(content))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.fs.Rename(f.Name(), name)
	}
	if err != nil {
		_ = r.fs.Remove(f.Name())
	}
	return err
}

// refresh reads refs/heads/main and, if it moved, the files of its tree.
// A branch that moved or vanished behind the runtime's back (a command ran
// git on .state, or replaced it) may come with objects gone too: then
// nothing is assumed stored any more.
func (r *stateRepo) refresh() error {
	ref, err := r.st.Reference(stateBranch)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		if !r.head.IsZero() {
			r.known = map[plumbing.Hash]struct{}{}
		}
		r.head, r.files = plumbing.ZeroHash, map[string]treeFile{}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", stateBranch, err)
	}
	if ref.Hash() == r.head && r.files != nil {
		return nil
	}
	if r.files != nil {
		r.known = map[plumbing.Hash]struct{}{}
	}
	c, err := object.GetCommit(r.st, ref.Hash())
	if err != nil {
		return fmt.Errorf("read head commit %s: %w", ref.Hash(), err)
	}
	files := map[string]treeFile{}
	if err := r.flatten(c.TreeHash, "", files); err != nil {
		return fmt.Errorf("read head commit %s: %w", ref.Hash(), err)
	}
	r.head, r.files = ref.Hash(), files
	return nil
}

// flatten adds the files of tree h, under prefix, to out.
func (r *stateRepo) flatten(h plumbing.Hash, prefix string, out map[string]treeFile) error {
	t, err := object.GetTree(r.st, h)
	if err != nil {
		return fmt.Errorf("tree %s: %w", h, err)
	}
	r.known[h] = struct{}{}
	for _, e := range t.Entries {
		p := path.Join(prefix, e.Name)
		switch e.Mode {
		case filemode.Dir:
			if err := r.flatten(e.Hash, p, out); err != nil {
				return err
			}
		case filemode.Submodule:
		default:
			out[p] = treeFile{hash: e.Hash, mode: e.Mode}
		}
	}
	return nil
}

// store writes an object unless the store has it.
func (r *stateRepo) store(h plumbing.Hash, typ plumbing.ObjectType, data []byte) error {
	if _, ok := r.known[h]; ok {
		return nil
	}
	err := r.st.HasEncodedObject(h)
	if err != nil && !errors.Is(err, plumbing.ErrObjectNotFound) {
		return fmt.Errorf("look up object %s: %w", h, err)
	}
	if err != nil {
		o := r.st.NewEncodedObject()
		o.SetType(typ)
		o.SetSize(int64(len(data)))
		w, err := o.Writer()
		if err == nil {
			_, err = w.Write(data)
		}
		if err != nil {
			return fmt.Errorf("write object %s: %w", h, err)
		}
		if _, err := r.st.SetEncodedObject(o); err != nil {
			return fmt.Errorf("write object %s: %w", h, err)
		}
	}
	r.known[h] = struct{}{}
	return nil
}

// commit reads commit h; a missing one is errs.NotFound.
func (r *stateRepo) commit(op string, h plumbing.Hash) (*object.Commit, error) {
	c, err := object.GetCommit(r.st, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, errs.E(errs.NotFound, "%s: commit %s not found", op, h)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read commit %s: %w", op, h, err)
	}
	return c, nil
}

// bytesOf reads a blob's content.
func (r *stateRepo) bytesOf(h plumbing.Hash) ([]byte, error) {
	b, err := object.GetBlob(r.st, h)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	defer rd.Close()
	var buf bytes.Buffer
	buf.Grow(int(b.Size))
	if _, err := buf.ReadFrom(rd); err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	return buf.Bytes(), nil
}
