package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

func (s *Server) stateRestore(ctx context.Context, req *protocol.Request) (any, error) {
	const op = "state.restore"
	h, err := parseCommitID(op, "commit", req.Commit)
	if err != nil {
		return nil, err
	}
	sig, msg, err := signature(op, req)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lockState(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, err := s.openState(op, false)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errs.E(errs.NotFound, "%s: commit %s not found", op, h)
	}
	c, err := r.commit(op, h)
	if err != nil {
		return nil, err
	}
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("%s: tree of %s: %w", op, h, err)
	}
	rs := &restorer{
		r:  r,
		sc: &scanner{s: s, r: r, racy: -1, files: map[string]treeFile{}, hashes: map[string]cachedHash{}},
	}
	if err := rs.dir(s.root, "", t); err != nil {
		return nil, err
	}
	res, err := s.record(op, r, sig, msg)
	if err != nil {
		return nil, err
	}
	return protocol.StateRestoreResult{Commit: res.Commit, RestoredFrom: h.String(), Changed: res.Changed}, nil
}

// restorer makes the work tree equal to a tree. It works through an
// os.Root per directory and never follows a symlink: a link in the work
// tree is replaced, not written through, so nothing outside the root is
// touched. What the history cannot hold (files over the size limit,
// sockets, FIFOs, devices) is left in place.
type restorer struct {
	r  *stateRepo
	sc *scanner // hashes work tree files, without storing them
}

// dir restores directory d, at rel in the work tree, to t; a nil t empties
// it of everything the history could hold.
func (rs *restorer) dir(d *os.Root, rel string, t *object.Tree) error {
	const op = "state.restore"
	want := map[string]object.TreeEntry{}
	if t != nil {
		for _, e := range t.Entries {
			// A crafted tree could name "..", a path or .state itself.
			if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") ||
				(rel == "" && e.Name == protocol.StateDir) || e.Mode == filemode.Submodule {
				continue
			}
			want[e.Name] = e
		}
	}
	names, err := readNames(d)
	if err != nil {
		return fsError(op, dirName(rel), err)
	}
	for _, name := range names {
		if _, keep := want[name]; keep || (rel == "" && name == protocol.StateDir) {
			continue
		}
		p := path.Join(rel, name)
		fi, err := d.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fsError(op, p, err)
		}
		if fi.IsDir() {
			if err := rs.subdir(d, name, p, nil); err != nil {
				return err
			}
			// What is left in it is what the history cannot hold.
			if err := d.Remove(name); err != nil && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, fs.ErrExist) {
				return fsError(op, p, err)
			}
			continue
		}
		if !rs.holdable(fi) {
			continue
		}
		if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fsError(op, p, err)
		}
	}
	keys := make([]string, 0, len(want))
	for name := range want {
		keys = append(keys, name)
	}
	slices.Sort(keys)
	for _, name := range keys {
		e := want[name]
		p := path.Join(rel, name)
		fi, err := d.Lstat(name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fsError(op, p, err)
		}
		exists := err == nil
		switch e.Mode {
		case filemode.Dir:
			if exists && !fi.IsDir() {
				if err := d.Remove(name); err != nil {
					return fsError(op, p, err)
				}
				exists = false
			}
			if !exists {
				if err := d.Mkdir(name, 0o755); err != nil {
					return fsError(op, p, err)
				}
			}
			sub, err := object.GetTree(rs.r.st, e.Hash)
			if err != nil {
				return fmt.Errorf("%s: %s: tree %s: %w", op, p, e.Hash, err)
			}
			if err := rs.subdir(d, name, p, sub); err != nil {
				return err
			}
		case filemode.Symlink:
			target, err := rs.r.bytesOf(e.Hash)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", op, p, err)
			}
			if exists && fi.Mode()&fs.ModeSymlink != 0 {
				if cur, err := d.Readlink(name); err == nil && cur == string(target) {
					continue
				}
			}
			if exists {
				if err := removeEntry(d, name, fi); err != nil {
					return fsError(op, p, err)
				}
			}
			if err := d.Symlink(string(target), name); err != nil {
				return fsError(op, p, err)
			}
		default: // regular and executable files
			if err := rs.file(d, name, p, e, fi, exists); err != nil {
				return err
			}
		}
	}
	return nil
}

// subdir restores directory name of d, opened as its own root.
func (rs *restorer) subdir(d *os.Root, name, p string, t *object.Tree) error {
	sub, err := d.OpenRoot(name)
	if err != nil {
		return fsError("state.restore", p, err)
	}
	defer sub.Close()
	return rs.dir(sub, p, t)
}

// file makes name a regular file with e's content and executable bit. A
// file that differs is replaced, never rewritten in place: a hard link to
// it from outside the root is not written through.
func (rs *restorer) file(d *os.Root, name, p string, e object.TreeEntry, fi fs.FileInfo, exists bool) error {
	const op = "state.restore"
	exec := e.Mode == filemode.Executable
	perm := os.FileMode(0o644)
	if exists && fi.Mode().IsRegular() {
		h, _, ok, err := rs.sc.file(d, name, p, fi)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if ok && h == e.Hash && (fi.Mode()&0o100 != 0) == exec {
			return nil
		}
		// The other permission bits stay as they were.
		perm = fi.Mode().Perm()
	}
	perm = execBit(perm, exec)
	data, err := rs.r.bytesOf(e.Hash)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", op, p, err)
	}
	if exists {
		if err := removeEntry(d, name, fi); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fsError(op, p, err)
		}
	}
	// O_EXCL|O_NOFOLLOW: whatever appeared in the meantime, link or not,
	// is an error rather than written through.
	f, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return fsError(op, p, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // the umask narrowed it
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fsError(op, p, err)
	}
	return nil
}

// holdable says whether the history could hold a non-directory: what it
// cannot is left alone by a restore, as no commit has it.
func (rs *restorer) holdable(fi fs.FileInfo) bool {
	m := fi.Mode()
	return m&fs.ModeSymlink != 0 || m.IsRegular() && fi.Size() <= rs.sc.s.maxFile
}

// execBit sets or clears the executable bits of perm, as git checkout does.
func execBit(perm os.FileMode, exec bool) os.FileMode {
	if exec {
		return perm | 0o111
	}
	return perm &^ 0o111
}

// removeEntry removes name of d, a directory with its content; symlinks
// are removed, never followed.
func removeEntry(d *os.Root, name string, fi fs.FileInfo) error {
	if fi.IsDir() {
		return d.RemoveAll(name)
	}
	return d.Remove(name)
}

func dirName(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}
