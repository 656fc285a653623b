package server

// Processes that outlive a connection (proc.* ops). An exec belongs to the
// connection that started it and dies with it; a process of proc.start
// belongs to the server: it runs until it ends, a signal, reset or the
// server's Close, whoever is connected. Clients watch it (proc.connect, or
// proc.start with stream) from the moment they ask: output is relayed to
// the watchers there are and dropped when there are none, so an unwatched
// process holds no output in memory (proc_watch.go). Its stdin, or its
// terminal (proc_pty.go), takes proc.input frames from any connection.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// maxEnded bounds how many ended processes the table remembers, so a
// proc.connect or proc.list shortly after the end still reports the exit.
// The oldest is forgotten first.
const maxEnded = 64

// procTable is the server's processes by pid. Its zero value is ready.
type procTable struct {
	mu     sync.Mutex
	byPID  map[int]*bgProc
	ended  []int // pids of ended processes still remembered, oldest first
	closed bool  // the server is closing: no new process starts
	wg     sync.WaitGroup
}

// bgProc is one process of proc.start.
type bgProc struct {
	s    *Server
	info protocol.ProcInfo // fixed fields; Running, Exit and PTY are filled under mu
	cmd  *exec.Cmd
	pty  *os.File // the terminal's master side; nil without one
	// ptyDone is closed when the terminal's reader ends (proc_pty.go).
	ptyDone chan struct{}
	stdin   *stdinQueue // nil when neither stdin nor a terminal is open
	done    chan struct{}

	mu       sync.Mutex
	size     protocol.PTYSize
	watchers []*watcher
	recent   recentOutput       // for proc.connect with replay (proc_watch.go)
	exit     *protocol.ProcExit // set once it ended
	canceled bool               // killed by reset or Close
	timedOut bool
}

// startProc handles proc.start on its own goroutine: it starts the process
// and answers with its description; with Exec.Stream the request then
// watches it like proc.connect.
func (c *conn) startProc(req *protocol.Request) {
	x := req.Exec
	if x == nil || len(x.Args) == 0 || x.Args[0] == "" {
		c.reply(req.ID, nil, errs.Field("exec.args", "proc.start: args must name a program"))
		return
	}
	if x.TimeoutMS < 0 {
		c.reply(req.ID, nil, errs.Field("exec.timeout_ms", "proc.start: timeout must not be negative"))
		return
	}
	for k := range x.Env {
		if err := checkEnvKey(k); err != nil {
			c.reply(req.ID, nil, errs.Field("exec.env", "proc.start: %v", err))
			return
		}
	}
	if x.PTY != nil && (x.PTY.Cols == 0 || x.PTY.Rows == 0) {
		c.reply(req.ID, nil, errs.Field("exec.pty", "proc.start: a terminal needs cols and rows above zero"))
		return
	}
	var w *watcher
	if x.Stream {
		w = newWatcher(c, req.ID)
	}
	p, err := c.s.procs.start(c.s, x, w)
	if err != nil {
		c.reply(req.ID, nil, err)
		return
	}
	c.reply(req.ID, p.describe(), nil)
	if w != nil {
		close(w.ready)
	}
}

// start starts x and registers it; w, when given, watches from the first
// byte of output.
func (t *procTable) start(s *Server, x *protocol.ExecParams, w *watcher) (*bgProc, error) {
	cmd, err := s.command(x)
	if err != nil {
		return nil, err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if s.cg != nil {
		s.cg.attr(cmd.SysProcAttr)
	}
	cmd.WaitDelay = waitDelay
	p := &bgProc{
		s:    s,
		cmd:  cmd,
		done: make(chan struct{}),
		info: protocol.ProcInfo{
			Tag:       x.Tag,
			Args:      slices.Clone(x.Args),
			Cwd:       x.Cwd,
			User:      x.User,
			StdinOpen: x.StdinOpen || x.PTY != nil,
		},
	}
	if w != nil {
		p.watchers = []*watcher{w}
	}
	var stdin io.WriteCloser
	var tty *os.File
	if x.PTY != nil {
		p.size = *x.PTY
		p.ptyDone = make(chan struct{})
		if tty, err = p.attachPTY(*x.PTY); err != nil {
			return nil, err
		}
		stdin = noClose{p.pty}
	} else {
		cmd.SysProcAttr.Setpgid = true
		cmd.Stdout = &fanWriter{p: p, stream: protocol.StreamStdout}
		cmd.Stderr = &fanWriter{p: p, stream: protocol.StreamStderr}
		if len(x.Stdin) > 0 || x.StdinOpen {
			if stdin, err = cmd.StdinPipe(); err != nil {
				return nil, fmt.Errorf("proc.start %s: stdin: %w", x.Args[0], err)
			}
		}
	}
	if x.StdinOpen || x.PTY != nil {
		p.stdin = newStdinQueue()
	}

	// The table's lock covers the start, so a tag is never taken twice.
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		p.closeTTY(tty)
		return nil, errs.E(errs.Unavailable, "proc.start: runtime shutting down")
	}
	if x.Tag != "" && t.runningTag(x.Tag) != nil {
		t.mu.Unlock()
		p.closeTTY(tty)
		return nil, errs.E(errs.Conflict, "proc.start: a running process has tag %q", x.Tag)
	}
	start := time.Now()
	err = cmd.Start()
	if tty != nil {
		// The child holds the terminal now; the master sees its end
		// once every holder closed it.
		_ = tty.Close()
	}
	if err != nil {
		t.mu.Unlock()
		if p.pty != nil {
			_ = p.pty.Close()
		}
		return nil, startError(x.Args[0], err)
	}
	p.info.PID = cmd.Process.Pid
	p.info.StartedAt = start.UTC()
	if t.byPID == nil {
		t.byPID = map[int]*bgProc{}
	}
	if old := t.byPID[p.info.PID]; old != nil {
		// The pid of an ended process came round again.
		t.ended = slices.DeleteFunc(t.ended, func(pid int) bool { return pid == p.info.PID })
	}
	t.byPID[p.info.PID] = p
	t.wg.Add(1)
	t.mu.Unlock()

	if stdin != nil {
		go feedStdin(stdin, x.Stdin, p.stdin, fmt.Sprintf("process %d", p.info.PID))
	}
	go p.wait(t, start, time.Duration(x.TimeoutMS)*time.Millisecond)
	return p, nil
}

// closeTTY releases a terminal opened for a process that did not start.
func (p *bgProc) closeTTY(tty *os.File) {
	if tty != nil {
		_ = tty.Close()
		_ = p.pty.Close()
	}
}

// noClose keeps feedStdin's close of a terminal's input from closing the
// master, which still carries the output.
type noClose struct{ io.Writer }

func (noClose) Close() error { return nil }

// wait reaps the process, records its exit, and tells the watchers.
func (p *bgProc) wait(t *procTable, start time.Time, timeout time.Duration) {
	defer t.wg.Done()
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout, func() {
			p.mu.Lock()
			p.timedOut = p.exit == nil
			p.mu.Unlock()
			p.kill(syscall.SIGKILL)
		})
	}
	werr := p.cmd.Wait()
	if timer != nil {
		timer.Stop()
	}
	if p.pty != nil {
		p.drainPTY()
	}
	if p.stdin != nil {
		p.stdin.close()
	}
	if p.cmd.ProcessState == nil {
		p.s.log.Warn("runtime: process wait failed", "pid", p.info.PID, "error", werr)
	}
	code, sig := exitStatus(p.cmd.ProcessState)
	now := time.Now()
	p.mu.Lock()
	p.exit = &protocol.ProcExit{
		ExitCode:   code,
		Signal:     sig,
		TimedOut:   p.timedOut,
		Canceled:   p.canceled,
		DurationMS: float64(now.Sub(start).Microseconds()) / 1000,
		EndedAt:    now.UTC(),
	}
	ws := p.watchers
	p.watchers = nil
	p.mu.Unlock()
	for _, w := range ws {
		w.exit(p.exit)
	}
	t.mu.Lock()
	if t.byPID[p.info.PID] == p {
		t.ended = append(t.ended, p.info.PID)
		if len(t.ended) > maxEnded {
			delete(t.byPID, t.ended[0])
			t.ended = t.ended[1:]
		}
	}
	t.mu.Unlock()
	close(p.done)
}

// describe returns the process's description as it is now.
func (p *bgProc) describe() protocol.ProcInfo {
	info := p.info
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pty != nil {
		size := p.size
		info.PTY = &size
	}
	info.Running = p.exit == nil
	if p.exit != nil {
		e := *p.exit
		info.Exit = &e
	}
	return info
}

// kill signals the process group unless the process ended: a reaped pid
// may be another process's by now.
func (p *bgProc) kill(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exit != nil {
		return false
	}
	_ = syscall.Kill(-p.info.PID, sig)
	return true
}

// runningTag returns the running process tagged tag; t.mu is held.
func (t *procTable) runningTag(tag string) *bgProc {
	for _, p := range t.byPID {
		if p.info.Tag == tag && p.running() {
			return p
		}
	}
	return nil
}

func (p *bgProc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit == nil
}

// find returns the process with pid, or (pid zero) the one tagged tag: the
// running one, else the one that ended last.
func (t *procTable) find(op string, pid int, tag string) (*bgProc, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if pid != 0 {
		if p := t.byPID[pid]; p != nil {
			return p, nil
		}
		return nil, errs.E(errs.NotFound, "%s: process %d not found", op, pid)
	}
	if tag == "" {
		return nil, errs.Field("pid", "%s: pid or tag is required", op)
	}
	if p := t.runningTag(tag); p != nil {
		return p, nil
	}
	for _, pid := range slices.Backward(t.ended) {
		if p := t.byPID[pid]; p != nil && p.info.Tag == tag {
			return p, nil
		}
	}
	return nil, errs.E(errs.NotFound, "%s: no process with tag %q", op, tag)
}

// all returns every process the table holds, by pid.
func (t *procTable) all() []*bgProc {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*bgProc, 0, len(t.byPID))
	for _, p := range t.byPID {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *bgProc) int { return a.info.PID - b.info.PID })
	return out
}

// killAll kills every running process (reset, Close), waits until they
// are reaped or deadline passes, and forgets the ended ones. It returns
// how many were running.
func (t *procTable) killAll(deadline time.Time) (int, error) {
	procs := t.all()
	killed := 0
	for _, p := range procs {
		p.mu.Lock()
		if p.exit == nil {
			p.canceled = true
		}
		p.mu.Unlock()
		if p.kill(syscall.SIGKILL) {
			killed++
		}
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(time.Until(deadline)):
			return killed, errs.E(errs.Unavailable, "reset: process %d still running after SIGKILL", p.info.PID)
		}
	}
	t.mu.Lock()
	for _, p := range procs {
		if t.byPID[p.info.PID] == p {
			delete(t.byPID, p.info.PID)
		}
	}
	t.ended = slices.DeleteFunc(t.ended, func(pid int) bool { return t.byPID[pid] == nil })
	t.mu.Unlock()
	return killed, nil
}

// close stops new starts and kills every process (the server's Close).
func (t *procTable) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	_, _ = t.killAll(time.Now().Add(resetWait))
	t.wg.Wait()
}

// listProcs answers proc.list.
func (s *Server) listProcs(context.Context, *protocol.Request) (any, error) {
	procs := s.procs.all()
	res := protocol.ProcListResult{Processes: make([]protocol.ProcInfo, 0, len(procs))}
	for _, p := range procs {
		res.Processes = append(res.Processes, p.describe())
	}
	return res, nil
}

// procInput answers proc.input and proc.close_stdin: the data (or the
// close) is queued in order and the request answered once the pipe or
// terminal took it.
func (c *conn) procInput(req *protocol.Request, closing bool) {
	p, err := c.s.procs.find(req.Op, req.PID, "")
	if err != nil {
		c.reply(req.ID, nil, err)
		return
	}
	if p.stdin == nil {
		c.reply(req.ID, nil, errs.E(errs.Precondition, "%s: process %d: stdin is not open", req.Op, req.PID))
		return
	}
	if closing && p.pty != nil {
		c.reply(req.ID, nil, errs.E(errs.Precondition, "%s: process %d has a terminal: send end of file (\\x04) as input", req.Op, req.PID))
		return
	}
	if !p.stdin.push(stdinItem{data: req.Data, close: closing, done: c.ack(req.ID)}) {
		if closing {
			c.reply(req.ID, nil, nil) // closed already
			return
		}
		c.reply(req.ID, nil, errs.E(errs.Precondition, "%s: process %d: stdin is closed", req.Op, req.PID))
	}
}

// procSignal answers proc.signal: the signal goes to the process group.
func (s *Server) procSignal(_ context.Context, req *protocol.Request) (any, error) {
	sig, err := parseSignal(req.Op, req.Signal)
	if err != nil {
		return nil, err
	}
	p, err := s.procs.find(req.Op, req.PID, "")
	if err != nil {
		return nil, err
	}
	if !p.kill(sig) {
		return nil, errs.E(errs.Precondition, "%s: process %d has ended", req.Op, req.PID)
	}
	return nil, nil
}

// procResize answers proc.resize.
func (s *Server) procResize(_ context.Context, req *protocol.Request) (any, error) {
	if req.Cols == 0 || req.Rows == 0 {
		return nil, errs.Field("cols", "%s: cols and rows must be above zero", req.Op)
	}
	p, err := s.procs.find(req.Op, req.PID, "")
	if err != nil {
		return nil, err
	}
	if p.pty == nil {
		return nil, errs.E(errs.Precondition, "%s: process %d has no terminal", req.Op, req.PID)
	}
	if err := p.resize(protocol.PTYSize{Cols: req.Cols, Rows: req.Rows}); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return nil, errs.E(errs.Precondition, "%s: process %d has ended", req.Op, req.PID)
		}
		return nil, fmt.Errorf("%s: process %d: %w", req.Op, req.PID, err)
	}
	return nil, nil
}
