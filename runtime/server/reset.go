package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// resetWait bounds how long reset waits for killed processes to be gone
// before it empties the root.
const resetWait = 10 * time.Second

// reset makes a used workspace fresh for the next user: it kills every
// process the runtime started, on any connection (and, with KillAllOnReset,
// every other process of the container), then removes everything under the
// root, .state included. Exec streams of killed processes still end with
// their exit frames.
func (s *Server) reset(ctx context.Context, _ *protocol.Request) (any, error) {
	unlock, err := s.lockState(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	procs := s.allProcs()
	killed := 0
	for _, p := range procs {
		if p.signal(syscall.SIGKILL, false, true) {
			killed++
		}
	}
	if s.killAll {
		// Also what the commands left running in other process groups
		// (daemons, setsid). Spares PID 1 (init) and the caller.
		if err := syscall.Kill(-1, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			s.log.Warn("runtime: reset: kill(-1)", "error", err)
		}
	}
	deadline := time.Now().Add(resetWait)
	bg, err := s.procs.killAll(deadline)
	if err != nil {
		return nil, err
	}
	killed += bg
	for _, p := range procs {
		select {
		case <-p.gone:
		case <-time.After(time.Until(deadline)):
			return nil, errs.E(errs.Unavailable, "reset: exec %d still running %s after SIGKILL", p.id, resetWait)
		}
	}
	if s.killAll {
		if err := waitOthersGone(deadline); err != nil {
			return nil, err
		}
	}
	if s.cg != nil {
		// What left its process group (setsid, daemons) is still in the
		// workspace's cgroup.
		if err := s.cg.kill(deadline); err != nil {
			return nil, err
		}
	}
	s.dropState()
	if err := s.emptyRoot(); err != nil {
		return nil, err
	}
	s.log.Info("runtime: workspace reset", "killed", killed)
	return protocol.ResetResult{Killed: killed}, nil
}

// allProcs returns the running execs of every connection.
func (s *Server) allProcs() []*proc {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var out []*proc
	for _, c := range conns {
		c.mu.Lock()
		for _, p := range c.procs {
			out = append(out, p)
		}
		c.mu.Unlock()
	}
	return out
}

// emptyRoot removes every entry of the root, never following symlinks.
func (s *Server) emptyRoot() error {
	names, err := readNames(s.root)
	if err != nil {
		return fsError("reset", ".", err)
	}
	var first error
	failed := 0
	for _, n := range names {
		if err := s.root.RemoveAll(n); err != nil {
			if first == nil {
				first = fsError("reset: remove", n, err)
			}
			failed++
		}
	}
	if failed > 1 {
		return fmt.Errorf("%w (and %d more)", first, failed-1)
	}
	return first
}

// waitOthersGone waits until no process but PID 1 and the runtime itself
// runs (zombies waiting for init are gone enough: they hold no files).
func waitOthersGone(deadline time.Time) error {
	self := os.Getpid()
	for {
		alive, err := othersAlive(self)
		if err != nil {
			return fmt.Errorf("reset: list processes: %w", err)
		}
		if alive == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errs.E(errs.Unavailable, "reset: %d processes still running %s after SIGKILL", alive, resetWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// othersAlive counts the processes in /proc, other than PID 1 and self,
// that are not zombies.
func othersAlive(self int) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == 1 || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// The state follows the parenthesised command name.
		st := string(b)
		if i := strings.LastIndexByte(st, ')'); i >= 0 && strings.HasPrefix(st[i+1:], " Z") {
			continue
		}
		n++
	}
	return n, nil
}
