package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

func (a *app) portForwardCommand() *cobra.Command {
	var address string
	cmd := &cobra.Command{
		Use:   "port-forward ID [LOCAL:]REMOTE",
		Short: "Forward a local port to a port inside a workspace",
		Long: `Listen on a local port and carry every connection to it to 127.0.0.1:REMOTE
inside the workspace, like kubectl port-forward: through the platform and the
workspace's runtime connection, so it works under egress deny_all and on every
backend. LOCAL defaults to REMOTE; 0 picks a free port. Many connections at
once; it runs until interrupted.`,
		Example: `  primectl workspace port-forward ws-1a2b 8000
  primectl ws port-forward ws-1a2b 9000:8000 --address 0.0.0.0`,
		Args: args(cobra.ExactArgs(2)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			local, remote, err := parsePortPair(args[1])
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(address, strconv.Itoa(local)))
			if err != nil {
				return fmt.Errorf("port-forward: listen: %w", err)
			}
			return a.portForward(cmd.Context(), ln, args[0], remote)
		}),
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1", "the local address to listen on")
	return cmd
}

// parsePortPair reads [LOCAL:]REMOTE.
func parsePortPair(s string) (local, remote int, err error) {
	l, r, pair := strings.Cut(s, ":")
	if !pair {
		r = l
	}
	remote, err = strconv.Atoi(r)
	if err != nil || remote < 1 || remote > 65535 {
		return 0, 0, usagef("port-forward %s: REMOTE must be a port from 1 to 65535", s)
	}
	local = remote
	if pair {
		local, err = strconv.Atoi(l)
		if err != nil || local < 0 || local > 65535 {
			return 0, 0, usagef("port-forward %s: LOCAL must be a port from 0 to 65535", s)
		}
	}
	return local, remote, nil
}

// portForward serves ln until ctx ends: each connection gets its own
// connection to remote inside workspace id. A connection the workspace
// refuses (nothing listening) is closed and the reason printed; the
// others go on.
func (a *app) portForward(ctx context.Context, ln net.Listener, id string, remote int) error {
	c := a.client()
	fmt.Fprintf(a.stdout, "Forwarding from %s -> %d\n", ln.Addr(), remote)
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	var errMu sync.Mutex
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("port-forward: accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer nc.Close()
			pc, err := c.DialPort(ctx, id, remote)
			if err != nil {
				errMu.Lock()
				fmt.Fprintf(a.stderr, "port-forward %s -> %d: %v\n", nc.RemoteAddr(), remote, err)
				errMu.Unlock()
				return
			}
			defer pc.Close()
			pipe(nc.(*net.TCPConn), pc)
		}()
	}
}

// halfCloser is a connection that can shut its writing side alone.
type halfCloser interface {
	io.ReadWriteCloser
	CloseWrite() error
}

// pipe copies both ways, passing each side's half-close on, until both
// directions have ended; a direction that fails closes both, so the
// other ends too.
func pipe(a, b halfCloser) {
	copyHalf := func(dst, src halfCloser) {
		if _, err := io.Copy(dst, src); err != nil {
			_ = a.Close()
			_ = b.Close()
			return
		}
		_ = dst.CloseWrite()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyHalf(b, a)
	}()
	copyHalf(a, b)
	<-done
}
