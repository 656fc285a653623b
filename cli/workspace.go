package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

func (a *app) workspaceCommand() *cobra.Command {
	cmd := a.group("workspace", "Work inside a workspace: exec, files, events; return or recover it", "ws")
	cmd.AddCommand(a.execCommand(), a.filesCommand(), a.eventsCommand(), a.workspaceReturnCommand(), a.workspaceRecoverCommand(),
		a.workspaceExtendCommand(), a.shellCommand(), a.workspaceForkCommand(), a.workspacePauseCommand(), a.workspaceResumeCommand(),
		a.portForwardCommand(), a.portsCommand(), a.previewCommand())
	return cmd
}

func (a *app) execCommand() *cobra.Command {
	var envs []string
	var cwd, user string
	var timeout time.Duration
	var stdin, background bool
	var tag string
	cmd := &cobra.Command{
		Use:   "exec ID [flags] -- COMMAND [ARG...]",
		Short: "Run a command in a workspace, streaming its output",
		Long: `Run a command in a workspace. Its stdout and stderr are streamed as they come,
and primectl exits with the command's exit code (124 if it timed out).
--timeout here is the command's timeout, not a request timeout.`,
		Example: `  primectl workspace exec ws-1a2b -- ls -la
  primectl ws exec ws-1a2b --env DEBUG=1 --cwd src -- make test
  primectl ws exec ws-1a2b --user user --cwd /tmp -- id
  echo hi | primectl ws exec ws-1a2b -i -- cat`,
		Args: args(cobra.MinimumNArgs(2)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			id, command := args[0], args[1:]
			if dash := cmd.ArgsLenAtDash(); dash > 1 {
				return usagef("exec takes one workspace ID before --, got %d arguments", dash)
			}
			req := client.ExecRequest{WorkspaceID: id, Command: command, Cwd: cwd, User: user, Timeout: timeout}
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
			if stdin {
				b, err := io.ReadAll(a.stdin)
				if err != nil {
					return fmt.Errorf("read stdin: %w", err)
				}
				req.Stdin = string(b)
			}
			if background {
				return a.startBackground(cmd.Context(), req, tag, cmd.Flags().Changed("timeout"))
			}
			res, err := a.client().ExecStream(cmd.Context(), req, a.stdout, a.stderr)
			if err != nil {
				return err
			}
			return a.execExit(id, res)
		}),
	}
	f := cmd.Flags()
	f.StringArrayVarP(&envs, "env", "e", nil, "environment variable KEY=VALUE (repeatable)")
	f.StringVar(&cwd, "cwd", "", "working directory, relative to the workspace root, or absolute on an isolated backend (container, kubernetes, vm machines)")
	f.StringVar(&user, "user", "", "run as this user of the sandbox (default: the template's user, else root)")
	f.DurationVar(&timeout, "timeout", 0, "the command's timeout (default: the server's, 10m)")
	f.BoolVarP(&stdin, "stdin", "i", false, "pass primectl's stdin to the command")
	f.BoolVar(&background, "background", false, "start the command as a background process, print its pid and return (see workspace shell)")
	f.StringVar(&tag, "tag", "", "with --background: a name for the process")
	return cmd
}

// execExit turns a finished command into primectl's exit: the command's own
// code, 124 when it timed out, 130 when canceled.
func (a *app) execExit(id string, res *wire.ExecResponse) error {
	switch {
	case res.TimedOut:
		fmt.Fprintf(a.stderr, "error: workspace %s: exec: command timed out\n", id)
		return &exitError{ExitTimedOut}
	case res.Canceled:
		fmt.Fprintf(a.stderr, "error: workspace %s: exec: command canceled\n", id)
		return &exitError{ExitCanceled}
	case res.Signal != "":
		fmt.Fprintf(a.stderr, "error: workspace %s: exec: command killed by %s\n", id, res.Signal)
	}
	switch {
	case res.ExitCode == 0 && res.Signal == "":
		return nil
	case res.ExitCode > 0 && res.ExitCode <= 255:
		return &exitError{res.ExitCode}
	}
	// Not representable as an exit status (a signal without a code).
	return &exitError{ExitError}
}

func (a *app) filesCommand() *cobra.Command {
	cmd := a.group("files", "Read, write, list and remove a workspace's files", "file", "fs")
	cmd.AddCommand(a.filesGetCommand(), a.filesPutCommand(), a.filesLsCommand(), a.filesRmCommand(), a.filesMkdirCommand())
	return cmd
}

func (a *app) filesGetCommand() *cobra.Command {
	var content bool
	cmd := &cobra.Command{
		Use:   "get ID PATH [--content]",
		Short: "Show a file's info or a directory's listing; --content writes the file's bytes to stdout",
		Example: `  primectl workspace files get ws-1a2b src/main.go
  primectl workspace files get ws-1a2b out.tar --content > out.tar`,
		Args: args(cobra.ExactArgs(2)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			ctx, c, id, p := cmd.Context(), a.client(), args[0], args[1]
			if content {
				f, err := c.OpenFile(ctx, id, p)
				if err != nil {
					return err
				}
				defer f.Close()
				if _, err := io.Copy(a.stdout, f); err != nil {
					return fmt.Errorf("workspace %s: read %s: %w", id, p, err)
				}
				return nil
			}
			fi, err := c.StatFile(ctx, id, p)
			if err != nil {
				return err
			}
			if fi.IsDir {
				return a.printListing(cmd, id, p)
			}
			return a.printObject(fi, a.fileTable([]client.FileInfo{*fi}))
		}),
	}
	cmd.Flags().BoolVar(&content, "content", false, "write the file's raw bytes to stdout")
	return cmd
}

// printListing prints the directory p of workspace id.
func (a *app) printListing(cmd *cobra.Command, id, p string) error {
	c := a.client()
	d, err := c.ListFiles(cmd.Context(), id, p)
	if errors.Is(err, client.ErrNotDirectory) {
		fi, err := c.StatFile(cmd.Context(), id, p)
		if err != nil {
			return err
		}
		return a.printObject(fi, a.fileTable([]client.FileInfo{*fi}))
	}
	if err != nil {
		return err
	}
	return a.printObject(d, a.fileTable(d.Items))
}

func (a *app) filesLsCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "ls ID [PATH]",
		Aliases: []string{"list"},
		Short:   "List a directory of a workspace (the root without PATH)",
		Args:    args(cobra.RangeArgs(1, 2)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			p := ""
			if len(args) == 2 {
				p = args[1]
			}
			return a.printListing(cmd, args[0], p)
		}),
	}
}

func (a *app) filesPutCommand() *cobra.Command {
	var mode string
	cmd := &cobra.Command{
		Use:   "put ID PATH [FILE|-]",
		Short: "Write a local file (or stdin) to PATH in a workspace, creating parent directories",
		Example: `  primectl workspace files put ws-1a2b data/input.json ./input.json
  echo hello | primectl workspace files put ws-1a2b greeting.txt`,
		Args: args(cobra.RangeArgs(2, 3)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			id, p := args[0], args[1]
			var r io.Reader = a.stdin
			if len(args) == 3 && args[2] != "-" {
				f, err := os.Open(args[2])
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			var perm uint64
			if mode != "" {
				var err error
				if perm, err = strconv.ParseUint(mode, 8, 32); err != nil || perm > 0o777 {
					return usagef("--mode %s: want octal permission bits such as 0644", mode)
				}
			}
			c := a.client()
			var fi *client.FileInfo
			var err error
			if mode != "" {
				fi, err = c.WriteFileMode(cmd.Context(), id, p, r, os.FileMode(perm))
			} else {
				fi, err = c.WriteFile(cmd.Context(), id, p, r)
			}
			if err != nil {
				return err
			}
			return a.printStreamed(fi, func() string { return fmt.Sprintf("%s written (%d bytes)", p, fi.Size) })
		}),
	}
	cmd.Flags().StringVar(&mode, "mode", "", "octal permission bits of the file (default: the server's, 0644)")
	return cmd
}

func (a *app) filesRmCommand() *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "rm ID PATH [-r]",
		Short: "Remove a file or directory of a workspace",
		Args:  args(cobra.ExactArgs(2)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			if err := a.client().RemoveFile(cmd.Context(), args[0], args[1], recursive); err != nil {
				return err
			}
			_, err := fmt.Fprintf(a.stdout, "%s removed\n", args[1])
			return err
		}),
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "remove a directory and everything in it")
	return cmd
}

func (a *app) filesMkdirCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "mkdir ID PATH",
		Short: "Create a directory (and its parents) in a workspace",
		Args:  args(cobra.ExactArgs(2)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			fi, err := a.client().Mkdir(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			return a.printStreamed(fi, func() string { return args[1] + " created" })
		}),
	}
}

func (a *app) eventsCommand() *cobra.Command {
	var follow bool
	var after uint64
	cmd := &cobra.Command{
		Use:   "events ID [--follow]",
		Short: "Print a workspace's events, one line each: time, type, data",
		Long: `Print a workspace's stored events, oldest first. With --follow, keep printing
new ones as they happen until the workspace is destroyed (or Ctrl-C).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			c, id := a.client(), args[0]
			emit := func(ev wire.Event) error { return a.printStreamed(ev, func() string { return eventLine(ev) }) }
			if follow {
				return c.FollowEvents(cmd.Context(), id, after, emit)
			}
			evs, err := c.Events(cmd.Context(), id, after)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				if err := emit(ev); err != nil {
					return err
				}
			}
			return nil
		}),
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep streaming new events")
	cmd.Flags().Uint64Var(&after, "after", 0, "only events with an id above this")
	return cmd
}
