package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

// auditPoll is how often audit --follow asks for new entries.
var auditPoll = time.Second

// auditPendingGrace is how long audit --follow waits for a pending entry
// (a request still running) to complete before printing it as it is.
const auditPendingGrace = 10 * time.Minute

func (a *app) auditCommand() *cobra.Command {
	var opts client.AuditOptions
	var follow bool
	cmd := &cobra.Command{
		Use:   "audit [--tenant ID] [--limit N] [--follow]",
		Short: "Show the audit log of mutating requests, oldest first",
		Long: `Show the audit log: every mutating API request with its key, tenant, action,
resource, HTTP status, result and client address. An admin key sees every
tenant's entries (--tenant for one); any other key its own tenant's. The newest
--limit entries are printed oldest first; --follow then prints new ones as they
come until interrupted.`,
		Example: `  primectl audit --limit 20
  primectl audit --tenant team-a --follow`,
		Args: args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c := a.client()
			es, err := c.ListAudit(ctx, client.AuditOptions{Tenant: opts.Tenant, Limit: opts.Limit})
			if err != nil {
				return err
			}
			slices.Reverse(es) // the API answers newest first
			if !follow {
				return a.printObject(list[wire.AuditEntry]{Items: es}, a.auditTable(es))
			}
			// An entry is written when its request starts and completed when
			// it ends: --follow prints each once, completed, and asks again
			// from below the oldest pending one (one pending for longer than
			// auditPendingGrace is printed as it is: its server stopped).
			var last uint64
			printed := map[uint64]bool{}
			emit := func(es []wire.AuditEntry) error {
				var pending uint64
				for _, e := range es {
					if e.Result == wire.AuditPending && a.now().Sub(e.CreatedAt) < auditPendingGrace {
						if pending == 0 {
							pending = e.ID
						}
						continue
					}
					last = max(last, e.ID)
					if printed[e.ID] {
						continue
					}
					printed[e.ID] = true
					if err := a.printStreamed(e, func() string { return auditLine(e) }); err != nil {
						return err
					}
				}
				if pending > 0 {
					last = pending - 1
				}
				for id := range printed {
					if id <= last {
						delete(printed, id)
					}
				}
				return nil
			}
			if err := emit(es); err != nil {
				return err
			}
			tick := time.NewTicker(auditPoll)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-tick.C:
				}
				es, err := c.ListAudit(ctx, client.AuditOptions{Tenant: opts.Tenant, AfterID: last, Limit: 1000})
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				if err := emit(es); err != nil {
					return err
				}
			}
		}),
	}
	f := cmd.Flags()
	f.StringVar(&opts.Tenant, "tenant", "", "only this tenant's entries (admin keys)")
	f.IntVar(&opts.Limit, "limit", 50, "how many of the newest entries to show (at most 1000)")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new entries until interrupted")
	return cmd
}

func (a *app) auditTable(es []wire.AuditEntry) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "TIME", "KEY", "TENANT", "ACTION", "RESOURCE", "STATUS", "RESULT", "ADDRESS")
		for _, e := range es {
			row(w, strconv.FormatUint(e.ID, 10), e.CreatedAt.UTC().Format(time.RFC3339), e.KeyID, e.TenantID,
				e.Action, e.Resource, strconv.Itoa(e.Status), e.Result, e.Address)
		}
	}
}

// auditLine is one entry as --follow prints it in table mode.
func auditLine(e wire.AuditEntry) string {
	key, tenant := e.KeyID, e.TenantID
	if key == "" {
		key = "<none>"
	}
	if tenant == "" {
		tenant = "<none>"
	}
	return fmt.Sprintf("%d %s %s %s %s %s %d %s %s", e.ID, e.CreatedAt.UTC().Format(time.RFC3339), key, tenant,
		e.Action, e.Resource, e.Status, e.Result, e.Address)
}
