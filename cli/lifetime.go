package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/wire"
)

// defaultExtendBy is what `workspace extend` adds when given neither
// --by nor --until.
const defaultExtendBy = "30m"

func (a *app) workspaceExtendCommand() *cobra.Command {
	var by, until string
	cmd := &cobra.Command{
		Use:   "extend ID [--by 30m | --until RFC3339]",
		Short: "Push a workspace's deadlines (expiry, lease, idle) out, within its template's lifetime.max",
		Example: `  primectl workspace extend ws-1a2b --by 1h
  primectl workspace extend ws-1a2b --until 2030-01-02T15:04:05Z`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			if by != "" && until != "" {
				return usagef("--by and --until: give one, not both")
			}
			req := wire.ExtendRequest{By: by, Until: until}
			if by == "" && until == "" {
				req.By = defaultExtendBy
			}
			w, err := a.client().ExtendWorkspace(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			return a.printStreamed(w, func() string {
				var parts []string
				for _, d := range []struct {
					name string
					at   *time.Time
				}{{"expires", w.ExpiresAt}, {"lease expires", w.LeaseExpiresAt}, {"idle deadline", w.IdleDeadline}} {
					if d.at != nil {
						parts = append(parts, d.name+" "+d.at.UTC().Format(time.RFC3339))
					}
				}
				return fmt.Sprintf("%s/%s extended: %s", kindWorkspace, w.ID, strings.Join(parts, ", "))
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&by, "by", "", "how much to add to each deadline, a duration (default "+defaultExtendBy+")")
	f.StringVar(&until, "until", "", "an RFC 3339 time to move each deadline to")
	return cmd
}
