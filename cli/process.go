package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

// defaultShell is what `workspace shell` runs without a command: a login
// bash where the image has one, else sh.
var defaultShell = []string{"sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash -l; fi; exec sh -l"}

func (a *app) shellCommand() *cobra.Command {
	var envs []string
	var cwd, user string
	cmd := &cobra.Command{
		Use:   "shell ID [flags] [-- COMMAND [ARG...]]",
		Short: "Open an interactive terminal in a workspace",
		Long: `Open an interactive terminal in a workspace, like kubectl exec -it: the command
(default: bash, else sh) runs with a terminal of this terminal's size, which
follows resizes; the local terminal is in raw mode until it ends, so keys such
as Ctrl-C go to the workspace. primectl exits with the command's exit code.
If the connection drops, the command runs on in the workspace.`,
		Example: `  primectl workspace shell ws-1a2b
  primectl ws shell ws-1a2b --cwd src -- python3`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			id, command := args[0], args[1:]
			if dash := cmd.ArgsLenAtDash(); dash > 1 || (dash < 0 && len(args) > 1) {
				return usagef("shell takes one workspace ID, then optionally -- COMMAND")
			}
			if len(command) == 0 {
				command = defaultShell
			}
			env, err := parseEnv(envs)
			if err != nil {
				return err
			}
			return a.shell(cmd.Context(), id, wire.ProcessSpec{Command: command, Env: env, Cwd: cwd, User: user})
		}),
	}
	f := cmd.Flags()
	f.StringArrayVarP(&envs, "env", "e", nil, "environment variable KEY=VALUE (repeatable)")
	f.StringVar(&cwd, "cwd", "", "working directory")
	f.StringVar(&user, "user", "", "the workspace user to run as")
	return cmd
}

// parseEnv reads KEY=VALUE flags.
func parseEnv(envs []string) (map[string]string, error) {
	var env map[string]string
	for _, e := range envs {
		k, v, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return nil, usagef("--env %s: want KEY=VALUE", e)
		}
		if env == nil {
			env = map[string]string{}
		}
		env[k] = v
	}
	return env, nil
}

// shell starts spec with a terminal and attaches this one to it.
func (a *app) shell(ctx context.Context, id string, spec wire.ProcessSpec) error {
	in, _ := a.stdin.(*os.File)
	tty := in != nil && term.IsTerminal(int(in.Fd()))
	size := wire.TerminalSize{Cols: 80, Rows: 24}
	if tty {
		if w, h, err := term.GetSize(int(in.Fd())); err == nil && w > 0 && h > 0 {
			size = wire.TerminalSize{Cols: w, Rows: h}
		}
	}
	spec.PTY = &size
	if t := os.Getenv("TERM"); t != "" && spec.Env["TERM"] == "" {
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		spec.Env["TERM"] = t
	}
	c := a.client()
	p, err := c.StartProcess(ctx, id, spec)
	if err != nil {
		return err
	}
	// Replay: what the command printed before the attach (its prompt).
	at, err := c.AttachProcess(ctx, id, p.PID, client.AttachOptions{Replay: true})
	if err != nil {
		return err
	}
	defer at.Close()
	if tty {
		old, err := term.MakeRaw(int(in.Fd()))
		if err != nil {
			return fmt.Errorf("terminal: raw mode: %w", err)
		}
		defer func() { _ = term.Restore(int(in.Fd()), old) }()
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for range winch {
				if w, h, err := term.GetSize(int(in.Fd())); err == nil {
					_ = at.Resize(ctx, w, h)
				}
			}
		}()
	}
	go a.pumpInput(ctx, at, tty)
	for {
		m, err := at.Recv(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("workspace %s: process %d: connection lost (it runs on): %w", id, p.PID, err)
		}
		switch m.Type {
		case wire.AttachOutput:
			if _, err := a.stdout.Write(m.Data); err != nil {
				return err
			}
		case wire.AttachError:
			if m.Error != nil {
				fmt.Fprintf(a.stderr, "\r\nerror: %s\r\n", m.Error.Message)
			}
		case wire.AttachExit:
			if m.Exit == nil {
				return nil
			}
			return shellExit(m.Exit)
		}
	}
}

// pumpInput sends this terminal's input to the process. At the end of a
// piped (not terminal) input it sends end of file (^D) as a terminal would.
func (a *app) pumpInput(ctx context.Context, at *client.Attachment, tty bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := a.stdin.Read(buf)
		if n > 0 {
			if at.Input(ctx, buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) && !tty {
				_ = at.Input(ctx, []byte{4})
			}
			return
		}
	}
}

// shellExit is primectl's exit for the shell's.
func shellExit(e *wire.ExecExit) error {
	switch {
	case e.ExitCode == 0 && e.Signal == "":
		return nil
	case e.ExitCode > 0 && e.ExitCode <= 255:
		return &exitError{e.ExitCode}
	}
	return &exitError{ExitError}
}

// startBackground starts req as a process that outlives primectl and
// prints its pid. Its timeout is none unless --timeout was given.
func (a *app) startBackground(ctx context.Context, req client.ExecRequest, tag string, timed bool) error {
	spec := wire.ProcessSpec{Command: req.Command, Env: req.Env, Cwd: req.Cwd, User: req.User, Stdin: req.Stdin, Tag: tag}
	if timed {
		spec.Timeout = req.Timeout.String()
	}
	p, err := a.client().StartProcess(ctx, req.WorkspaceID, spec)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%d\n", p.PID)
	return nil
}
