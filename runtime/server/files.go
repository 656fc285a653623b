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
		return "", errs.Field(field, "%s %s: path must be relative to the workspace root", op, p)
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

func (s *Server) read(ctx context.Context, req *protocol.Request) (any, error) {
	p, err := cleanPath("read", "path", req.Path)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK so a FIFO made by a command cannot hang the request; it
	// changes nothing for regular files.
	f, err := s.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
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
	p, err := cleanPath("write", "path", req.Path)
	if err != nil {
		return nil, err
	}
	if p == "." {
		return nil, errs.Field("path", "write: path is required")
	}
	if int64(len(req.Data)) > s.maxFile {
		return nil, errs.E(errs.TooLarge, "write %s: %d bytes is over the %d byte limit", p, len(req.Data), s.maxFile)
	}
	f, err := s.openForWrite(p, req.Mode, true)
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
	return infoOf(p, fi), nil
}

func (s *Server) stat(ctx context.Context, req *protocol.Request) (any, error) {
	p, err := cleanPath("stat", "path", req.Path)
	if err != nil {
		return nil, err
	}
	fi, err := s.root.Lstat(p)
	if err != nil {
		return nil, fsError("stat", p, err)
	}
	return infoOf(p, fi), nil
}

func (s *Server) list(ctx context.Context, req *protocol.Request) (any, error) {
	p, err := cleanPath("list", "path", req.Path)
	if err != nil {
		return nil, err
	}
	f, err := s.root.Open(p)
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
	for _, e := range ents {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while listing
		}
		if err != nil {
			return nil, fsError("list", p, err)
		}
		out = append(out, infoOf(path.Join(filepath.ToSlash(p), e.Name()), fi))
	}
	return protocol.ListResult{Entries: out}, nil
}

func (s *Server) remove(ctx context.Context, req *protocol.Request) (any, error) {
	p, err := cleanPath("remove", "path", req.Path)
	if err != nil {
		return nil, err
	}
	if p == "." {
		return nil, errs.Field("path", "remove: refusing to remove the workspace root")
	}
	// Lstat first so a missing path is not_found for both forms: RemoveAll
	// alone would report success.
	if _, err := s.root.Lstat(p); err != nil {
		return nil, fsError("remove", p, err)
	}
	if req.Recursive {
		err = s.root.RemoveAll(p)
	} else {
		err = s.root.Remove(p)
	}
	if err != nil {
		return nil, fsError("remove", p, err)
	}
	return nil, nil
}

func (s *Server) mkdir(ctx context.Context, req *protocol.Request) (any, error) {
	p, err := cleanPath("mkdir", "path", req.Path)
	if err != nil {
		return nil, err
	}
	mode := os.FileMode(req.Mode & 0o7777)
	if mode == 0 {
		mode = 0o755
	}
	if req.Parents {
		err = s.root.MkdirAll(p, mode)
	} else {
		err = s.root.Mkdir(p, mode)
	}
	if err != nil {
		return nil, fsError("mkdir", p, err)
	}
	return nil, nil
}

func (s *Server) rename(ctx context.Context, req *protocol.Request) (any, error) {
	from, err := cleanPath("rename", "from", req.From)
	if err != nil {
		return nil, err
	}
	to, err := cleanPath("rename", "to", req.To)
	if err != nil {
		return nil, err
	}
	if from == "." || to == "." {
		return nil, errs.Field("from", "rename: cannot move the workspace root")
	}
	if err := s.root.Rename(from, to); err != nil {
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
func (s *Server) openForWrite(p string, reqMode uint32, mkdir bool) (*os.File, error) {
	if dir := filepath.Dir(p); dir != "." && mkdir {
		if err := s.root.MkdirAll(dir, 0o755); err != nil {
			return nil, fsError("write", p, err)
		}
	}
	mode := os.FileMode(reqMode & 0o7777)
	if mode == 0 {
		mode = 0o644
	}
	f, err := s.root.OpenFile(p, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, mode)
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
