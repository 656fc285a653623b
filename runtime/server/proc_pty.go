package server

// A terminal for a process of proc.start: a pseudo-terminal pair from
// /dev/ptmx. The child gets the terminal side as stdin, stdout, stderr and
// controlling terminal, in a session of its own (so `tty` names a
// /dev/pts device and job control works); the runtime keeps the master
// side, reads the output from it as one stream and writes input to it.

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// ptyReadBytes is the size of one read from the master, and so the
// largest output frame of a terminal.
const ptyReadBytes = 32 << 10

// attachPTY opens a terminal of size, makes it p.cmd's stdio and
// controlling terminal, and returns the terminal side, which the caller
// closes once the child started. p.pty is the master side.
func (p *bgProc) attachPTY(size protocol.PTYSize) (*os.File, error) {
	// Non-blocking, so the master joins Go's poller: a read can be
	// interrupted by a deadline or Close.
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, errs.E(errs.Unavailable, "proc.start: open a terminal: /dev/ptmx: %w", err)
	}
	fail := func(what string, err error) (*os.File, error) {
		_ = unix.Close(mfd)
		return nil, errs.E(errs.Unavailable, "proc.start: open a terminal: %s: %w", what, err)
	}
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		return fail("unlock", err)
	}
	n, err := unix.IoctlGetInt(mfd, unix.TIOCGPTN)
	if err != nil {
		return fail("number", err)
	}
	name := "/dev/pts/" + strconv.Itoa(n)
	if err := unix.IoctlSetWinsize(mfd, unix.TIOCSWINSZ, winsize(size)); err != nil {
		return fail("size", err)
	}
	// Blocking, unlike the master: the child reads it as its stdin.
	sfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(name, err)
	}
	if cred := p.cmd.SysProcAttr.Credential; cred != nil {
		// The terminal belongs to the user the process runs as, as
		// login does it, so it may change its own modes.
		_ = unix.Fchown(sfd, int(cred.Uid), -1)
	}
	p.pty = os.NewFile(uintptr(mfd), "/dev/ptmx")
	tty := os.NewFile(uintptr(sfd), name)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = tty, tty, tty
	p.cmd.SysProcAttr.Setsid = true
	p.cmd.SysProcAttr.Setctty = true
	p.cmd.SysProcAttr.Ctty = 0 // the child's stdin
	if !hasEnv(p.cmd.Env, "TERM") {
		p.cmd.Env = append(p.cmd.Env, "TERM=xterm-256color")
	}
	go p.readPTY()
	return tty, nil
}

func winsize(size protocol.PTYSize) *unix.Winsize {
	return &unix.Winsize{Col: size.Cols, Row: size.Rows}
}

func hasEnv(env []string, key string) bool {
	for _, kv := range env {
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			return true
		}
	}
	return false
}

// readPTY relays the terminal's output until every holder of the terminal
// side closed it (EIO) or drainPTY gives up waiting.
func (p *bgProc) readPTY() {
	defer close(p.ptyDone)
	buf := make([]byte, ptyReadBytes)
	w := fanWriter{p: p, stream: protocol.StreamPTY}
	for {
		n, err := p.pty.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// drainPTY waits, after the process exited, for the rest of its output:
// until the terminal reports its last holder gone, or waitDelay for a
// background child still holding it (like exec's pipes). Then the master
// is closed.
func (p *bgProc) drainPTY() {
	select {
	case <-p.ptyDone:
	case <-time.After(waitDelay):
		_ = p.pty.SetReadDeadline(time.Now())
		<-p.ptyDone
	}
	p.mu.Lock()
	_ = p.pty.Close()
	p.mu.Unlock()
}

// resize sets the terminal's size; the kernel sends SIGWINCH to its
// foreground process group.
func (p *bgProc) resize(size protocol.PTYSize) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exit != nil {
		return os.ErrClosed
	}
	rc, err := p.pty.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	// Control, not Fd: Fd would put the master back in blocking mode.
	if err := rc.Control(func(fd uintptr) { ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, winsize(size)) }); err != nil {
		return err
	}
	if ierr != nil {
		if errors.Is(ierr, syscall.EBADF) {
			return os.ErrClosed
		}
		return fmt.Errorf("set size: %w", ierr)
	}
	p.size = size
	return nil
}
