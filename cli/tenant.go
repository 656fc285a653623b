package cli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/primerhq/primer/wire"
)

const kindTenant = "tenant"

func (a *app) tenantCommand() *cobra.Command {
	cmd := a.group("tenant", "Manage tenants: teams sharing this Primer, with their quotas", "tenants")
	cmd.AddCommand(a.tenantCreateCommand(), a.tenantListCommand(), a.tenantGetCommand(),
		a.tenantUpdateCommand(), a.tenantDeleteCommand())
	return cmd
}

// tenantFlags are the flags of tenant create and update.
type tenantFlags struct {
	description string
	quota       wire.Quota
}

func (f *tenantFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.description, "description", "", "what the tenant is for")
	fs.Int64Var(&f.quota.MaxWorkspaces, "max-workspaces", 0, "most workspaces at once (0: no limit)")
	fs.Float64Var(&f.quota.MaxCPUCores, "max-cpu-cores", 0, "most CPU cores over its workspaces (0: no limit)")
	fs.Int64Var(&f.quota.MaxMemoryBytes, "max-memory-bytes", 0, "most memory bytes over its workspaces (0: no limit)")
	fs.Int64Var(&f.quota.MaxPools, "max-pools", 0, "most warm pools (0: no limit)")
}

// apply sets on spec the fields whose flags were given, so an update changes
// only what it names.
func (f *tenantFlags) apply(fs *pflag.FlagSet, spec *wire.TenantSpec) {
	if fs.Changed("description") {
		spec.Description = f.description
	}
	if fs.Changed("max-workspaces") {
		spec.Quota.MaxWorkspaces = f.quota.MaxWorkspaces
	}
	if fs.Changed("max-cpu-cores") {
		spec.Quota.MaxCPUCores = f.quota.MaxCPUCores
	}
	if fs.Changed("max-memory-bytes") {
		spec.Quota.MaxMemoryBytes = f.quota.MaxMemoryBytes
	}
	if fs.Changed("max-pools") {
		spec.Quota.MaxPools = f.quota.MaxPools
	}
}

func (a *app) tenantCreateCommand() *cobra.Command {
	var f tenantFlags
	cmd := &cobra.Command{
		Use:   "create ID [--description TEXT] [--max-workspaces N] [--max-cpu-cores N] [--max-memory-bytes N] [--max-pools N]",
		Short: "Create a tenant (admin keys only)",
		Example: `  primectl tenant create team-a --description "team A" --max-workspaces 10 --max-cpu-cores 16
  primectl apikey create --tenant team-a --role member --name alice`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			spec := wire.TenantSpec{ID: args[0], Description: f.description, Quota: f.quota}
			t, err := a.client().CreateTenant(cmd.Context(), spec)
			if err != nil {
				return err
			}
			if a.output != "table" {
				return a.printObject(t, nil)
			}
			fmt.Fprintf(a.stdout, "%s/%s created\n", kindTenant, t.ID)
			return nil
		}),
	}
	f.add(cmd.Flags())
	return cmd
}

func (a *app) tenantListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List tenants (an admin sees all, anyone else its own)",
		Args:  args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			ts, err := a.client().ListTenants(cmd.Context())
			if err != nil {
				return err
			}
			return a.printObject(list[wire.Tenant]{Items: ts}, a.tenantTable(ts))
		}),
	}
}

func (a *app) tenantGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a tenant with its quota and what it uses now",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			t, err := a.client().GetTenant(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printObject(t, func(w io.Writer) {
				row(w, "RESOURCE", "USED", "LIMIT")
				row(w, "workspaces", strconv.FormatInt(t.Usage.Workspaces, 10), limit(float64(t.Quota.MaxWorkspaces)))
				row(w, "cpu_cores", strconv.FormatFloat(t.Usage.CPUCores, 'f', -1, 64), limit(t.Quota.MaxCPUCores))
				row(w, "memory_bytes", strconv.FormatInt(t.Usage.MemoryBytes, 10), limit(float64(t.Quota.MaxMemoryBytes)))
				row(w, "pools", strconv.FormatInt(t.Usage.Pools, 10), limit(float64(t.Quota.MaxPools)))
			})
		}),
	}
}

// limit prints a quota field: 0 is no limit.
func limit(v float64) string {
	if v == 0 {
		return "none"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func (a *app) tenantUpdateCommand() *cobra.Command {
	var f tenantFlags
	cmd := &cobra.Command{
		Use:   "update ID [--description TEXT] [--max-workspaces N] [--max-cpu-cores N] [--max-memory-bytes N] [--max-pools N]",
		Short: "Change a tenant's description or quotas (admin keys only); unnamed fields keep their values",
		Example: `  primectl tenant update team-a --max-workspaces 20
  primectl tenant update team-a --max-pools 0   # no limit`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			c := a.client()
			cur, err := c.GetTenant(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			spec := wire.TenantSpec{Description: cur.Description, Quota: cur.Quota}
			f.apply(cmd.Flags(), &spec)
			t, err := c.UpdateTenant(cmd.Context(), args[0], spec)
			if err != nil {
				return err
			}
			if a.output != "table" {
				return a.printObject(t, nil)
			}
			fmt.Fprintf(a.stdout, "%s/%s updated\n", kindTenant, t.ID)
			return nil
		}),
	}
	f.add(cmd.Flags())
	return cmd
}

func (a *app) tenantDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID...",
		Short: "Delete tenants that own nothing and have no active key (admin keys only)",
		Args:  args(cobra.MinimumNArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			for _, id := range args {
				if err := a.client().DeleteTenant(cmd.Context(), id); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s/%s deleted\n", kindTenant, id)
			}
			return nil
		}),
	}
}

func (a *app) tenantTable(ts []wire.Tenant) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "MAX-WORKSPACES", "MAX-CPU", "MAX-MEMORY", "MAX-POOLS", "AGE", "DESCRIPTION")
		for _, t := range ts {
			row(w, t.ID, limit(float64(t.Quota.MaxWorkspaces)), limit(t.Quota.MaxCPUCores), limit(float64(t.Quota.MaxMemoryBytes)),
				limit(float64(t.Quota.MaxPools)), a.age(t.CreatedAt), t.Description)
		}
	}
}
