package server

// Watching a process of proc.start: a watcher is one streaming request (a
// proc.connect, or a proc.start with stream) on one connection. It gets
// exec.output frames of the output produced while it watches, then exactly
// one exec.exit frame, unless it detaches (proc.detach) or its connection
// closes first. Output is sent to every watcher as it is read, before the
// next read; with none it is dropped. All a process keeps is its last
// protocol.ProcReplayBytes of output (recentOutput), which a proc.connect
// with replay gets first (a terminal's screen, a prompt printed before the
// attach). A slow watcher slows the process down (its pipe fills) for at
// most the server's write timeout, after which that watcher's connection
// is closed and the process goes on.

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
// gone. Its tail is kept in the recent output.
func (p *bgProc) broadcast(stream string, b []byte) {
	p.mu.Lock()
	p.recent.add(stream, b)
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
	// Under the lock a chunk is either in the replay or sent to w, never
	// both nor neither.
	p.mu.Lock()
	ended := p.exit
	if ended == nil {
		p.watchers = append(p.watchers, w)
	}
	var replay []outChunk
	if req.Replay {
		replay = p.recent.snapshot()
	}
	p.mu.Unlock()
	c.reply(req.ID, p.describe(), nil)
	for _, ch := range replay {
		c.send(&protocol.ExecOutput{Type: protocol.TypeExecOutput, ID: req.ID, Stream: ch.stream, Data: ch.data})
	}
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

// recentOutput is the tail of a process's output: chunks in order, at
// most protocol.ProcReplayBytes in all; the oldest go first.
type recentOutput struct {
	chunks []outChunk
	size   int
}

// mergeBytes bounds a chunk that later small writes are appended to.
const mergeBytes = 4 << 10

type outChunk struct {
	stream string
	data   []byte
}

func (r *recentOutput) add(stream string, b []byte) {
	if len(b) > protocol.ProcReplayBytes {
		b = b[len(b)-protocol.ProcReplayBytes:]
	}
	if n := len(r.chunks); n > 0 && r.chunks[n-1].stream == stream && len(r.chunks[n-1].data)+len(b) <= mergeBytes {
		// Small writes share a chunk, so the count of chunks stays low.
		// Appending never changes the bytes a snapshot already holds.
		r.chunks[n-1].data = append(r.chunks[n-1].data, b...)
	} else {
		r.chunks = append(r.chunks, outChunk{stream: stream, data: slices.Clone(b)})
	}
	r.size += len(b)
	drop := 0
	for r.size > protocol.ProcReplayBytes {
		r.size -= len(r.chunks[drop].data)
		drop++
	}
	if drop > 0 {
		r.chunks = slices.Delete(r.chunks, 0, drop)
	}
}

// snapshot returns the chunks; they are never changed after add.
func (r *recentOutput) snapshot() []outChunk { return slices.Clone(r.chunks) }
