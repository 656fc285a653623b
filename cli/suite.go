package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
)

func (a *app) suiteCommand() *cobra.Command {
	cmd := a.group("suite", "Run eval suites, list their cases, and pause, resume or trigger their schedules", "suites")
	cmd.AddCommand(a.suiteRunCommand(), a.suiteCasesCommand(), a.suiteScheduleCommand())
	return cmd
}

func (a *app) suiteRunCommand() *cobra.Command {
	var cases, labels []string
	var triggeredBy string
	var wait bool
	var waitTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "run ID [--case CASE]... [--label KEY=VALUE]... [--wait]",
		Short: "Start a run of a suite (all its cases, or those picked by id or label)",
		Long: `Start a run of an eval suite: all its cases, the cases named with --case, or the
cases whose labels match every --label. With --wait, progress is shown on stderr
until the run ends; primectl then prints the run and exits 0 when every case
passed, 1 otherwise.`,
		Example: `  primectl suite run py-exercises --wait
  primectl suite run py-exercises --case fizzbuzz --case primes
  primectl suite run py-exercises --label level=easy -o json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			req := wire.RunRequest{Cases: cases, TriggeredBy: triggeredBy}
			for _, l := range labels {
				k, v, ok := strings.Cut(l, "=")
				if !ok || k == "" {
					return usagef("--label %s: want KEY=VALUE", l)
				}
				if req.Labels == nil {
					req.Labels = map[string]string{}
				}
				req.Labels[k] = v
			}
			ctx := cmd.Context()
			c := a.client()
			run, err := c.CreateRun(ctx, args[0], req)
			if err != nil {
				return err
			}
			if !wait {
				return a.printStreamed(run, func() string {
					return fmt.Sprintf("%s/%s started: %d cases of %s/%s", kindRun, run.ID, run.Total, kindSuite, run.SuiteID)
				})
			}
			fmt.Fprintf(a.stderr, "%s/%s started: %d cases of %s/%s\n", kindRun, run.ID, run.Total, kindSuite, run.SuiteID)
			return a.waitRun(ctx, c, run.ID, waitTimeout)
		}),
	}
	f := cmd.Flags()
	f.StringArrayVar(&cases, "case", nil, "run this case (repeatable; default: all)")
	f.StringArrayVar(&labels, "label", nil, "run the cases with this label KEY=VALUE (repeatable; all must match)")
	f.StringVar(&triggeredBy, "triggered-by", "", "who starts the run, as the run records it (default: api)")
	f.BoolVar(&wait, "wait", false, "wait until the run ends, showing its progress on stderr; exit 1 unless every case passed")
	f.DurationVar(&waitTimeout, "wait-timeout", 0, "how long --wait waits (0: until the run ends)")
	return cmd
}

// waitRun follows a run until it ends, printing each progress on stderr,
// then prints the run; a run in which not every case passed is exit 1.
func (a *app) waitRun(ctx context.Context, c *client.Client, id string, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var last wire.Progress
	run, err := c.FollowRun(ctx, id, func(p wire.Progress) {
		last = p
		fmt.Fprintf(a.stderr, "%s/%s %s\n", kindRun, id, progressLine(p))
	})
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("run %s: not finished after %s (%s)", id, timeout, progressLine(last))
	}
	if err != nil {
		return err
	}
	if err := a.printObject(run, a.runTable([]wire.RunView{*run})); err != nil {
		return err
	}
	p := run.Progress
	if run.Status == wire.RunSucceeded && p.Pass == p.Total {
		return nil
	}
	msg := fmt.Sprintf("%s/%s %s: %d of %d cases did not pass", kindRun, id, run.Status, p.Total-p.Pass, p.Total)
	if run.Reason != "" {
		msg += " (" + run.Reason + ")"
	}
	fmt.Fprintln(a.stderr, msg)
	return &exitError{ExitError}
}

// progressLine is a run's progress as waits print it.
func progressLine(p wire.Progress) string {
	done := p.Pass + p.Fail + p.Error + p.Canceled
	s := fmt.Sprintf("%d/%d done: %d pass, %d fail, %d error", done, p.Total, p.Pass, p.Fail, p.Error)
	if p.Canceled > 0 {
		s += fmt.Sprintf(", %d canceled", p.Canceled)
	}
	if p.Running > 0 {
		s += fmt.Sprintf("; %d running", p.Running)
	}
	return s
}

func (a *app) suiteCasesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cases ID",
		Short: "Print a suite's cases as JSONL, one case a line (what create --cases reads)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			return a.client().SuiteCasesJSONL(cmd.Context(), args[0], func(line []byte) error {
				_, err := fmt.Fprintf(a.stdout, "%s\n", line)
				return err
			})
		}),
	}
}

func (a *app) suiteScheduleCommand() *cobra.Command {
	cmd := a.group("schedule", "Pause, resume or trigger a suite's schedule")
	ops := []struct {
		name, short, done string
		fn                func(*client.Client, context.Context, string) (*wire.SuiteView, error)
	}{
		{"pause", "Stop a suite's schedule from starting runs", "paused", (*client.Client).PauseSchedule},
		{"resume", "Let a paused schedule start runs again", "resumed", (*client.Client).ResumeSchedule},
		{"trigger", "Make a suite's schedule start a run now", "triggered", (*client.Client).TriggerSchedule},
	}
	for _, op := range ops {
		cmd.AddCommand(&cobra.Command{
			Use:   op.name + " ID",
			Short: op.short,
			Args:  args(cobra.ExactArgs(1)),
			RunE: a.run(func(cmd *cobra.Command, args []string) error {
				s, err := op.fn(a.client(), cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return a.printStreamed(s, func() string {
					return fmt.Sprintf("%s/%s schedule %s", kindSuite, args[0], op.done)
				})
			}),
		})
	}
	return cmd
}

// createSuite creates a suite document; with a cases file it is sent as
// JSONL, the spec line first, then the file's lines as they are.
func (a *app) createSuite(ctx context.Context, c *client.Client, spec *eval.SuiteSpec, casesFile string) (*wire.SuiteView, error) {
	if casesFile == "" {
		return c.CreateSuite(ctx, *spec)
	}
	var r io.Reader = a.stdin
	if casesFile != "-" {
		f, err := os.Open(casesFile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	head, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode spec: %w", err)
	}
	head = append(head, '\n')
	return c.CreateSuiteJSONL(ctx, io.MultiReader(bytes.NewReader(head), r))
}

// suiteSchedule describes a suite's schedule for tables: the stored
// document's cron or interval, and paused as Temporal reports it (else as
// the document says).
func suiteSchedule(s wire.SuiteView) string {
	var spec eval.SuiteSpec
	if json.Unmarshal(s.Spec, &spec) != nil || spec.Schedule == nil {
		return ""
	}
	sch := spec.Schedule
	out := "every " + sch.Interval.D().String()
	if sch.Cron != "" {
		out = sch.Cron
	}
	if sch.TimeZone != "" && sch.TimeZone != "UTC" {
		out += " " + sch.TimeZone
	}
	paused := sch.Paused
	if s.ScheduleStatus != nil {
		paused = s.ScheduleStatus.Paused
	}
	if paused {
		out += " (paused)"
	}
	return out
}

func (a *app) suiteTable(ss []wire.SuiteView) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "RUNS ON", "CASES", "SCHEDULE", "AGE", "DESCRIPTION")
		for _, s := range ss {
			on := kindTemplate + "/" + s.TemplateID
			if s.PoolID != "" {
				on = kindPool + "/" + s.PoolID
			}
			row(w, s.ID, on, strconv.Itoa(s.CaseCount), suiteSchedule(s), a.age(s.CreatedAt), s.Description)
		}
	}
}

// getSuite prints one suite, with the next run time when it is scheduled.
func (a *app) getSuite(ctx context.Context, id string) error {
	s, err := a.client().GetSuite(ctx, id)
	if err != nil {
		return err
	}
	return a.printObject(s, func(w io.Writer) {
		a.suiteTable([]wire.SuiteView{*s})(w)
		switch st := s.ScheduleStatus; {
		case s.ScheduleError != "":
			fmt.Fprintf(w, "\nschedule: %s\n", s.ScheduleError)
		case st != nil && len(st.NextRunTimes) > 0:
			fmt.Fprintf(w, "\nnext run: %s\n", st.NextRunTimes[0].Local().Format(time.RFC3339))
		}
	})
}

// listSuites prints every suite.
func (a *app) listSuites(ctx context.Context) error {
	ms, err := a.client().ListSuites(ctx)
	if err != nil {
		return err
	}
	ss := make([]wire.SuiteView, len(ms))
	for i := range ms {
		ss[i] = wire.SuiteView{Suite: ms[i]}
	}
	return a.printObject(list[wire.Suite]{nonNil(ms)}, a.suiteTable(ss))
}
