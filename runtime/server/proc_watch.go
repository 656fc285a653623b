package server

// Watching a process of proc.start: a watcher is one streaming request (a
// proc.connect, or a proc.start with stream) on one connection. It gets
// exec.output frames of the output produced while it watches, then exactly
// one exec.exit frame, unless it detaches (proc.detach) or its connection
// closes first. Output is sent to every watcher as it is read, before the
// next read; with none it is dropped. Nothing is buffered for a process
// nobody watches, and a slow watcher slows the process down (its pipe
// fills) for at most the server's write timeout, after which that watcher's
// connection is closed and the process goes on.

import (
	"slices"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// watcher is one request watching a process.
type watcher struct {
	c     *conn
	id    uint64
	ready chan struct{} // closed once the request's result frame is sent
}

func newWatcher(c *conn, id uint64) *watcher {
	return &watcher{c: c, id: id, ready: make(chan struct{})}
}

// output sends one chunk; false when the connection is gone.
func (w *watcher) output(stream string, data []byte) bool {
	<-w.ready
	return w.c.send(&protocol.ExecOutput{Type: protocol.TypeExecOutput, ID: w.id, Stream: stream, Data: data})
}

// exit sends the watch's last frame.
func (w *watcher) exit(e *protocol.ProcExit) {
	<-w.ready
	w.c.send(&protocol.ExecExit{
		Type:       protocol.TypeExecExit,
		ID:         w.id,
		ExitCode:   e.ExitCode,
		Signal:     e.Signal,
		TimedOut:   e.TimedOut,
		Canceled:   e.Canceled,
		DurationMS: e.DurationMS,
	})
}

// fanWriter receives one output stream of a process, from os/exec's
// copying goroutine or the terminal's reader, and relays it to the
// watchers.
type fanWriter struct {
	p      *bgProc
	stream string
}

func (f *fanWriter) Write(b []byte) (int, error) {
	f.p.broadcast(f.stream, b)
	return len(b), nil
}

// broadcast sends b to every watcher and drops those whose connection is
// gone. b is not kept.
func (p *bgProc) broadcast(stream string, b []byte) {
	p.mu.Lock()
	ws := slices.Clone(p.watchers)
	p.mu.Unlock()
	for _, w := range ws {
		if !w.output(stream, b) {
			p.unwatch(func(x *watcher) bool { return x == w })
		}
	}
}

// unwatch removes the watchers match selects and reports how many.
func (p *bgProc) unwatch(match func(*watcher) bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.watchers)
	p.watchers = slices.DeleteFunc(p.watchers, match)
	return n - len(p.watchers)
}

// connectProc answers proc.connect: the process's description, then its
// output from now on and its exit; a process that ended already gets the
// description and the exit at once.
func (c *conn) connectProc(req *protocol.Request) {
	p, err := c.s.procs.find(req.Op, req.PID, req.Tag)
	if err != nil {
		c.reply(req.ID, nil, err)
		return
	}
	w := newWatcher(c, req.ID)
	p.mu.Lock()
	ended := p.exit
	if ended == nil {
		p.watchers = append(p.watchers, w)
	}
	p.mu.Unlock()
	c.reply(req.ID, p.describe(), nil)
	close(w.ready)
	if ended != nil {
		w.exit(ended)
	}
}

// detachProc answers proc.detach: the watch started by request Target on
// this connection ends without an exit frame; the process goes on.
func (c *conn) detachProc(req *protocol.Request) {
	n := 0
	for _, p := range c.s.procs.all() {
		n += p.unwatch(func(w *watcher) bool { return w.c == c && w.id == req.Target })
	}
	if n == 0 {
		c.reply(req.ID, nil, errs.E(errs.NotFound, "%s: request %d watches no running process", req.Op, req.Target))
		return
	}
	c.reply(req.ID, nil, nil)
}

// dropWatchers forgets every watch of a closing connection.
func (t *procTable) dropWatchers(c *conn) {
	for _, p := range t.all() {
		p.unwatch(func(w *watcher) bool { return w.c == c })
	}
}
