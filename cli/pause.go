package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

func (a *app) workspaceForkCommand() *cobra.Command {
	var req wire.ForkRequest
	var labels []string
	var wait bool
	var waitTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "fork ID --count N [--mode filesystem|full] [--label KEY=VALUE]... [--ttl 1h] [--wait]",
		Short: "Make N new workspaces from one snapshot of a workspace, all or nothing against the quotas",
		Example: `  primectl workspace fork ws-1a2b --count 4 --wait
  primectl ws fork ws-1a2b --count 2 --label try=b -o json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			if req.Count < 1 || req.Count > wire.MaxForkCount {
				return usagef("--count %d: want 1 to %d", req.Count, wire.MaxForkCount)
			}
			var err error
			if req.Labels, err = labelMap(labels); err != nil {
				return err
			}
			c := a.client()
			forked, err := c.ForkWorkspace(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if a.output == "table" {
				snap := ""
				if forked.Snapshot != nil {
					snap = " from " + kindSnapshot + "/" + forked.Snapshot.ID
				}
				fmt.Fprintf(a.stdout, "%s/%s forked%s:\n", kindWorkspace, args[0], snap)
				for _, w := range forked.Workspaces {
					fmt.Fprintf(a.stdout, "%s/%s %s\n", kindWorkspace, w.ID, w.Phase)
				}
			}
			if wait {
				// The children are waited for one after the other: they
				// start together, so the total is about the slowest one's.
				for i, w := range forked.Workspaces {
					ws, err := a.waitRunning(cmd.Context(), c, w.ID, waitTimeout)
					if err != nil {
						return err
					}
					forked.Workspaces[i] = ws
				}
			}
			if a.output != "table" {
				return a.printObject(forked, nil)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.IntVar(&req.Count, "count", 0, fmt.Sprintf("how many workspaces to make, 1 to %d", wire.MaxForkCount))
	f.StringVar(&req.Mode, "mode", "", "the snapshot's mode: filesystem (the default) or full")
	f.StringArrayVar(&labels, "label", nil, "a label KEY=VALUE of the new workspaces (repeatable)")
	f.StringVar(&req.TTL, "ttl", "", "the new workspaces' time to live, a duration (default: the template's)")
	f.BoolVar(&wait, "wait", false, "wait until every new workspace is running, showing their phases on stderr")
	f.DurationVar(&waitTimeout, "wait-timeout", DefaultWaitTimeout, "how long --wait waits for each workspace")
	return cmd
}

func (a *app) workspacePauseCommand() *cobra.Command {
	var mode string
	var wait bool
	var waitTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "pause ID [--mode filesystem|full] [--wait]",
		Short: "Stop a workspace's compute, keeping its files (resume starts it again)",
		Example: `  primectl workspace pause ws-1a2b --wait
  primectl ws pause ws-1a2b --mode full`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			c := a.client()
			w, err := c.PauseWorkspace(cmd.Context(), args[0], wire.PauseRequest{Mode: mode})
			if err != nil {
				return err
			}
			if wait {
				if w, err = a.waitPhase(cmd.Context(), c, w.ID, wire.PhasePaused, waitTimeout); err != nil {
					return err
				}
				return a.printStreamed(w, func() string { return fmt.Sprintf("%s/%s paused", kindWorkspace, w.ID) })
			}
			return a.printStreamed(w, func() string { return fmt.Sprintf("%s/%s pause requested (was %s)", kindWorkspace, w.ID, w.Phase) })
		}),
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", "", "filesystem (the default: processes stop, files stay) or full (processes continue after resume, where the backend can)")
	f.BoolVar(&wait, "wait", false, "wait until the workspace is paused, showing its phases on stderr")
	f.DurationVar(&waitTimeout, "wait-timeout", DefaultWaitTimeout, "how long --wait waits")
	return cmd
}

func (a *app) workspaceResumeCommand() *cobra.Command {
	var wait bool
	var waitTimeout time.Duration
	cmd := &cobra.Command{
		Use:     "resume ID [--wait]",
		Short:   "Start a paused workspace again",
		Example: `  primectl workspace resume ws-1a2b --wait`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			c := a.client()
			w, err := c.ResumeWorkspace(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if wait {
				if w, err = a.waitRunning(cmd.Context(), c, w.ID, waitTimeout); err != nil {
					return err
				}
				return a.printStreamed(w, func() string { return fmt.Sprintf("%s/%s running", kindWorkspace, w.ID) })
			}
			return a.printStreamed(w, func() string { return fmt.Sprintf("%s/%s resume requested (was %s)", kindWorkspace, w.ID, w.Phase) })
		}),
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the workspace is running, showing its phases on stderr")
	cmd.Flags().DurationVar(&waitTimeout, "wait-timeout", DefaultWaitTimeout, "how long --wait waits")
	return cmd
}

// waitPhase waits for workspace id to reach phase, printing each phase
// change to stderr. A workspace that fails or is being deleted meanwhile
// ends the wait: it will not reach phase.
func (a *app) waitPhase(ctx context.Context, c *client.Client, id, phase string, timeout time.Duration) (*wire.Workspace, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var ended error
	ws, err := c.WaitWorkspace(ctx, id, phase, func(w *wire.Workspace) {
		a.progress(w)
		if w.Phase == wire.PhaseFailed || w.Phase == wire.PhaseTerminating {
			ended = fmt.Errorf("workspace %s: %s, not %s: %s", id, w.Phase, phase, w.Reason)
			cancel()
		}
	})
	switch {
	case ended != nil:
		return ws, ended
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		cur := ""
		if ws != nil {
			cur = ws.Phase
		}
		return ws, fmt.Errorf("workspace %s: not %s after %s (still %s)", id, phase, timeout, cur)
	}
	return ws, err
}
