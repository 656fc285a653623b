package cli

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// portsCommand lists the ports programs listen on inside a workspace.
func (a *app) portsCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "ports ID",
		Short:   "List the ports programs listen on inside a workspace",
		Example: `  primectl workspace ports ws-1a2b`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			ports, err := a.client().ListPorts(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printObject(list[protocol.ListeningPort]{Items: ports}, func(w io.Writer) {
				row(w, "PORT", "ADDRESS")
				for _, p := range ports {
					row(w, strconv.Itoa(p.Port), p.Address)
				}
			})
		}),
	}
}

// previewCommand makes, lists and revokes preview links.
func (a *app) previewCommand() *cobra.Command {
	var ttl, revoke string
	var listed bool
	cmd := &cobra.Command{
		Use:   "preview ID [PORT]",
		Short: "Make a browser link to a port inside a workspace (or list or revoke links)",
		Long: `Make a signed preview link that opens 127.0.0.1:PORT inside the workspace in a
browser with no API key, until --ttl passes (default 1h), it is revoked, or the
workspace is deleted. The link is printed once: it is not stored. --list shows
the workspace's live links (without their URLs); --revoke ends one at once.`,
		Example: `  primectl workspace preview ws-1a2b 8000 --ttl 30m
  primectl workspace preview ws-1a2b --list
  primectl workspace preview ws-1a2b --revoke pv-0123456789abcdef`,
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			c, id := a.client(), args[0]
			switch {
			case listed || revoke != "":
				if len(args) != 1 || (listed && revoke != "") {
					return usagef("preview: --list and --revoke take the workspace id alone, and not together")
				}
			case len(args) != 2:
				return usagef("preview %s: give the PORT to make a link to (or --list, or --revoke ID)", id)
			}
			switch {
			case listed:
				ps, err := c.ListPreviews(cmd.Context(), id)
				if err != nil {
					return err
				}
				return a.printObject(list[wire.Preview]{Items: ps}, func(w io.Writer) {
					row(w, "ID", "PORT", "EXPIRES", "CREATED BY")
					for _, p := range ps {
						row(w, p.ID, strconv.Itoa(p.Port), p.ExpiresAt.Format(time.RFC3339), p.CreatedBy)
					}
				})
			case revoke != "":
				p, err := c.RevokePreview(cmd.Context(), id, revoke)
				if err != nil {
					return err
				}
				return a.printStreamed(p, func() string { return fmt.Sprintf("preview %s of port %d revoked", p.ID, p.Port) })
			}
			port, err := strconv.Atoi(args[1])
			if err != nil || port < 1 || port > 65535 {
				return usagef("preview %s %s: PORT must be a port from 1 to 65535", id, args[1])
			}
			link, err := c.CreatePreview(cmd.Context(), id, wire.PreviewRequest{Port: port, TTL: ttl})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "preview %s of port %d, until %s\n", link.ID, link.Port, link.ExpiresAt.Format(time.RFC3339))
			return a.printStreamed(link, func() string { return link.URL })
		}),
	}
	cmd.Flags().StringVar(&ttl, "ttl", "", "how long the link lives (a duration, default 1h, at most 168h)")
	cmd.Flags().BoolVar(&listed, "list", false, "list the workspace's live links")
	cmd.Flags().StringVar(&revoke, "revoke", "", "revoke the link with this id")
	return cmd
}
