package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

const kindSnapshot = "workspace_snapshot"

func (a *app) snapshotCommand() *cobra.Command {
	cmd := a.group("snapshot", "Capture a workspace's sandbox, list, show and delete the captures", "snapshots", "snap")
	cmd.AddCommand(a.snapshotCreateCommand(), a.snapshotListCommand(), a.snapshotGetCommand(), a.snapshotDeleteCommand())
	return cmd
}

func (a *app) snapshotCreateCommand() *cobra.Command {
	var mode string
	var labels []string
	var wait bool
	var waitTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "create WORKSPACE [--mode filesystem|full] [--label KEY=VALUE]... [--wait]",
		Short: "Capture a workspace's sandbox; new workspaces can start from it (create with snapshot_id)",
		Example: `  primectl snapshot create ws-1a2b --wait
  primectl snapshot create ws-1a2b --mode full --label step=3`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			req := wire.CreateSnapshotRequest{Mode: mode}
			var err error
			if req.Labels, err = labelMap(labels); err != nil {
				return err
			}
			c := a.client()
			s, err := c.CreateSnapshot(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if wait {
				if a.output == "table" {
					fmt.Fprintf(a.stderr, "%s/%s %s\n", kindSnapshot, s.ID, s.Phase)
				}
				if s, err = a.waitSnapshot(cmd.Context(), c, s.ID, waitTimeout); err != nil {
					return err
				}
			}
			return a.printStreamed(s, func() string {
				return fmt.Sprintf("%s/%s %s (%s of %s/%s)", kindSnapshot, s.ID, s.Phase, s.Mode, kindWorkspace, s.WorkspaceID)
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", "", "filesystem (the default: the files) or full (processes too, where the backend can)")
	f.StringArrayVar(&labels, "label", nil, "a label KEY=VALUE of the snapshot (repeatable)")
	f.BoolVar(&wait, "wait", false, "wait until the snapshot is ready")
	f.DurationVar(&waitTimeout, "wait-timeout", DefaultWaitTimeout, "how long --wait waits")
	return cmd
}

// waitSnapshot waits for snapshot id to be ready, within timeout.
func (a *app) waitSnapshot(ctx context.Context, c *client.Client, id string, timeout time.Duration) (*wire.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := c.WaitSnapshot(ctx, id)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return s, fmt.Errorf("%s %s: not ready after %s", kindSnapshot, id, timeout)
	}
	return s, err
}

func (a *app) snapshotListCommand() *cobra.Command {
	var opts client.SnapshotListOptions
	cmd := &cobra.Command{
		Use:     "list [--workspace ID] [--phase PHASE]",
		Aliases: []string{"ls"},
		Short:   "List the tenant's snapshots, newest first",
		Args:    args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			ss, err := a.client().ListSnapshots(cmd.Context(), opts)
			if err != nil {
				return err
			}
			return a.printObject(list[wire.Snapshot]{Items: nonNil(ss)}, a.snapshotTable(ss))
		}),
	}
	cmd.Flags().StringVar(&opts.WorkspaceID, "workspace", "", "only the snapshots of this workspace")
	cmd.Flags().StringVar(&opts.Phase, "phase", "", "only snapshots in this phase: creating, ready, failed or deleting")
	return cmd
}

func (a *app) snapshotGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a snapshot",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			s, err := a.client().GetSnapshot(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printObject(s, a.snapshotTable([]wire.Snapshot{*s}))
		}),
	}
}

func (a *app) snapshotDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "delete ID",
		Aliases: []string{"rm"},
		Short:   "Delete a snapshot (its capture is removed from the backend, then the row)",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			s, err := a.client().DeleteSnapshot(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printStreamed(s, func() string { return fmt.Sprintf("%s/%s deleting", kindSnapshot, s.ID) })
		}),
	}
}

func (a *app) snapshotTable(ss []wire.Snapshot) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "WORKSPACE", "MODE", "PHASE", "BYTES", "AGE", "REASON")
		for _, s := range ss {
			row(w, s.ID, s.WorkspaceID, s.Mode, s.Phase, strconv.FormatInt(s.Bytes, 10), a.age(s.CreatedAt), s.Reason)
		}
	}
}

// labelMap turns --label KEY=VALUE flags into a map (nil when none).
func labelMap(labels []string) (map[string]string, error) {
	var m map[string]string
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, usagef("--label %s: want KEY=VALUE", l)
		}
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
	}
	return m, nil
}
