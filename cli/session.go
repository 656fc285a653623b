package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/wire"
)

func (a *app) sessionCommand() *cobra.Command {
	cmd := a.group("session", "Open and end agent sessions; call tools and read, diff and restore their history", "ses", "sessions")
	cmd.AddCommand(a.sessionCreateCommand(), a.sessionEndCommand(), a.sessionToolCommand(),
		a.sessionHistoryCommand(), a.sessionDiffCommand(), a.sessionRestoreCommand(),
		a.sessionRunCommand(), a.sessionTranscriptCommand())
	return cmd
}

func (a *app) sessionCreateCommand() *cobra.Command {
	var req wire.CreateSessionRequest
	var meta []string
	cmd := &cobra.Command{
		Use:     "create --workspace ID [--agent NAME] [--metadata KEY=VALUE]...",
		Short:   "Open a session on a workspace",
		Example: `  primectl session create --workspace ws-1a2b --agent claude`,
		Args:    args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			if req.WorkspaceID == "" {
				return usagef("--workspace ID is required")
			}
			for _, m := range meta {
				k, v, ok := strings.Cut(m, "=")
				if !ok || k == "" {
					return usagef("--metadata %s: want KEY=VALUE", m)
				}
				if req.Metadata == nil {
					req.Metadata = map[string]string{}
				}
				req.Metadata[k] = v
			}
			s, err := a.client().CreateSession(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.output == "table" {
				_, err = fmt.Fprintf(a.stdout, "%s/%s\n", kindSession, s.ID)
				return err
			}
			return a.printObject(s, nil)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&req.WorkspaceID, "workspace", "", "the workspace the session runs on")
	f.StringVar(&req.Agent, "agent", "", "the agent's name")
	f.StringArrayVar(&meta, "metadata", nil, "metadata KEY=VALUE (repeatable)")
	return cmd
}

func (a *app) sessionEndCommand() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "end ID [--reason REASON]",
		Short: "End a session (an ended session keeps its first reason)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			return a.delete(cmd.Context(), a.client(), kindSession, args[0], reason)
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the session ended (default ended_by_user)")
	return cmd
}
