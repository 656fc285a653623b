package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// runAsInit is a minimal init for PID 1: it runs the runtime as its child,
// forwards termination signals to it and reaps every zombie, so orphaned
// background processes do not pile up in images without an init. It
// returns the child's exit status. The child's own commands are its
// children, so reaping here never steals their exit status.
//
// Init locks the container down before the child exists, so the child and
// every command it runs start without the capabilities to undo it.
func runAsInit() int {
	c, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "primer-runtime: init:", err)
		return 2
	}
	if err := lockdown(c); err != nil {
		fmt.Fprintln(os.Stderr, "primer-runtime: init: lockdown:", err)
		return 1
	}
	if c.egress == egressDeny {
		c.egress = egressApplied
	}
	if c.ingress == ingressRestrict {
		c.ingress = ingressApplied
	}
	// The container's processes are all the child's to stop on reset.
	c.killAll = true
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "primer-runtime: init:", err)
		return 1
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	cmd := exec.Command(self, c.args()...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "primer-runtime: init: start:", err)
		return 1
	}
	child := cmd.Process.Pid
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			_ = syscall.Kill(child, sig.(syscall.Signal))
			continue
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
			if pid == child {
				if ws.Signaled() {
					return 128 + int(ws.Signal())
				}
				return ws.ExitStatus()
			}
		}
	}
	return 1
}
