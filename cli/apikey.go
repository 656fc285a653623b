package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/wire"
)

const kindAPIKey = "apikey"

func (a *app) apikeyCommand() *cobra.Command {
	cmd := a.group("apikey", "Create, list and revoke API keys", "apikeys", "key", "keys")
	cmd.AddCommand(a.apikeyCreateCommand(), a.apikeyListCommand(), a.apikeyGetCommand(), a.apikeyRevokeCommand())
	return cmd
}

func (a *app) apikeyCreateCommand() *cobra.Command {
	var req wire.CreateAPIKeyRequest
	var expires string
	cmd := &cobra.Command{
		Use:   "create --role admin|member|viewer [--tenant ID] [--name TEXT] [--ttl DURATION | --expires TIME] [--root]",
		Short: "Create an API key; it is printed once and never shown again",
		Long: `Create an API key. The key is printed on stdout this once: Primer keeps only its
hash. Give it to its user, who sets PRIMER_TOKEN or puts it in the config file
(~/.config/primer/config.yaml: "token: <key>", mode 0600).

An admin key may create any key for any tenant; a member key only member and
viewer keys of its own tenant; a viewer key none.

The new key lives inside the life of the key that creates it: it stops working
when that key is revoked or expires, and may not expire later than it (without
--ttl or --expires it expires with it). An admin replacing its own key gives
--root, so the new key outlives the old one.`,
		Example: `  primectl apikey create --tenant team-a --role member --name alice --ttl 90d
  export PRIMER_TOKEN=$(primectl apikey create --role viewer --name dashboard)`,
		Args: args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			if expires != "" {
				if req.TTL != "" {
					return usagef("--ttl and --expires: give one")
				}
				t, err := time.Parse(time.RFC3339, expires)
				if err != nil {
					return usagef("--expires %s: want an RFC 3339 time such as 2027-01-31T00:00:00Z", expires)
				}
				req.ExpiresAt = &t
			}
			k, err := a.client().CreateAPIKey(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.output != "table" {
				return a.printObject(k, nil)
			}
			// The key alone on stdout, so $(primectl apikey create ...) is the key.
			fmt.Fprintf(a.stderr, "%s/%s created for tenant %s, role %s. The key below is shown only this once: store it now.\n",
				kindAPIKey, k.ID, k.TenantID, k.Role)
			fmt.Fprintln(a.stdout, k.Key)
			if k.E2BKey != "" {
				// The same key re-encoded for E2B's SDKs (/e2b), whose
				// Python client accepts only e2b_<hex>.
				fmt.Fprintf(a.stderr, "For E2B's SDKs, the same key: E2B_API_KEY=%s\n", k.E2BKey)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&req.TenantID, "tenant", "", "the key's tenant (default: the caller's)")
	f.StringVar(&req.Role, "role", "", "admin, member or viewer")
	f.StringVar(&req.Name, "name", "", "who or what the key is for")
	f.StringVar(&req.TTL, "ttl", "", "how long the key works, e.g. 720h or 90d (default: until revoked)")
	f.StringVar(&expires, "expires", "", "when the key stops working, an RFC 3339 time")
	f.BoolVar(&req.Root, "root", false, "admin keys: a key that outlives the key creating it (to replace an admin key)")
	_ = cmd.MarkFlagRequired("role")
	return cmd
}

func (a *app) apikeyListCommand() *cobra.Command {
	var tenant string
	var tree bool
	cmd := &cobra.Command{
		Use:   "list [--tenant ID] [--tree]",
		Short: "List API keys (an admin sees every tenant's, anyone else its own tenant's)",
		Args:  args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			if tree {
				ns, err := a.client().ListAPIKeyTree(cmd.Context(), tenant)
				if err != nil {
					return err
				}
				ks := make([]wire.APIKey, len(ns))
				for i, n := range ns {
					ks[i] = n.APIKey
					ks[i].ID = strings.Repeat("  ", min(n.Depth, wire.MaxKeyDepth)) + n.ID
				}
				return a.printObject(list[wire.APIKeyNode]{Items: ns}, a.apikeyTable(ks))
			}
			ks, err := a.client().ListAPIKeys(cmd.Context(), tenant)
			if err != nil {
				return err
			}
			return a.printObject(list[wire.APIKey]{Items: ks}, a.apikeyTable(ks))
		}),
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "only this tenant's keys (admin keys)")
	cmd.Flags().BoolVar(&tree, "tree", false, "as a tree: each key followed, indented, by the keys minted under it")
	return cmd
}

func (a *app) apikeyGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show an API key's row (never the key)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			k, err := a.client().GetAPIKey(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printObject(k, a.apikeyTable([]wire.APIKey{*k}))
		}),
	}
}

func (a *app) apikeyRevokeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID...",
		Short: "Revoke API keys and every key minted under them; they stop working at once",
		Args:  args(cobra.MinimumNArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			for _, id := range args {
				if _, err := a.client().RevokeAPIKey(cmd.Context(), id); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s/%s revoked\n", kindAPIKey, id)
			}
			return nil
		}),
	}
}

// keyStatus is active, revoked or expired.
func (a *app) keyStatus(k wire.APIKey) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !a.now().Before(*k.ExpiresAt):
		return "expired"
	}
	return "active"
}

func (a *app) apikeyTable(ks []wire.APIKey) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "TENANT", "ROLE", "NAME", "STATUS", "EXPIRES", "LAST-USED", "AGE")
		for _, k := range ks {
			expires, used := "never", "never"
			if k.ExpiresAt != nil {
				expires = k.ExpiresAt.UTC().Format(time.RFC3339)
			}
			if k.LastUsedAt != nil {
				used = a.age(*k.LastUsedAt) + " ago"
			}
			row(w, k.ID, k.TenantID, k.Role, k.Name, a.keyStatus(k), expires, used, a.age(k.CreatedAt))
		}
	}
}
