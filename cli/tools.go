package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

func (a *app) sessionToolCommand() *cobra.Command {
	var envs []string
	var cwd string
	var timeout time.Duration
	var mode string
	cmd := &cobra.Command{
		Use:   "tool ID exec|read|write [flags] [-- COMMAND [ARG...] | PATH [FILE|-]]",
		Short: "Call a session tool; each call is recorded as one commit of the workspace's history",
		Long: `Call a session tool the way an agent does. Each call is recorded as one commit of
the workspace's history (see 'primectl session history').
  exec -- COMMAND [ARG...]   run a command (workspace__exec); primectl exits with its code
  read PATH                  write the file's bytes to stdout (workspace__read)
  write PATH [FILE|-]        write a local file or stdin to PATH (workspace__write)
The commit of the call is printed on stderr ("commit <id>").`,
		Example: `  primectl session tool ses-1a2b exec -- sh -c 'ls -la'
  primectl session tool ses-1a2b write notes.md ./notes.md
  primectl session tool ses-1a2b read notes.md`,
		Args: args(cobra.MinimumNArgs(2)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			id, tool, rest := args[0], strings.TrimPrefix(args[1], "workspace__"), args[2:]
			dash := cmd.ArgsLenAtDash()
			if dash >= 0 && dash != 2 {
				return usagef("tool takes a session ID and a tool before --, got %d arguments", dash)
			}
			if tool != "exec" && (cmd.Flags().Changed("env") || cmd.Flags().Changed("cwd") || cmd.Flags().Changed("timeout")) {
				return usagef("--env, --cwd and --timeout apply to exec only")
			}
			if tool != "write" && cmd.Flags().Changed("mode") {
				return usagef("--mode applies to write only")
			}
			c := a.client()
			switch tool {
			case "exec":
				if len(rest) == 0 {
					return usagef("exec: a command is required after --")
				}
				req := client.ToolExecRequest{Args: rest, Cwd: cwd, Timeout: timeout}
				for _, e := range envs {
					k, v, ok := strings.Cut(e, "=")
					if !ok || k == "" {
						return usagef("--env %s: want KEY=VALUE", e)
					}
					if req.Env == nil {
						req.Env = map[string]string{}
					}
					req.Env[k] = v
				}
				res, err := c.ToolExec(cmd.Context(), id, req)
				if err != nil {
					return err
				}
				if a.output != "table" {
					if err := a.printObject(res, nil); err != nil {
						return err
					}
				} else {
					io.WriteString(a.stdout, res.Stdout)
					io.WriteString(a.stderr, res.Stderr)
					fmt.Fprintf(a.stderr, "commit %s\n", res.Commit)
				}
				return a.execExit(id, &wire.ExecResponse{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Signal: res.Signal})
			case "read":
				if len(rest) != 1 {
					return usagef("read: want exactly one PATH")
				}
				res, err := c.ToolRead(cmd.Context(), id, rest[0])
				if err != nil {
					return err
				}
				if a.output != "table" {
					view := map[string]any{"path": res.Path, "size": res.Size, "commit": res.Commit, "content": string(res.Content)}
					if !utf8.Valid(res.Content) {
						view["content"], view["encoding"] = res.Content, "base64" // []byte marshals as base64
					}
					return a.printObject(view, nil)
				}
				if _, err := a.stdout.Write(res.Content); err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "commit %s\n", res.Commit)
				return nil
			case "write":
				if len(rest) < 1 || len(rest) > 2 {
					return usagef("write: want PATH [FILE|-]")
				}
				var r io.Reader = a.stdin
				if len(rest) == 2 && rest[1] != "-" {
					f, err := os.Open(rest[1])
					if err != nil {
						return err
					}
					defer f.Close()
					r = f
				}
				var buf bytes.Buffer
				if _, err := buf.ReadFrom(r); err != nil {
					return fmt.Errorf("read input: %w", err)
				}
				var perm uint64
				if mode != "" {
					var err error
					if perm, err = strconv.ParseUint(mode, 8, 32); err != nil || perm > 0o777 {
						return usagef("--mode %s: want octal permission bits such as 0644", mode)
					}
				}
				res, err := c.ToolWrite(cmd.Context(), id, rest[0], buf.Bytes(), os.FileMode(perm))
				if err != nil {
					return err
				}
				return a.printStreamed(res, func() string {
					return fmt.Sprintf("%s written (%d bytes), commit %s", res.Path, res.Size, res.Commit)
				})
			}
			return usagef("unknown tool %q: want exec, read or write", args[1])
		}),
	}
	f := cmd.Flags()
	f.StringArrayVarP(&envs, "env", "e", nil, "exec: environment variable KEY=VALUE (repeatable; values are never recorded)")
	f.StringVar(&cwd, "cwd", "", "exec: working directory, relative to the workspace root")
	f.DurationVar(&timeout, "timeout", 0, "exec: the command's timeout (default: the server's, 10m)")
	f.StringVar(&mode, "mode", "", "write: octal permission bits of the file (default 0644)")
	return cmd
}

func (a *app) sessionHistoryCommand() *cobra.Command {
	var includeResumed bool
	cmd := &cobra.Command{
		Use:   "history ID [--include-resumed]",
		Short: "List a session's recorded tool calls, newest first",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			h, err := a.client().SessionHistory(cmd.Context(), args[0], includeResumed)
			if err != nil {
				return err
			}
			if a.output == "table" && h.ResumedFrom != "" {
				fmt.Fprintf(a.stderr, "%s/%s resumes %s/%s\n", kindSession, args[0], kindSession, h.ResumedFrom)
			}
			return a.printObject(h, a.historyTable(h.Items))
		}),
	}
	cmd.Flags().BoolVar(&includeResumed, "include-resumed", false, "also list the calls of the lost session this one resumes")
	return cmd
}

func (a *app) sessionDiffCommand() *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "diff ID [COMMIT | --from A --to B]",
		Short: "Show what a recorded call changed (COMMIT against its parent), or the change from A to B",
		Example: `  primectl session diff ses-1a2b 3f2a9c...
  primectl session diff ses-1a2b --from 3f2a9c... --to 8e1d07...`,
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			opts := client.DiffOptions{From: from, To: to}
			if len(args) == 2 {
				if from != "" || to != "" {
					return usagef("give COMMIT or --from and --to, not both")
				}
				opts.Commit = args[1]
			} else if from == "" && to == "" {
				return usagef("give COMMIT, or --from and --to")
			}
			d, err := a.client().SessionDiff(cmd.Context(), args[0], opts)
			if err != nil {
				return err
			}
			if a.output == "table" {
				_, err := io.WriteString(a.stdout, d.Patch)
				return err
			}
			return a.printObject(d, nil)
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "the older commit (default: the parent of --to)")
	cmd.Flags().StringVar(&to, "to", "", "the newer commit")
	return cmd
}

func (a *app) sessionRestoreCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "restore ID COMMIT",
		Short: "Make the session's workspace files those of a recorded commit (recorded as a new commit)",
		Args:  args(cobra.ExactArgs(2)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			r, err := a.client().RestoreSession(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if a.output != "table" {
				return a.printObject(r, nil)
			}
			fmt.Fprintf(a.stdout, "restored %s as commit %s (%d paths changed)\n", shortCommit(r.RestoredFrom), r.Commit, len(r.Changed))
			return nil
		}),
	}
}
