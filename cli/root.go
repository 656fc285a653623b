// Package cli is primectl, Primer's kubectl-style command line, on the typed
// REST client in api/client. cmd/primectl only calls Run, so every command is
// testable in-process against a fake server.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
)

// Exit codes of primectl (workspace exec exits with the command's own).
const (
	ExitOK       = 0
	ExitError    = 1   // an API or I/O error
	ExitUsage    = 2   // bad flags or arguments
	ExitTimedOut = 124 // workspace exec: the command ran out of time, as timeout(1)
	ExitCanceled = 130 // interrupted (SIGINT)
)

// DefaultURL is the server primectl talks to without --url, PRIMER_URL or
// a url in the config file.
const DefaultURL = "http://127.0.0.1:8080"

// app is one primectl invocation: its streams, global flags and state.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	now            func() time.Time

	url       string
	tokenFlag string
	output    string
	timeout   time.Duration

	c *client.Client // made on first use, after flags are parsed
	// clientOpts are added to the client's options (RunWith).
	clientOpts []client.Option
	cfg        *fileConfig // the config file, read on first use (credentials.go)

	// started is set when a command's RunE begins: errors before it are
	// usage errors (flags, arguments, unknown commands).
	started bool
}

// usageError is bad flags or arguments: exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitError ends primectl with code after its message (if any) was printed.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Run runs primectl with args (without the program name) and returns its
// exit code. Nothing is read from the environment but PRIMER_URL,
// PRIMER_TOKEN, PRIMER_CONFIG and the places credentials.go names.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return RunWith(ctx, args, stdin, stdout, stderr)
}

// RunWith is Run with options added to the API client's (a test's
// transport that checks every answer against the OpenAPI document).
func RunWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, opts ...client.Option) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, now: time.Now, clientOpts: opts}
	root := a.rootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return a.exitCode(cmd, err)
}

// NewRootCommand returns primectl's command tree writing to stdout and
// stderr and reading stdin from os.Stdin (cmd.SetIn to change it). Run is the
// usual entry point; this is for embedding primectl's commands elsewhere.
func NewRootCommand(stdout, stderr io.Writer) *cobra.Command {
	a := &app{stdin: os.Stdin, stdout: stdout, stderr: stderr, now: time.Now}
	return a.rootCommand()
}

// exitCode prints err the way primectl reports failures and maps it to an
// exit code.
func (a *app) exitCode(cmd *cobra.Command, err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue *usageError
	if errors.As(err, &ue) || !a.started {
		fmt.Fprintf(a.stderr, "error: %v\n", err)
		if cmd != nil {
			fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		return ExitUsage
	}
	a.report(err)
	if errs.Is(err, errs.Canceled) {
		return ExitCanceled
	}
	return ExitError
}

// report prints a runtime error: `error: <message> (<code>)` for API errors,
// `error: <message>` for the rest.
func (a *app) report(err error) {
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Fprintf(a.stderr, "error: %v (%s)\n", err, apiErr.Code)
		return
	}
	fmt.Fprintf(a.stderr, "error: %v\n", err)
}

// run wraps a RunE so errors after it starts count as runtime errors.
func (a *app) run(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a.started = true
		return fn(cmd, args)
	}
}

// args wraps a cobra argument validator so its errors are usage errors.
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := v(cmd, a); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

// group returns a command that only holds subcommands: alone it prints its
// help; with an unknown subcommand it is a usage error (cobra would print the
// help and succeed).
func (a *app) group(use, short string, aliases ...string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Aliases: aliases,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "primectl",
		Short: "primectl manages Primer workspaces, pools, templates, providers, sessions and eval suites",
		Long: `primectl manages Primer workspaces, warm pools, templates, providers and sessions
through the Primer REST API (PRIMER_URL, default ` + DefaultURL + `).`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if formats, ok := cmd.Annotations[outputFormats]; ok {
				if slices.Contains(strings.Split(formats, ","), a.output) {
					return nil
				}
				return usagef("-o %s: want %s", a.output, strings.ReplaceAll(formats, ",", ", "))
			}
			switch a.output {
			case "table", "json", "yaml":
				return nil
			}
			return usagef("-o %s: want table, json or yaml", a.output)
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })

	pf := root.PersistentFlags()
	pf.StringVar(&a.url, "url", "", "Primer API address (else env PRIMER_URL, else url: in the config file, else "+DefaultURL+")")
	pf.StringVar(&a.tokenFlag, "token", "", "API key (else env PRIMER_TOKEN, else token: in the config file $PRIMER_CONFIG or ~/.config/primer/config.yaml; on this machine the admin key of a local primer serve is found without any)")
	pf.StringVarP(&a.output, "output", "o", "table", "output format: table, json or yaml")
	pf.DurationVar(&a.timeout, "timeout", client.DefaultTimeout, "timeout of each API request (streams and waits have none)")

	root.AddCommand(
		a.createCommand(),
		a.getCommand(),
		a.listCommand(),
		a.deleteCommand(),
		a.workspaceCommand(),
		a.poolCommand(),
		a.snapshotCommand(),
		a.sessionCommand(),
		a.suiteCommand(),
		a.runCommand(),
		a.tenantCommand(),
		a.apikeyCommand(),
		a.auditCommand(),
	)
	return root
}

// client returns the API client the global flags describe, one per
// invocation so its connections are reused.
func (a *app) client() *client.Client {
	if a.c == nil {
		opts := append([]client.Option{client.WithTimeout(a.timeout), client.WithUserAgent("primectl"), client.WithToken(a.token())}, a.clientOpts...)
		a.c = client.New(a.serverURL(), opts...)
	}
	return a.c
}

// Resource kinds as primectl names them in output lines (`workspace/ws-1`),
// the same names as the YAML kinds.
const (
	kindProvider  = "workspace_provider"
	kindTemplate  = "workspace_template"
	kindPool      = "workspace_pool"
	kindWorkspace = "workspace"
	kindSession   = "session"
	kindSuite     = "eval_suite"
	kindRun       = "run"
	kindLLM       = "llm_provider"
	kindAgent     = "agent"
)

// resourceKind maps what users type (singular, plural, short, YAML kind) to a
// kind.
func resourceKind(s string) (string, error) {
	switch strings.ToLower(s) {
	case "provider", "providers", "prov", "workspace_provider", "workspace_providers":
		return kindProvider, nil
	case "template", "templates", "tpl", "workspace_template", "workspace_templates":
		return kindTemplate, nil
	case "pool", "pools", "workspace_pool", "workspace_pools":
		return kindPool, nil
	case "workspace", "workspaces", "ws":
		return kindWorkspace, nil
	case "session", "sessions", "ses":
		return kindSession, nil
	case "suite", "suites", "eval_suite", "eval_suites":
		return kindSuite, nil
	case "run", "runs":
		return kindRun, nil
	case "llm_provider", "llm_providers", "llm-provider", "llm-providers", "llm":
		return kindLLM, nil
	case "agent", "agents":
		return kindAgent, nil
	}
	return "", usagef("unknown resource %q: want provider, template, pool, workspace, session, suite, run, llm_provider or agent", s)
}
