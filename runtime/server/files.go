package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// cleanPath checks that p names something inside the root and returns it in
// the form os.Root expects. The lexical check gives a clear error for the
// common mistakes; os.Root enforces the rule again against symlinks.
func cleanPath(op, field, p string) (string, error) {
	if p == "" || p == "." {
		return ".", nil
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", errs.Field(field, "%s %q: path contains a NUL byte", op, p)
	}
	if filepath.IsAbs(p) {
		return "", errs.Field(field, "%s %s: path must be relative to the workspace root; this runtime serves the workspace's directory, not a whole sandbox (absolute paths work on isolated backends: container, kubernetes, vm machines)", op, p)
	}
	if !filepath.IsLocal(p) {
		return "", errs.Field(field, "%s %s: path escapes the workspace root", op, p)
	}
	return filepath.Clean(p), nil
}

// fsError gives an error from a file operation its kind, naming the path as
// the caller gave it so no host path leaks into the message.
func fsError(op, p string, err error) error {
	var errno syscall.Errno
	cause := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		cause = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		cause = le.Err
	}
	kind := errs.Other
	switch {
	case isEscape(cause):
		return errs.E(errs.Invalid, "%s %s: path escapes the workspace root", op, p)
	case errors.Is(cause, fs.ErrNotExist):
		kind = errs.NotFound
	case errors.Is(cause, fs.ErrExist), errors.Is(cause, syscall.ENOTEMPTY):
		kind = errs.Conflict
	case errors.Is(cause, fs.ErrPermission):
		kind = errs.Forbidden
	case errors.Is(cause, syscall.EISDIR), errors.Is(cause, syscall.ENOTDIR),
		errors.Is(cause, syscall.EINVAL), errors.Is(cause, syscall.ELOOP):
		kind = errs.Invalid
	case errors.As(cause, &errno) && errno == syscall.EFBIG:
		kind = errs.TooLarge
	}
	return errs.E(kind, "%s %s: %w", op, p, cause)
}

// isEscape recognises os.Root's refusal to leave the root. Its error value
// is unexported, so the message is the only handle on it; the escape tests
// fail if it ever changes.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

func infoOf(rel string, fi fs.FileInfo) protocol.FileInfo {
	m := fi.Mode()
	mode := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	name := fi.Name()
	if rel == "." {
		name = "."
	}
	return protocol.FileInfo{
		Name:      name,
		Path:      filepath.ToSlash(rel),
		Size:      fi.Size(),
		Mode:      mode,
		ModTime:   fi.ModTime(),
		IsDir:     fi.IsDir(),
		IsSymlink: m&fs.ModeSymlink != 0,
	}
}

// linked fills a symlink's target, as the link holds it; a link that
// cannot be read keeps none.
func linked(f fsys, name string, info protocol.FileInfo) protocol.FileInfo {
	if info.IsSymlink {
		info.LinkTarget, _ = f.Readlink(name)
	}
	return info
}

func (s *Server) read(ctx context.Context, req *protocol.Request) (any, error) {
	t, err := s.resolve("read", "path", req.Path)
	if err != nil {
		return nil, err
	}
	p := t.name
	// O_NONBLOCK so a FIFO made by a command cannot hang the request; it
	// changes nothing for regular files.
	f, err := t.fs.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fsError("read", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fsError("read", p, err)
	}
	if fi.IsDir() {
		return nil, errs.E(errs.Invalid, "read %s: is a directory", p)
	}
	if !fi.Mode().IsRegular() {
		return nil, errs.E(errs.Invalid, "read %s: not a regular file", p)
	}
	if fi.Size() > s.maxFile {
		return nil, errs.E(errs.TooLarge, "read %s: %d bytes is over the %d byte limit", p, fi.Size(), s.maxFile)
	}
	data, err := readLimited(f, fi.Size(), s.maxFile)
	if err != nil {
		if errs.Is(err, errs.TooLarge) {
			return nil, errs.E(errs.TooLarge, "read %s: over the %d byte limit", p, s.maxFile)
		}
		return nil, fsError("read", p, err)
	}
	return protocol.ReadResult{Data: data}, nil
}

// readLimited reads r to the end into a buffer sized from the file's size,
// so a small file costs one allocation and one read. It reads past size and
// stops at limit: a file that grows (or a /proc file that reports size 0)
// cannot slip a larger frame through.
func readLimited(r io.Reader, size, limit int64) ([]byte, error) {
	buf := make([]byte, 0, min(max(size, 512), limit)+1)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return nil, errs.E(errs.TooLarge, "over the limit")
			}
			buf = slices.Grow(buf, min(len(buf), int(limit)+1-len(buf)))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, errs.E(errs.TooLarge, "over the limit")
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (s *Server) write(ctx context.Context, req *protocol.Request) (any, error) {
	t, owner, err := s.writeTarget("write", req)
	if err != nil {
		return nil, err
	}
	p := t.name
	if int64(len(req.Data)) > s.maxFile {
		return nil, errs.E(errs.TooLarge, "write %s: %d bytes is over the %d byte limit", p, len(req.Data), s.maxFile)
	}
	f, err := s.openForWrite(t, req.Mode, true, owner)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(req.Data)
	if err == nil {
		err = f.Truncate(int64(len(req.Data)))
	}
	if req.Mode != 0 && err == nil {
		// An existing file keeps its mode on open; an explicit mode is applied.
		err = f.Chmod(os.FileMode(req.Mode & 0o7777))
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fsError("write", p, err)
	}
	// The written file's description saves the caller a stat round trip.
	return s.owners().name(infoOf(p, fi), fi), nil
}

func (s *Server) stat(ctx context.Context, req *protocol.Request) (any, error) {
	t, err := s.resolve("stat", "path", req.Path)
	if err != nil {
		return nil, err
	}
	p := t.name
	fi, err := t.fs.Lstat(p)
	if err != nil {
		return nil, fsError("stat", p, err)
	}
	return linked(t.fs, p, s.owners().name(infoOf(p, fi), fi)), nil
}

func (s *Server) list(ctx context.Context, req *protocol.Request) (any, error) {
	t, err := s.resolve("list", "path", req.Path)
	if err != nil {
		return nil, err
	}
	p := t.name
	f, err := t.fs.Open(p)
	if err != nil {
		return nil, fsError("list", p, err)
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, fsError("list", p, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := make([]protocol.FileInfo, 0, len(ents))
	names := s.owners()
	for _, e := range ents {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while listing
		}
		if err != nil {
			return nil, fsError("list", p, err)
		}
		ep := path.Join(filepath.ToSlash(p), e.Name())
		out = append(out, linked(t.fs, ep, names.name(infoOf(ep, fi), fi)))
	}
	return protocol.ListResult{Entries: out}, nil
}

func (s *Server) remove(ctx context.Context, req *protocol.Request) (any, error) {
	t, err := s.resolve("remove", "path", req.Path)
	if err != nil {
		return nil, err
	}
	p := t.name
	if t.top() {
		return nil, errs.Field("path", "remove %s: refusing to remove the workspace root or the sandbox's", req.Path)
	}
	if err := s.guardHistory("remove", t, true); err != nil {
		return nil, err
	}
	// Lstat first so a missing path is not_found for both forms: RemoveAll
	// alone would report success.
	if _, err := t.fs.Lstat(p); err != nil {
		return nil, fsError("remove", p, err)
	}
	if req.Recursive {
		err = t.fs.RemoveAll(p)
	} else {
		err = t.fs.Remove(p)
	}
	if err != nil {
		return nil, fsError("remove", p, err)
	}
	return nil, nil
}

func (s *Server) mkdir(ctx context.Context, req *protocol.Request) (any, error) {
	t, err := s.resolve("mkdir", "path", req.Path)
	if err != nil {
		return nil, err
	}
	p := t.name
	if err := s.guardHistory("mkdir", t, false); err != nil {
		return nil, err
	}
	owner, err := s.userOf(req.User)
	if err != nil {
		return nil, err
	}
	mode := os.FileMode(req.Mode & 0o7777)
	if mode == 0 {
		mode = 0o755
	}
	if req.Parents {
		err = mkdirAll(t.fs, p, mode, owner)
	} else {
		err = mkdirAs(t.fs, p, mode, owner)
	}
	if err != nil {
		return nil, fsError("mkdir", p, err)
	}
	return nil, nil
}

func (s *Server) rename(ctx context.Context, req *protocol.Request) (any, error) {
	ft, err := s.resolve("rename", "from", req.From)
	if err != nil {
		return nil, err
	}
	tt, err := s.resolve("rename", "to", req.To)
	if err != nil {
		return nil, err
	}
	if ft.top() || tt.top() {
		return nil, errs.Field("from", "rename: cannot move the workspace root")
	}
	for _, t := range []target{ft, tt} {
		if err := s.guardHistory("rename", t, true); err != nil {
			return nil, err
		}
	}
	from, to := ft.name, tt.name
	fsys := fsys(s.root)
	if ft.abs || tt.abs {
		// One side is outside the root: both sides as the sandbox sees
		// them.
		fsys, from, to = hostFS{}, s.hostPath(ft), s.hostPath(tt)
	}
	if err := fsys.Rename(from, to); err != nil {
		return nil, fsError("rename", fmt.Sprintf("%s -> %s", from, to), err)
	}
	return nil, nil
}

// openForWrite opens p for writing, made with mode (0: 0644) if absent and
// with its parent directories when mkdir is set, and refuses anything but a
// regular file. No O_TRUNC: ext4 flushes a file truncated to zero and
// rewritten when it is closed, which costs milliseconds per write;
// overwriting and then truncating to the new length ends in the same
// content. O_NONBLOCK so a FIFO cannot hang the request.
//
// With an owner, what it creates (the file, missing parents) is given to
// that user; an existing file keeps its owner.
func (s *Server) openForWrite(t target, reqMode uint32, mkdir bool, owner *account) (*os.File, error) {
	p := t.name
	if dir := filepath.Dir(p); dir != "." && dir != "/" && mkdir {
		if err := mkdirAll(t.fs, dir, 0o755, owner); err != nil {
			return nil, fsError("write", p, err)
		}
	}
	mode := os.FileMode(reqMode & 0o7777)
	if mode == 0 {
		mode = 0o644
	}
	const flags = os.O_WRONLY | os.O_CREATE | syscall.O_NONBLOCK
	var f *os.File
	var err error
	if owner != nil {
		// O_EXCL tells a file this call creates, which is the owner's,
		// from an existing one, which keeps its owner.
		if f, err = t.fs.OpenFile(p, flags|os.O_EXCL, mode); err == nil {
			if err = owner.chown(f); err != nil {
				_ = f.Close()
				return nil, fsError("write", p, err)
			}
		}
	}
	if f == nil {
		f, err = t.fs.OpenFile(p, flags, mode)
	}
	if err != nil {
		return nil, fsError("write", p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fsError("write", p, err)
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, errs.E(errs.Invalid, "write %s: not a regular file", p)
	}
	return f, nil
}

// writeTarget resolves the path and user of a write or write.range.
func (s *Server) writeTarget(op string, req *protocol.Request) (target, *account, error) {
	t, err := s.resolve(op, "path", req.Path)
	if err != nil {
		return target{}, nil, err
	}
	if t.top() {
		return target{}, nil, errs.Field("path", "%s: path is required", op)
	}
	if err := s.guardHistory(op, t, false); err != nil {
		return target{}, nil, err
	}
	owner, err := s.userOf(req.User)
	if err != nil {
		return target{}, nil, err
	}
	return t, owner, nil
}

// mkdirAs makes one directory, given to owner when there is one.
func mkdirAs(fsys fsys, p string, mode os.FileMode, owner *account) error {
	if err := fsys.Mkdir(p, mode); err != nil {
		return err
	}
	if owner == nil {
		return nil
	}
	d, err := fsys.Open(p)
	if err != nil {
		return err
	}
	defer d.Close()
	return owner.chown(d)
}

// mkdirAll makes p and its missing parents; those it makes are given to
// owner when there is one. An existing directory is accepted.
func mkdirAll(fsys fsys, p string, mode os.FileMode, owner *account) error {
	if owner == nil {
		return fsys.MkdirAll(p, mode)
	}
	fi, err := fsys.Stat(p)
	if err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err // an escape, a permission: nothing to make
	}
	if parent := filepath.Dir(p); parent != p && parent != "." {
		if err := mkdirAll(fsys, parent, 0o755, owner); err != nil {
			return err
		}
	}
	err = mkdirAs(fsys, p, mode, owner)
	if errors.Is(err, fs.ErrExist) {
		// Made meanwhile by someone else: a directory is what was asked.
		fi, serr := fsys.Stat(p)
		if serr != nil {
			return serr
		}
		if fi.IsDir() {
			return nil
		}
	}
	return err
}
