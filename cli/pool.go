package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/wire"
)

func (a *app) poolCommand() *cobra.Command {
	cmd := a.group("pool", "Lease workspaces from warm pools", "pools")
	cmd.AddCommand(a.poolLeaseCommand())
	return cmd
}

func (a *app) poolLeaseCommand() *cobra.Command {
	var labels []string
	var leaseTTL string
	var wait bool
	var waitTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "lease ID [--label KEY=VALUE]... [--wait]",
		Short: "Take a workspace from a warm pool (a new one when the pool has none idle)",
		Long: `Take a workspace from a warm pool. A warm lease hands out an idle workspace that
is running already; when the pool has none idle, a new workspace of the pool's
template is created (a cold lease, still pending: --wait waits until it runs).
Labels are given to a workspace created for a cold lease. Give the workspace back
with 'primectl workspace return ID'.`,
		Example: `  primectl pool lease py-warm
  primectl pool lease py-warm --wait -o json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			req := wire.LeaseRequest{LeaseTTL: leaseTTL}
			for _, l := range labels {
				k, v, ok := strings.Cut(l, "=")
				if !ok || k == "" {
					return usagef("--label %s: want KEY=VALUE", l)
				}
				if req.Labels == nil {
					req.Labels = map[string]string{}
				}
				req.Labels[k] = v
			}
			c := a.client()
			lease, err := c.LeasePool(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if a.output == "table" {
				fmt.Fprintf(a.stdout, "%s/%s leased from %s/%s (%s)\n", kindWorkspace, lease.Workspace.ID, kindPool, args[0], lease.Source)
			}
			if wait && lease.Workspace.Phase != wire.PhaseRunning {
				w, err := a.waitRunning(cmd.Context(), c, lease.Workspace.ID, waitTimeout)
				if err != nil {
					return err
				}
				lease.Workspace = w
			}
			if a.output != "table" {
				return a.printObject(lease, nil)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringArrayVar(&labels, "label", nil, "a label KEY=VALUE for a cold-created workspace (repeatable)")
	f.BoolVar(&wait, "wait", false, "wait until the workspace is running (a cold lease starts pending)")
	f.StringVar(&leaseTTL, "ttl", "", "how long the lease lasts unless returned or extended (default: the pool's lease_ttl)")
	f.DurationVar(&waitTimeout, "wait-timeout", DefaultWaitTimeout, "how long --wait waits")
	return cmd
}

func (a *app) workspaceReturnCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "return ID",
		Short: "Give a workspace leased from a pool back to it (it is reset, then idle again)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			w, err := a.client().ReturnWorkspace(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printStreamed(w, func() string {
				return fmt.Sprintf("%s/%s returning to %s/%s", kindWorkspace, w.ID, kindPool, w.PoolID)
			})
		}),
	}
}

func (a *app) workspaceRecoverCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "recover ID",
		Short: "Ask an escalated or failed workspace to try a replacement now",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			w, err := a.client().RecoverWorkspace(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printStreamed(w, func() string {
				return fmt.Sprintf("%s/%s recovery requested (was %s)", kindWorkspace, w.ID, w.Phase)
			})
		}),
	}
}
