package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/wire"
)

func (a *app) sessionRunCommand() *cobra.Command {
	var agent, instructions string
	cmd := &cobra.Command{
		Use:     "run WORKSPACE --agent ID -i TEXT",
		Short:   "Run an agent on a workspace: open a session, print its transcript as it happens, then how it ended",
		Example: `  primectl session run ws-1a2b --agent code-runner -i "Run this code: print(6 * 7)"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			if agent == "" || instructions == "" {
				return usagef("--agent ID and -i TEXT are required")
			}
			ctx := cmd.Context()
			cl := a.client()
			ses, err := cl.CreateSession(ctx, wire.CreateSessionRequest{WorkspaceID: args[0], Agent: agent, Instructions: instructions})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "session: %s\n", ses.ID)
			run, err := cl.FollowTranscript(ctx, ses.ID, func(e wire.TranscriptEntry) error {
				return a.printEntry(e)
			})
			if err != nil {
				return err
			}
			return a.printEnd(run)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "the agent (a kind: agent document's id)")
	f.StringVarP(&instructions, "instructions", "i", "", "the instructions: the run's first message")
	return cmd
}

func (a *app) sessionTranscriptCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "transcript ID",
		Short: "Print a session's agent run: messages, tool calls with their results and commits, token usage",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			t, err := a.client().SessionTranscript(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.output != "table" {
				return a.printObject(t, nil)
			}
			for _, e := range t.Items {
				if err := a.printEntry(e); err != nil {
					return err
				}
			}
			_, err = fmt.Fprintf(a.stdout, "usage: %d input tokens, %d output tokens\n", t.Usage.InputTokens, t.Usage.OutputTokens)
			if err == nil && t.Run != nil && t.Run.Status == wire.AgentEnded {
				_, err = fmt.Fprintf(a.stdout, "ended: %s\n", t.Run.EndReason)
			}
			return err
		}),
	}
}

// printEntry prints one transcript entry as a line or two.
func (a *app) printEntry(e wire.TranscriptEntry) error {
	var line string
	switch e.Role {
	case wire.RoleUser:
		line = "user: " + e.Content
	case wire.RoleAssistant:
		line = fmt.Sprintf("assistant (turn %d, %d+%d tokens): %s", e.Turn, e.InputTokens, e.OutputTokens, strings.TrimSpace(e.Content))
	case wire.RoleTool:
		line = fmt.Sprintf("tool %s %s -> %s", e.ToolName, compact(e.ToolArgs), compact(e.ToolResult))
		if e.Commit != "" {
			line += " [commit " + e.Commit[:min(12, len(e.Commit))] + "]"
		}
	}
	_, err := fmt.Fprintln(a.stdout, line)
	return err
}

func compact(b json.RawMessage) string {
	const width = 300
	s := strings.ReplaceAll(string(b), "\n", `\n`)
	if len(s) > width {
		s = s[:width] + "..."
	}
	return s
}

// printEnd prints how the run ended: exit status 0 only when it completed.
func (a *app) printEnd(run *wire.SessionRun) error {
	msg := "ended: " + run.EndReason
	if run.Error != "" {
		msg += ": " + run.Error
	}
	if _, err := fmt.Fprintln(a.stdout, msg); err != nil {
		return err
	}
	if run.EndReason != wire.AgentCompleted {
		return &exitError{ExitError}
	}
	return nil
}
