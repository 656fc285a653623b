package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

// ExitRegressions is the exit code of `run compare` when the run has
// regressions, so a CI job can gate on it.
const ExitRegressions = 3

// outputFormats is the annotation of a command whose -o accepts more than
// table, json and yaml: a comma-separated list.
const outputFormats = "output_formats"

func (a *app) runCommand() *cobra.Command {
	cmd := a.group("run", "Show, list, compare and cancel runs of eval suites and their results", "runs")
	cmd.AddCommand(a.runGetCommand(), a.runListCommand(), a.runWaitCommand(), a.runResultsCommand(),
		a.runCompareCommand(), a.runCancelCommand())
	return cmd
}

func (a *app) runGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a run with its progress",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			return a.getRun(cmd.Context(), args[0])
		}),
	}
}

// getRun prints one run with its progress.
func (a *app) getRun(ctx context.Context, id string) error {
	r, err := a.client().GetRun(ctx, id)
	if err != nil {
		return err
	}
	return a.printObject(r, a.runTable([]wire.RunView{*r}))
}

func (a *app) runListCommand() *cobra.Command {
	var f listFilters
	cmd := &cobra.Command{
		Use:   "list [--suite ID] [--status STATUS] [--limit N]",
		Short: "List runs, newest first",
		Args:  args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			return a.listRuns(cmd.Context(), f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.suite, "suite", "", "runs of this suite")
	fl.StringVar(&f.status, "status", "", "runs with this status (pending, running, succeeded, canceled, failed)")
	fl.IntVar(&f.limit, "limit", 0, "at most this many runs (0: all)")
	return cmd
}

// listRuns prints the runs f selects.
func (a *app) listRuns(ctx context.Context, f listFilters) error {
	rs, err := a.client().ListRuns(ctx, client.RunListOptions{SuiteID: f.suite, Status: f.status, Limit: f.limit})
	if err != nil {
		return err
	}
	return a.printObject(list[wire.Run]{nonNil(rs)}, a.runListTable(rs))
}

func (a *app) runWaitCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait ID",
		Short: "Wait until a run ends, showing its progress; exit 1 unless every case passed",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			return a.waitRun(cmd.Context(), a.client(), args[0], timeout)
		}),
	}
	cmd.Flags().DurationVar(&timeout, "wait-timeout", 0, "how long to wait (0: until the run ends)")
	return cmd
}

func (a *app) runResultsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "results ID [-o table|json|jsonl|junit|yaml]",
		Short: "Print a run's case results: a table, JSON, JSONL or JUnit XML",
		Long: `Print a run's case results in case order. -o table (the default) shows
CASE, VERDICT, DURATION, SCORE and REASON; -o json, jsonl and junit print what
the server sends (JSON with attempts and artifacts; one result a line; JUnit XML
for CI systems).`,
		Example: `  primectl run results run-1a2b
  primectl run results run-1a2b -o junit > junit.xml`,
		Annotations: map[string]string{outputFormats: "table,json,yaml,jsonl,junit"},
		Args:        args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c := a.client()
			switch a.output {
			case client.FormatJSON, client.FormatJSONL, client.FormatJUnit:
				body, err := c.RunResultsRaw(ctx, args[0], a.output)
				if err != nil {
					return err
				}
				defer body.Close()
				if _, err := io.Copy(a.stdout, body); err != nil {
					return fmt.Errorf("run %s: results: %w", args[0], err)
				}
				return nil
			}
			rs, err := c.RunResults(ctx, args[0])
			if err != nil {
				return err
			}
			return a.printObject(list[wire.CaseResult]{nonNil(rs)}, resultTable(rs))
		}),
	}
}

func (a *app) runCompareCommand() *cobra.Command {
	var base string
	cmd := &cobra.Command{
		Use:   "compare ID --base BASE",
		Short: "Compare a run with an earlier one: regressions, fixes, new and missing cases, score changes",
		Long: `Compare a run with a base run case by case. Regressions are cases that passed in
the base and do not pass now; fixes the other way round. primectl exits 3 when
there are regressions, 0 otherwise, so a CI job can gate on it.`,
		Example: `  primectl run compare run-new --base run-nightly`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			if base == "" {
				return usagef("--base BASE is required")
			}
			cmp, err := a.client().CompareRuns(cmd.Context(), args[0], base)
			if err != nil {
				return err
			}
			err = a.printObject(cmp, func(w io.Writer) {
				fmt.Fprintf(a.stdout, "%s/%s against %s/%s: %d regressions, %d fixes, %d new, %d missing, %d score changes, %d unchanged\n",
					kindRun, cmp.Head, kindRun, cmp.Base, len(cmp.Regressions), len(cmp.Fixes), len(cmp.New), len(cmp.Missing),
					len(cmp.ScoreChanges), cmp.Unchanged)
				if len(cmp.Regressions)+len(cmp.Fixes)+len(cmp.New)+len(cmp.Missing)+len(cmp.ScoreChanges) == 0 {
					return
				}
				row(w, "CHANGE", "CASE", "FROM", "TO", "DETAIL")
				for _, ch := range cmp.Regressions {
					row(w, "regression", ch.Case, ch.From, ch.To, ch.Reason)
				}
				for _, ch := range cmp.Fixes {
					row(w, "fix", ch.Case, ch.From, ch.To, ch.Reason)
				}
				for _, id := range cmp.New {
					row(w, "new", id, "-", "-", "")
				}
				for _, id := range cmp.Missing {
					row(w, "missing", id, "-", "-", "")
				}
				for _, sc := range cmp.ScoreChanges {
					row(w, "score", sc.Case, score(sc.From), score(sc.To), fmt.Sprintf("%+g", sc.Delta))
				}
			})
			if err != nil {
				return err
			}
			if len(cmp.Regressions) > 0 {
				return &exitError{ExitRegressions}
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&base, "base", "", "the run to compare with (required)")
	return cmd
}

func (a *app) runCancelCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a run: its unfinished cases are canceled and its workspaces released",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			r, err := a.client().CancelRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printStreamed(r, func() string {
				return fmt.Sprintf("%s/%s cancel requested (%s)", kindRun, r.ID, progressLine(r.Progress))
			})
		}),
	}
}

// score formats an optional score.
func score(s *float64) string {
	if s == nil {
		return "-"
	}
	return strconv.FormatFloat(*s, 'g', 4, 64)
}

// percent formats a rate in [0, 1].
func percent(r float64) string {
	return strconv.FormatFloat(r*100, 'f', 1, 64) + "%"
}

// ms formats a duration in milliseconds as Go prints durations, rounded
// for reading.
func ms(n int64) string {
	d := time.Duration(n) * time.Millisecond
	switch {
	case d >= time.Minute:
		d = d.Round(time.Second)
	case d >= time.Second:
		d = d.Round(10 * time.Millisecond)
	}
	return d.String()
}

func (a *app) runTable(rs []wire.RunView) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "SUITE", "STATUS", "DONE", "PASS", "FAIL", "ERROR", "PASS RATE", "P50", "P95", "AGE", "REASON")
		for _, r := range rs {
			p := r.Progress
			done := p.Pass + p.Fail + p.Error + p.Canceled
			row(w, r.ID, r.SuiteID, r.Status, fmt.Sprintf("%d/%d", done, p.Total), strconv.Itoa(p.Pass), strconv.Itoa(p.Fail),
				strconv.Itoa(p.Error), percent(p.PassRate), ms(p.DurationP50MS), ms(p.DurationP95MS), a.age(r.CreatedAt), r.Reason)
		}
	}
}

func (a *app) runListTable(rs []wire.Run) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "SUITE", "STATUS", "CASES", "TRIGGER", "TRIGGERED BY", "AGE", "REASON")
		for _, r := range rs {
			row(w, r.ID, r.SuiteID, r.Status, strconv.Itoa(r.Total), r.Trigger, r.TriggeredBy, a.age(r.CreatedAt), r.Reason)
		}
	}
}

// resultTable shows one row per case; a case without a verdict shows its
// status (pending, running, canceled).
func resultTable(rs []wire.CaseResult) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "CASE", "VERDICT", "DURATION", "SCORE", "REASON")
		for _, r := range rs {
			verdict := r.Verdict
			if verdict == "" {
				verdict = r.Status
			}
			dur := "-"
			if r.Status == wire.CaseDone {
				dur = ms(r.DurationMS)
			}
			row(w, r.CaseID, verdict, dur, score(r.Score), r.Reason)
		}
	}
}
