package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

// DefaultWaitTimeout bounds --wait unless --wait-timeout says otherwise.
const DefaultWaitTimeout = 5 * time.Minute

func (a *app) createCommand() *cobra.Command {
	var file, cases string
	cmd := &cobra.Command{
		Use:   "create -f FILE [--cases CASES.jsonl]",
		Short: "Create the providers, templates, pools, workspaces and eval suites a YAML file describes",
		Long: `Create the resources of a YAML file of one or more '---'-separated documents,
each with a kind (workspace_provider, workspace_template, workspace_pool, workspace,
eval_suite, llm_provider or agent) and a spec.
The whole file is checked before anything is created; documents are then created
in order, and the first failure stops the rest.
--cases adds the cases of a JSONL file (one case a line) to the file's one
eval_suite document; the suite is then sent as JSONL, so suites of thousands of
cases load in one request.`,
		Example: `  primectl create -f primer.yaml
  cat primer.yaml | primectl create -f -
  primectl create -f suite.yaml --cases cases.jsonl`,
		Args: args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usagef("-f FILE is required (- for stdin)")
			}
			if file == "-" && cases == "-" {
				return usagef("-f and --cases cannot both read stdin")
			}
			return a.createFromFile(cmd.Context(), file, cases)
		}),
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "YAML file of documents to create; - for stdin")
	cmd.Flags().StringVar(&cases, "cases", "", "JSONL file of cases for the file's eval_suite document; - for stdin")
	cmd.AddCommand(a.createWorkspaceCommand())
	return cmd
}

// createFromFile creates every document of file in order; casesFile, if
// set, holds the cases of its one eval_suite document.
func (a *app) createFromFile(ctx context.Context, file, casesFile string) error {
	var r io.Reader = a.stdin
	name := "stdin"
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		r, name = f, file
	}
	ms, err := ParseManifests(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if casesFile != "" {
		n := 0
		for _, m := range ms {
			if m.Suite != nil {
				n++
			}
		}
		if n != 1 {
			return usagef("--cases needs exactly one %s document in %s, found %d", kindSuite, name, n)
		}
	}
	c := a.client()
	var created []string
	for _, m := range ms {
		res, obj, err := a.createManifest(ctx, c, m, casesFile)
		if err != nil {
			a.report(fmt.Errorf("%s: document %d (%s): %w", name, m.Index, m.Name(), err))
			if len(created) > 0 {
				fmt.Fprintf(a.stderr, "created before the error: %s\n", strings.Join(created, ", "))
			} else {
				fmt.Fprintln(a.stderr, "nothing was created")
			}
			return &exitError{ExitError}
		}
		created = append(created, res)
		if err := a.printStreamed(obj, func() string { return res + " created" }); err != nil {
			return err
		}
	}
	return nil
}

// createManifest POSTs one document and returns its `kind/id` and the
// created resource.
func (a *app) createManifest(ctx context.Context, c *client.Client, m Manifest, casesFile string) (string, any, error) {
	switch {
	case m.Provider != nil:
		p, err := c.CreateProvider(ctx, *m.Provider)
		if err != nil {
			return "", nil, err
		}
		return kindProvider + "/" + p.ID, p, nil
	case m.Template != nil:
		t, err := c.CreateTemplate(ctx, *m.Template)
		if err != nil {
			return "", nil, err
		}
		return kindTemplate + "/" + t.ID, t, nil
	case m.Pool != nil:
		p, err := c.CreatePool(ctx, *m.Pool)
		if err != nil {
			return "", nil, err
		}
		return kindPool + "/" + p.ID, p, nil
	case m.Workspace != nil:
		w, err := c.CreateWorkspace(ctx, *m.Workspace)
		if err != nil {
			return "", nil, err
		}
		return kindWorkspace + "/" + w.ID, w, nil
	case m.Suite != nil:
		s, err := a.createSuite(ctx, c, m.Suite, casesFile)
		if err != nil {
			return "", nil, err
		}
		return kindSuite + "/" + s.ID, s, nil
	case m.LLM != nil:
		p, err := c.CreateLLMProvider(ctx, *m.LLM)
		if err != nil {
			return "", nil, err
		}
		return kindLLM + "/" + p.ID, p, nil
	case m.Agent != nil:
		ag, err := c.CreateAgent(ctx, *m.Agent)
		if err != nil {
			return "", nil, err
		}
		return kindAgent + "/" + ag.ID, ag, nil
	}
	return "", nil, fmt.Errorf("document %d: empty", m.Index)
}

func (a *app) createWorkspaceCommand() *cobra.Command {
	var sets []string
	var wait bool
	var waitTimeout time.Duration
	cmd := &cobra.Command{
		Use:     "workspace --set template_id=ID [--set labels.KEY=VALUE]... [--wait]",
		Aliases: []string{"ws", "workspaces"},
		Short:   "Create a workspace from a template",
		Example: `  primectl create workspace --set template_id=default --wait
  primectl create ws --set template_id=code-sandbox --set labels.team=evals`,
		Args: args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			req, err := workspaceRequest(sets)
			if err != nil {
				return err
			}
			c := a.client()
			created, err := c.Create(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.output == "table" {
				fmt.Fprintf(a.stdout, "%s/%s created (%s)\n", kindWorkspace, created.ID, sourceText(created))
			}
			if wait {
				ws, err := a.waitRunning(cmd.Context(), c, created.ID, waitTimeout)
				if err != nil {
					return err
				}
				created.Workspace = ws
			}
			if a.output != "table" {
				return a.printObject(created, nil)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringArrayVar(&sets, "set", nil, "a field of the request: template_id=ID, snapshot_id=ID, ttl=DURATION or labels.KEY=VALUE (repeatable)")
	f.BoolVar(&wait, "wait", false, "wait until the workspace is running, showing its phases on stderr")
	f.DurationVar(&waitTimeout, "wait-timeout", DefaultWaitTimeout, "how long --wait waits")
	return cmd
}

// sourceText says where a created workspace came from: "warm, from
// pool/ID" (an idle member of a pool of the template, running already) or
// "cold" (a new one, still pending). An older server that does not say is
// "source unknown".
func sourceText(c *wire.Created) string {
	switch {
	case c.Source == client.LeaseWarm && c.PoolID != "":
		return c.Source + ", from " + kindPool + "/" + c.PoolID
	case c.Source != "":
		return c.Source
	}
	return "source unknown"
}

// workspaceRequest builds a CreateWorkspaceRequest from --set flags.
func workspaceRequest(sets []string) (wire.CreateWorkspaceRequest, error) {
	var req wire.CreateWorkspaceRequest
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		switch {
		case !ok:
			return req, usagef("--set %s: want KEY=VALUE", s)
		case k == "template_id":
			req.TemplateID = v
		case k == "ttl":
			req.TTL = v
		case k == "snapshot_id":
			req.SnapshotID = v
		case strings.HasPrefix(k, "labels.") && len(k) > len("labels."):
			if req.Labels == nil {
				req.Labels = map[string]string{}
			}
			req.Labels[strings.TrimPrefix(k, "labels.")] = v
		default:
			return req, usagef("--set %s: unknown key %q: want template_id, snapshot_id, ttl or labels.KEY", s, k)
		}
	}
	// A workspace from a snapshot may leave the template out: the
	// snapshot's is used.
	if req.TemplateID == "" && req.SnapshotID == "" {
		return req, usagef("--set template_id=ID (or snapshot_id=ID) is required")
	}
	return req, nil
}

// waitRunning waits for workspace id to be running, printing each phase
// change to stderr.
func (a *app) waitRunning(ctx context.Context, c *client.Client, id string, timeout time.Duration) (*wire.Workspace, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	phase := ""
	ws, err := c.WaitWorkspace(ctx, id, wire.PhaseRunning, func(w *wire.Workspace) {
		phase = w.Phase
		a.progress(w)
	})
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ws, fmt.Errorf("workspace %s: not running after %s (still %s)", id, timeout, phase)
	}
	return ws, err
}

// progress prints a workspace's phase (and reason) as a wait sees it.
func (a *app) progress(w *wire.Workspace) {
	if w.Reason != "" {
		fmt.Fprintf(a.stderr, "%s/%s %s: %s\n", kindWorkspace, w.ID, w.Phase, w.Reason)
		return
	}
	fmt.Fprintf(a.stderr, "%s/%s %s\n", kindWorkspace, w.ID, w.Phase)
}
