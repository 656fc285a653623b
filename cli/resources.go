package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

const resourceHelp = `Resources: provider (providers, prov), template (templates, tpl),
pool (pools, workspace_pool), workspace (workspaces, ws), session (sessions, ses),
suite (suites, eval_suite), run (runs), llm_provider (llm_providers, llm), agent (agents).`

func (a *app) getCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get RESOURCE [ID]",
		Short: "Show one provider, template, pool, workspace or session (all of them without ID)",
		Long:  "Show one resource by id, or list them all without ID.\n" + resourceHelp,
		Example: `  primectl get workspace ws-1a2b
  primectl get tpl default -o yaml`,
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			kind, err := resourceKind(args[0])
			if err != nil {
				return err
			}
			if len(args) == 1 {
				return a.list(cmd.Context(), kind, listFilters{})
			}
			return a.get(cmd.Context(), kind, args[1])
		}),
	}
}

// get prints one resource.
func (a *app) get(ctx context.Context, kind, id string) error {
	c := a.client()
	switch kind {
	case kindSuite:
		return a.getSuite(ctx, id)
	case kindRun:
		return a.getRun(ctx, id)
	case kindLLM, kindAgent:
		return a.getLLM(ctx, kind, id)
	case kindProvider:
		p, err := c.GetProvider(ctx, id)
		if err != nil {
			return err
		}
		return a.printObject(p, a.providerTable([]wire.Provider{*p}))
	case kindTemplate:
		t, err := c.GetTemplate(ctx, id)
		if err != nil {
			return err
		}
		return a.printObject(t, a.templateTable([]wire.Template{*t}))
	case kindPool:
		p, err := c.GetPool(ctx, id)
		if err != nil {
			return err
		}
		return a.printObject(p, a.poolTable([]wire.PoolView{*p}))
	case kindWorkspace:
		w, err := c.GetWorkspace(ctx, id)
		if err != nil {
			return err
		}
		return a.printObject(w, a.workspaceTable([]wire.Workspace{*w}))
	default:
		s, err := c.GetSession(ctx, id)
		if err != nil {
			return err
		}
		return a.printObject(s, a.sessionTable([]wire.Session{*s}))
	}
}

// listFilters are the flags of `list`; which apply depends on the resource.
type listFilters struct {
	phase, template, provider, backend string
	pool, poolState                    string
	limit                              int
	workspace, status                  string
	suite                              string
}

// plural names a kind's resources in messages.
func plural(kind string) string {
	switch kind {
	case kindProvider:
		return "providers"
	case kindTemplate:
		return "templates"
	case kindPool:
		return "pools"
	case kindWorkspace:
		return "workspaces"
	case kindSuite:
		return "suites"
	case kindRun:
		return "runs"
	case kindLLM:
		return "llm providers"
	case kindAgent:
		return "agents"
	}
	return "sessions"
}

// filtersOf names the list filters a kind accepts.
func filtersOf(kind string) []string {
	switch kind {
	case kindTemplate:
		return []string{"provider"}
	case kindPool:
		return []string{"template"}
	case kindWorkspace:
		return []string{"phase", "template", "provider", "backend", "pool", "pool-state", "limit"}
	case kindSession:
		return []string{"workspace", "status"}
	case kindRun:
		return []string{"suite", "status", "limit"}
	}
	return nil
}

func (a *app) listCommand() *cobra.Command {
	var f listFilters
	cmd := &cobra.Command{
		Use:     "list RESOURCE [flags]",
		Aliases: []string{"ls"},
		Short:   "List providers, templates, pools, workspaces or sessions",
		Long: "List resources, optionally filtered.\n" + resourceHelp + `
Filters: templates --provider; pools --template; workspaces --phase --template --provider
--backend --pool --pool-state --limit; sessions --workspace --status;
runs --suite --status --limit.`,
		Example: `  primectl list workspaces --phase running
  primectl ls ws -o json
  primectl list sessions --workspace ws-1a2b --status open`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			kind, err := resourceKind(args[0])
			if err != nil {
				return err
			}
			for _, name := range []string{"phase", "template", "provider", "backend", "pool", "pool-state", "limit", "workspace", "status", "suite"} {
				if cmd.Flags().Changed(name) && !slices.Contains(filtersOf(kind), name) {
					return usagef("--%s does not filter %s", name, plural(kind))
				}
			}
			return a.list(cmd.Context(), kind, f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.phase, "phase", "", "workspaces in this phase (pending, running, failed, escalated, terminating)")
	fl.StringVar(&f.template, "template", "", "pools or workspaces of this template")
	fl.StringVar(&f.pool, "pool", "", "workspaces of this warm pool")
	fl.StringVar(&f.poolState, "pool-state", "", "workspaces in this pool state (idle, leased, returning)")
	fl.StringVar(&f.provider, "provider", "", "templates or workspaces on this provider")
	fl.StringVar(&f.backend, "backend", "", "workspaces of this backend (local, worktree, ...)")
	fl.IntVar(&f.limit, "limit", 0, "at most this many workspaces or runs (0: all)")
	fl.StringVar(&f.workspace, "workspace", "", "sessions on this workspace")
	fl.StringVar(&f.status, "status", "", "sessions (open, ended) or runs (pending, running, succeeded, canceled, failed) with this status")
	fl.StringVar(&f.suite, "suite", "", "runs of this eval suite")
	return cmd
}

// list prints the resources of kind that f selects.
func (a *app) list(ctx context.Context, kind string, f listFilters) error {
	c := a.client()
	switch kind {
	case kindSuite:
		return a.listSuites(ctx)
	case kindRun:
		return a.listRuns(ctx, f)
	case kindLLM, kindAgent:
		return a.listLLM(ctx, kind)
	case kindProvider:
		ps, err := c.ListProviders(ctx)
		if err != nil {
			return err
		}
		return a.printObject(list[wire.Provider]{nonNil(ps)}, a.providerTable(ps))
	case kindTemplate:
		ts, err := c.ListTemplates(ctx, client.TemplateListOptions{ProviderID: f.provider})
		if err != nil {
			return err
		}
		return a.printObject(list[wire.Template]{nonNil(ts)}, a.templateTable(ts))
	case kindPool:
		ps, err := c.ListPools(ctx, client.PoolListOptions{TemplateID: f.template})
		if err != nil {
			return err
		}
		return a.printObject(list[wire.PoolView]{nonNil(ps)}, a.poolTable(ps))
	case kindWorkspace:
		ws, err := c.ListWorkspaces(ctx, client.WorkspaceListOptions{
			Phase: f.phase, TemplateID: f.template, ProviderID: f.provider, Backend: f.backend,
			PoolID: f.pool, PoolState: f.poolState, Limit: f.limit,
		})
		if err != nil {
			return err
		}
		return a.printObject(list[wire.Workspace]{nonNil(ws)}, a.workspaceTable(ws))
	default:
		ss, err := c.ListSessions(ctx, client.SessionListOptions{WorkspaceID: f.workspace, Status: f.status})
		if err != nil {
			return err
		}
		return a.printObject(list[wire.Session]{nonNil(ss)}, a.sessionTable(ss))
	}
}

// nonNil makes an empty list print as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (a *app) deleteCommand() *cobra.Command {
	var wait bool
	var waitTimeout time.Duration
	var reason string
	cmd := &cobra.Command{
		Use:   "delete RESOURCE ID... [--wait]",
		Short: "Delete providers, templates, pools or workspaces, or end sessions",
		Long: "Delete resources by id. Deleting a workspace starts its teardown; --wait waits\n" +
			"until it is gone. Deleting a pool removes its idle workspaces in the background and\n" +
			"leaves leased ones to their lessees. Deleting a session ends it (--reason).\n" + resourceHelp,
		Example: `  primectl delete workspace ws-1a2b --wait
  primectl delete session ses-9f8e --reason done`,
		Args: args(cobra.MinimumNArgs(2)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			kind, err := resourceKind(args[0])
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("reason") && kind != kindSession {
				return usagef("--reason applies to sessions only")
			}
			ctx := cmd.Context()
			c := a.client()
			for _, id := range args[1:] {
				if err := a.delete(ctx, c, kind, id, reason); err != nil {
					return err
				}
			}
			if !wait || kind != kindWorkspace {
				return nil
			}
			for _, id := range args[1:] {
				if err := a.waitGone(ctx, c, id, waitTimeout); err != nil {
					return err
				}
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&wait, "wait", false, "for workspaces: wait until they are gone, showing their phases on stderr")
	f.DurationVar(&waitTimeout, "wait-timeout", DefaultWaitTimeout, "how long --wait waits")
	f.StringVar(&reason, "reason", "", "for sessions: the end reason (default ended_by_user)")
	return cmd
}

// delete deletes (or, for a session, ends) one resource and says so.
func (a *app) delete(ctx context.Context, c *client.Client, kind, id, reason string) error {
	switch kind {
	case kindSuite:
		if err := c.DeleteSuite(ctx, id); err != nil {
			return err
		}
	case kindRun:
		return usagef("runs cannot be deleted; cancel one with 'primectl run cancel ID'")
	case kindLLM:
		if err := c.DeleteLLMProvider(ctx, id); err != nil {
			return err
		}
	case kindAgent:
		if err := c.DeleteAgent(ctx, id); err != nil {
			return err
		}
	case kindProvider:
		if err := c.DeleteProvider(ctx, id); err != nil {
			return err
		}
	case kindTemplate:
		if err := c.DeleteTemplate(ctx, id); err != nil {
			return err
		}
	case kindPool:
		p, err := c.DeletePool(ctx, id)
		if err != nil {
			return err
		}
		return a.printStreamed(p, func() string {
			return fmt.Sprintf("%s/%s deleted (%d idle workspaces being removed, %d leased kept)",
				kindPool, id, p.Status.Idle+p.Status.Starting, p.Status.Leased+p.Status.Returning)
		})
	case kindWorkspace:
		w, err := c.DeleteWorkspace(ctx, id)
		if err != nil {
			return err
		}
		return a.printStreamed(w, func() string { return fmt.Sprintf("%s/%s %s", kindWorkspace, id, w.Phase) })
	case kindSession:
		s, err := c.EndSession(ctx, id, reason)
		if err != nil {
			return err
		}
		return a.printStreamed(s, func() string { return fmt.Sprintf("%s/%s ended (%s)", kindSession, id, s.EndReason) })
	}
	_, err := fmt.Fprintf(a.stdout, "%s/%s deleted\n", kind, id)
	return err
}

// waitGone waits for a deleted workspace to disappear, printing its phase
// changes to stderr.
func (a *app) waitGone(ctx context.Context, c *client.Client, id string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	phase := ""
	err := c.WaitGone(ctx, id, func(w *wire.Workspace) {
		phase = w.Phase
		a.progress(w)
	})
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("workspace %s: not gone after %s (still %s)", id, timeout, phase)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s/%s deleted\n", kindWorkspace, id)
	return err
}
