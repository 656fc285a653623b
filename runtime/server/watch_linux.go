package server

// watch.start and watch.stop: a directory watched with inotify, events
// streamed as watch.event frames under the request's id. One inotify
// instance per watch, read through the runtime poller (a non-blocking fd
// in an os.File), so closing it ends the reader at once.

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// watchMask is what a watched directory reports: the events envd names.
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_DELETE | unix.IN_DELETE_SELF |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_MOVE_SELF | unix.IN_ATTRIB |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// watch is one running watch.start.
type watch struct {
	c         *conn
	id        uint64
	f         *os.File // the inotify instance
	fd        int
	root      string // the watched directory on this machine
	recursive bool

	mu      sync.Mutex
	dirs    map[int]string // watch descriptor -> directory relative to root ("" is root)
	rootWD  int
	stopped atomic.Bool
}

// startWatch arms a watch and answers once it is; its events follow.
func (c *conn) startWatch(req *protocol.Request) {
	w, err := c.s.newWatch(c, req)
	if err != nil {
		c.reply(req.ID, nil, err)
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = w.f.Close()
		return
	}
	if c.watches == nil {
		c.watches = map[uint64]*watch{}
	}
	if _, dup := c.watches[req.ID]; dup {
		c.mu.Unlock()
		_ = w.f.Close()
		c.reply(req.ID, nil, errs.E(errs.Conflict, "watch.start: request id %d is already a watch", req.ID))
		return
	}
	c.watches[req.ID] = w
	c.wg.Add(1)
	c.mu.Unlock()
	c.reply(req.ID, nil, nil)
	go func() {
		defer c.wg.Done()
		w.loop()
	}()
}

// stopWatch ends the watch Target names; its watch.end frame follows.
func (c *conn) stopWatch(req *protocol.Request) {
	c.mu.Lock()
	w := c.watches[req.Target]
	c.mu.Unlock()
	if w == nil {
		c.reply(req.ID, nil, errs.E(errs.NotFound, "watch.stop: no watch %d", req.Target))
		return
	}
	w.stop()
	c.reply(req.ID, nil, nil)
}

// stopWatches ends every watch of a closing connection.
func (c *conn) stopWatches() {
	c.mu.Lock()
	ws := make([]*watch, 0, len(c.watches))
	for _, w := range c.watches {
		ws = append(ws, w)
	}
	c.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
}

func (s *Server) newWatch(c *conn, req *protocol.Request) (*watch, error) {
	t, err := s.resolve("watch.start", "path", req.Path)
	if err != nil {
		return nil, err
	}
	fi, err := t.fs.Stat(t.name)
	if err != nil {
		return nil, fsError("watch.start", req.Path, err)
	}
	if !fi.IsDir() {
		return nil, errs.Field("path", "watch.start %s: not a directory", req.Path)
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, errs.E(errs.Exhausted, "watch.start %s: inotify: %w", req.Path, err)
	}
	w := &watch{c: c, id: req.ID, f: os.NewFile(uintptr(fd), "inotify"), fd: fd,
		root: s.hostPath(t), recursive: req.Recursive, dirs: map[int]string{}}
	if w.rootWD, err = w.add(""); err != nil {
		_ = w.f.Close()
		return nil, watchError(req.Path, err)
	}
	if w.recursive {
		if err := w.addTree(""); err != nil {
			_ = w.f.Close()
			return nil, watchError(req.Path, err)
		}
	}
	return w, nil
}

// watchError gives an inotify_add_watch failure its kind.
func watchError(p string, err error) error {
	if errors.Is(err, unix.ENOSPC) {
		return errs.E(errs.Exhausted, "watch.start %s: the system's inotify watch limit is reached", p)
	}
	return fsError("watch.start", p, err)
}

// add watches the directory rel (relative to root).
func (w *watch) add(rel string) (int, error) {
	wd, err := unix.InotifyAddWatch(w.fd, filepath.Join(w.root, rel), watchMask)
	if err != nil {
		return 0, &fs.PathError{Op: "watch", Path: rel, Err: err}
	}
	w.mu.Lock()
	w.dirs[wd] = rel
	w.mu.Unlock()
	return wd, nil
}

// addTree watches every directory below rel. Directories that vanish or
// cannot be read meanwhile are skipped; only the watch limit fails it.
func (w *watch) addTree(rel string) error {
	return filepath.WalkDir(filepath.Join(w.root, rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		r, _ := filepath.Rel(w.root, p)
		if r == "." || r == rel {
			return nil
		}
		if _, err := w.add(filepath.ToSlash(r)); err != nil && errors.Is(err, unix.ENOSPC) {
			return err
		}
		return nil
	})
}

// forget drops the watches of rel and everything below it (moved away).
func (w *watch) forget(rel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wd, d := range w.dirs {
		if d == rel || strings.HasPrefix(d, rel+"/") {
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
			delete(w.dirs, wd)
		}
	}
}

func (w *watch) stop() {
	if w.stopped.CompareAndSwap(false, true) {
		_ = w.f.Close()
	}
}

// loop reads inotify events until the watch is stopped, fails, or its
// directory goes, then sends watch.end.
func (w *watch) loop() {
	err := w.read()
	w.stop()
	w.c.mu.Lock()
	delete(w.c.watches, w.id)
	w.c.mu.Unlock()
	end := protocol.WatchEnd{Type: protocol.TypeWatchEnd, ID: w.id}
	if err != nil {
		end.Error = protocol.ErrorOf(err)
	}
	w.c.send(end)
}

// read handles events until the end; nil for a stop or the directory's
// removal.
func (w *watch) read() error {
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if w.stopped.Load() {
				return nil
			}
			return errs.E(errs.Other, "watch: read inotify: %w", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int(int32(binary.NativeEndian.Uint32(buf[off:])))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			start := off + unix.SizeofInotifyEvent
			if start+nameLen > n {
				break
			}
			name := strings.TrimRight(string(buf[start:start+nameLen]), "\x00")
			off = start + nameLen
			done, err := w.event(wd, mask, name)
			if err != nil || done {
				return err
			}
		}
	}
}

// event sends what one inotify event means; done when the watch is over.
func (w *watch) event(wd int, mask uint32, name string) (done bool, err error) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		return true, errs.E(errs.Exhausted, "watch: events came faster than they were read and the kernel dropped some")
	}
	w.mu.Lock()
	dir, known := w.dirs[wd]
	if mask&unix.IN_IGNORED != 0 {
		delete(w.dirs, wd)
	}
	w.mu.Unlock()
	if !known {
		return false, nil
	}
	if mask&unix.IN_IGNORED != 0 {
		return wd == w.rootWD, nil
	}
	rel := path.Join(dir, name)
	if name == "" {
		rel = dir
	}
	self := mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0
	if self && wd != w.rootWD {
		// The parent reports a subdirectory's removal or move.
		return false, nil
	}
	var kind string
	switch {
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		kind = protocol.WatchCreate
		if mask&unix.IN_ISDIR != 0 && w.recursive {
			if _, err := w.add(rel); err == nil {
				_ = w.addTree(rel)
			}
		}
	case mask&unix.IN_MODIFY != 0:
		kind = protocol.WatchWrite
	case mask&(unix.IN_DELETE|unix.IN_DELETE_SELF) != 0:
		kind = protocol.WatchRemove
	case mask&(unix.IN_MOVED_FROM|unix.IN_MOVE_SELF) != 0:
		kind = protocol.WatchRename
		if mask&unix.IN_ISDIR != 0 && w.recursive {
			w.forget(rel)
		}
	case mask&unix.IN_ATTRIB != 0:
		kind = protocol.WatchChmod
	default:
		return false, nil
	}
	if !w.c.send(protocol.WatchEvent{Type: protocol.TypeWatchEvent, ID: w.id, Name: rel, Event: kind}) {
		return true, nil
	}
	// A watched directory moved away is watched no more: what happens
	// under its new name is not under the path that was asked for.
	return mask&unix.IN_MOVE_SELF != 0, nil
}
