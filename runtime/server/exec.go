package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

const (
	// waitDelay bounds how long an exited command's output pipes stay open
	// for a background child that inherited them (`daemon &`): after it,
	// the exit is reported with the output read so far.
	waitDelay = time.Second
	// batchBytes is how much output a non-streaming exec holds back before
	// sending it anyway, which keeps frames small.
	batchBytes = 1 << 20
	// stdinChunk bounds the data of one exec.stdin write to the pipe so an
	// ack means real progress.
	stdinChunk = 1 << 20
)

// proc is one exec: registered on the read loop when the request arrives so
// stdin and cancel frames that follow it find it, then run by its own
// goroutine.
type proc struct {
	c      *conn
	id     uint64
	stream bool
	ready  chan struct{} // closed once the exec's result frame is sent
	gone   chan struct{} // closed once the exec is over and unregistered

	mu       sync.Mutex
	pid      int // process group id once started; 0 before
	exited   bool
	canceled bool
	timedOut bool
	pending  syscall.Signal // a cancel that came before the start
	out      [2][]byte      // held-back stdout, stderr when not streaming

	stdin *stdinQueue // nil when stdin is not open
	fed   bool        // a feed goroutine owns stdin; set by run
}

func (c *conn) startExec(req *protocol.Request) {
	x := req.Exec
	if x == nil || len(x.Args) == 0 || x.Args[0] == "" {
		c.reply(req.ID, nil, errs.Field("exec.args", "exec: args must name a program"))
		return
	}
	if x.TimeoutMS < 0 {
		c.reply(req.ID, nil, errs.Field("exec.timeout_ms", "exec: timeout must not be negative"))
		return
	}
	for k := range x.Env {
		if err := checkEnvKey(k); err != nil {
			c.reply(req.ID, nil, errs.Field("exec.env", "exec: %v", err))
			return
		}
	}
	p := &proc{c: c, id: req.ID, stream: x.Stream, ready: make(chan struct{}), gone: make(chan struct{})}
	if x.StdinOpen {
		p.stdin = newStdinQueue()
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if _, dup := c.procs[req.ID]; dup {
		c.mu.Unlock()
		c.reply(req.ID, nil, errs.E(errs.Conflict, "exec %d: an exec with this id is running", req.ID))
		return
	}
	c.procs[req.ID] = p
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer c.unregister(p)
		p.run(x)
	}()
}

func (c *conn) unregister(p *proc) {
	c.mu.Lock()
	delete(c.procs, p.id)
	c.mu.Unlock()
	defer close(p.gone)
	if p.stdin != nil {
		p.stdin.close()
		if !p.fed {
			// The process never started: answer stdin frames that queued up.
			p.stdin.drain(errs.E(errs.Precondition, "exec %d: stdin: process did not start", p.id))
		}
	}
}

func (c *conn) lookup(id uint64) *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[id]
}

func (c *conn) execStdin(req *protocol.Request) {
	p := c.lookup(req.Target)
	if p == nil {
		c.reply(req.ID, nil, errs.E(errs.NotFound, "exec %d: not running", req.Target))
		return
	}
	if p.stdin == nil {
		c.reply(req.ID, nil, errs.E(errs.Precondition, "exec %d: stdin is not open", req.Target))
		return
	}
	if !p.stdin.push(stdinItem{data: req.Data, close: req.Close, done: c.ack(req.ID)}) {
		c.reply(req.ID, nil, errs.E(errs.Precondition, "exec %d: stdin is closed", req.Target))
	}
}

func (c *conn) execCancel(req *protocol.Request) {
	sig, err := parseSignal(protocol.OpExecCancel, req.Signal)
	if err != nil {
		c.reply(req.ID, nil, err)
		return
	}
	p := c.lookup(req.Target)
	if p == nil {
		c.reply(req.ID, nil, errs.E(errs.NotFound, "exec %d: not running", req.Target))
		return
	}
	p.signal(sig, false, true)
	c.reply(req.ID, nil, nil)
}

// parseSignal reads a signal name ("SIGTERM", "TERM", "kill"); empty
// means SIGKILL.
func parseSignal(op, signal string) (syscall.Signal, error) {
	if signal == "" {
		return syscall.SIGKILL, nil
	}
	name := strings.ToUpper(signal)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	sig := unix.SignalNum(name)
	if sig == 0 {
		return 0, errs.Field("signal", "%s: unknown signal %q", op, signal)
	}
	return sig, nil
}

// signal sends sig to the process group and records why. Before the start
// it is kept for run to deliver; after the exit it does nothing, so a
// reused process group id is never hit. It reports whether the process had
// not exited yet.
func (p *proc) signal(sig syscall.Signal, timedOut, canceled bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return false
	}
	p.timedOut = p.timedOut || timedOut
	p.canceled = p.canceled || canceled
	if p.pid == 0 {
		p.pending = sig
		return true
	}
	_ = syscall.Kill(-p.pid, sig)
	return true
}

// run starts the command, reports the start, relays stdin and output, and
// sends exec.exit after the last output frame.
func (p *proc) run(x *protocol.ExecParams) {
	s := p.c.s
	cmd, err := s.command(x)
	if err != nil {
		p.c.reply(p.id, nil, err)
		return
	}
	cmd.Stdout = &outWriter{p: p, stream: 0}
	cmd.Stderr = &outWriter{p: p, stream: 1}
	cmd.SysProcAttr.Setpgid = true
	if s.cg != nil {
		s.cg.attr(cmd.SysProcAttr)
	}
	cmd.WaitDelay = waitDelay
	var stdin io.WriteCloser
	if len(x.Stdin) > 0 || x.StdinOpen {
		if stdin, err = cmd.StdinPipe(); err != nil {
			p.c.reply(p.id, nil, fmt.Errorf("exec %s: stdin: %w", x.Args[0], err))
			return
		}
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		err = startError(x.Args[0], err)
		if cmd.SysProcAttr.Credential != nil && errors.Is(err, syscall.EPERM) {
			err = errs.E(errs.Forbidden, "exec %s as %s: the runtime may not switch to that user: %w", x.Args[0], x.User, err)
		}
		p.c.reply(p.id, nil, err)
		return
	}
	p.mu.Lock()
	p.pid = cmd.Process.Pid
	if p.pending != 0 {
		_ = syscall.Kill(-p.pid, p.pending)
	}
	p.mu.Unlock()
	p.c.reply(p.id, protocol.ExecStarted{PID: cmd.Process.Pid}, nil)
	close(p.ready)

	if stdin != nil {
		p.fed = true
		go feedStdin(stdin, x.Stdin, p.stdin, fmt.Sprintf("exec %d", p.id))
	}
	var timer *time.Timer
	if x.TimeoutMS > 0 {
		timer = time.AfterFunc(time.Duration(x.TimeoutMS)*time.Millisecond, func() {
			p.signal(syscall.SIGKILL, true, false)
		})
	}
	werr := cmd.Wait()
	dur := time.Since(start)
	if timer != nil {
		timer.Stop()
	}

	p.mu.Lock()
	p.exited = true
	exit := protocol.ExecExit{
		Type:       protocol.TypeExecExit,
		ID:         p.id,
		TimedOut:   p.timedOut,
		Canceled:   p.canceled,
		DurationMS: float64(dur.Microseconds()) / 1000,
		Stdout:     p.out[0],
		Stderr:     p.out[1],
	}
	p.out = [2][]byte{}
	p.mu.Unlock()
	exit.ExitCode, exit.Signal = exitStatus(cmd.ProcessState)
	if cmd.ProcessState == nil {
		s.log.Warn("runtime: exec wait failed", "exec_id", p.id, "error", werr)
	}
	p.c.send(&exit)
}

// exitStatus follows the shell convention: 128+n for a process ended by
// signal n, so a killed command never looks successful.
func exitStatus(st *os.ProcessState) (int, string) {
	if st == nil {
		return -1, ""
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), unix.SignalName(ws.Signal())
	}
	return st.ExitCode(), ""
}

func startError(prog string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errs.E(errs.NotFound, "exec %s: %w", prog, err)
	case errors.Is(err, fs.ErrPermission):
		return errs.E(errs.Forbidden, "exec %s: %w", prog, err)
	}
	return errs.E(errs.Other, "exec %s: start: %w", prog, err)
}

// command builds the exec.Cmd: environment, working directory and the
// program looked up in the command's own PATH, and in SysProcAttr the
// credential of the user it runs as (none: the runtime's own).
func (s *Server) command(x *protocol.ExecParams) (*exec.Cmd, error) {
	user, err := s.userOf(x.User)
	if err != nil {
		return nil, err
	}
	env := make(map[string]string, len(s.env)+len(x.Env)+3)
	for k, v := range s.env {
		env[k] = v
	}
	if user != nil {
		env["HOME"], env["USER"], env["LOGNAME"] = user.home, user.name, user.name
	}
	for k, v := range x.Env {
		env[k] = v
	}
	// The token never reaches a command, whoever tried to set it.
	delete(env, TokenEnv)
	envv := make([]string, 0, len(env))
	for k, v := range env {
		envv = append(envv, k+"="+v)
	}
	slices.Sort(envv)

	cwd := x.Cwd
	if cwd == "" && x.User != "" && s.whole {
		// Like a login: a command run as a user the request names starts
		// at home, when it has one. The default user's start in the root,
		// where relative paths point.
		if fi, err := os.Stat(user.home); err == nil && fi.IsDir() && filepath.IsAbs(user.home) {
			cwd = user.home
		}
	}
	dir, err := s.resolveCwd(cwd)
	if err != nil {
		return nil, err
	}
	prog, err := lookPath(x.Args[0], env["PATH"], dir)
	if err != nil {
		return nil, err
	}
	attr := &syscall.SysProcAttr{Credential: user.credential()}
	return &exec.Cmd{Path: prog, Args: x.Args, Env: envv, Dir: dir, SysProcAttr: attr}, nil
}

// resolveCwd maps a workspace-relative directory to a host path, refusing
// one that leaves the root through `..` or a symlink. In whole-filesystem
// mode an absolute directory is taken as it is.
func (s *Server) resolveCwd(cwd string) (string, error) {
	if s.whole && filepath.IsAbs(cwd) {
		if strings.IndexByte(cwd, 0) >= 0 {
			return "", errs.Field("exec.cwd", "exec: cwd %q: contains a NUL byte", cwd)
		}
		dir := filepath.Clean(cwd)
		fi, err := os.Stat(dir)
		if err != nil {
			return "", fsError("exec: cwd", dir, err)
		}
		if !fi.IsDir() {
			return "", errs.Field("exec.cwd", "exec: cwd %s: not a directory", dir)
		}
		return dir, nil
	}
	p, err := cleanPath("exec: cwd", "exec.cwd", cwd)
	if err != nil {
		return "", err
	}
	if p == "." {
		return s.rootPath, nil
	}
	fi, err := s.root.Stat(p)
	if err != nil {
		return "", fsError("exec: cwd", p, err)
	}
	if !fi.IsDir() {
		return "", errs.Field("exec.cwd", "exec: cwd %s: not a directory", p)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(s.rootPath, p))
	if err != nil {
		return "", fsError("exec: cwd", p, err)
	}
	if real != s.rootPath && !strings.HasPrefix(real, s.rootPath+string(filepath.Separator)) {
		return "", errs.Field("exec.cwd", "exec: cwd %s: escapes the workspace root", p)
	}
	return real, nil
}

// lookPath finds prog like a shell would with the command's PATH, not the
// runtime's: a template may put its own tools first.
func lookPath(prog, path, dir string) (string, error) {
	if strings.Contains(prog, "/") {
		p := prog
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p, nil // start reports a missing or non-executable file
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, prog)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errs.E(errs.NotFound, "exec %s: executable file not found in $PATH", prog)
}

// outWriter receives one output stream from os/exec's copying goroutine.
type outWriter struct {
	p      *proc
	stream int // 0 stdout, 1 stderr
}

var streamNames = [2]string{protocol.StreamStdout, protocol.StreamStderr}

func (w *outWriter) Write(b []byte) (int, error) {
	p, n := w.p, len(b)
	// The exec's result frame goes first so the client knows the exec
	// started before any output arrives.
	<-p.ready
	if !p.stream {
		p.mu.Lock()
		p.out[w.stream] = append(p.out[w.stream], b...)
		if len(p.out[w.stream]) < batchBytes {
			p.mu.Unlock()
			return n, nil
		}
		b = p.out[w.stream]
		p.out[w.stream] = nil
		p.mu.Unlock()
	}
	if !p.c.send(&protocol.ExecOutput{Type: protocol.TypeExecOutput, ID: p.id, Stream: streamNames[w.stream], Data: b}) {
		return 0, errors.New("connection closed")
	}
	return n, nil
}
