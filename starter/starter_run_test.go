package starter

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// starterWithSuite is a Starter on a real store holding suite "s" (two
// cases, one labelled) and a mocked Temporal client.
func starterWithSuite(t *testing.T) (*Starter, *mocks.Client) {
	t.Helper()
	ctx := context.Background()
	store, err := models.Open(ctx, models.Config{SQLitePath: filepath.Join(t.TempDir(), "primer.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if err := store.EnsureDefaults(ctx, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	ss := eval.SuiteSpec{ID: "s", TemplateID: wire.DefaultTemplateID, Defaults: eval.CaseDefaults{Env: map[string]string{"A": "1"}}}
	spec, _ := json.Marshal(ss)
	var rows []wire.SuiteCase
	for i, c := range []eval.Case{
		{ID: "one", Command: eval.Command{Script: "true"}},
		{ID: "two", Command: eval.Command{Script: "true"}, Labels: map[string]string{"kind": "slow"}},
	} {
		raw, _ := json.Marshal(c)
		rows = append(rows, wire.SuiteCase{SuiteID: "s", Ordinal: i, CaseID: c.ID, Labels: c.Labels, Spec: raw})
	}
	if err := store.CreateSuite(ctx, &wire.Suite{ID: "s", TemplateID: wire.DefaultTemplateID, Spec: spec}, rows); err != nil {
		t.Fatal(err)
	}
	tc := &mocks.Client{}
	return &Starter{Temporal: tc, Store: store}, tc
}

// CreateRun stores the selected cases resolved, in run order, and starts
// the workflow under the run's id; a start that fails leaves no rows.
func TestStarterCreateRun(t *testing.T) {
	s, tc := starterWithSuite(t)
	ctx := context.Background()
	var opts client.StartWorkflowOptions
	var in workflows.RunInput
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.RunWorkflowName, mock.Anything).Run(func(args mock.Arguments) {
		opts = args.Get(1).(client.StartWorkflowOptions)
		in = args.Get(3).(workflows.RunInput)
	}).Return(&mocks.WorkflowRun{}, nil).Once()
	run, err := s.CreateRun(ctx, CreateRunRequest{SuiteID: "s", Selection: eval.Selection{Labels: map[string]string{"kind": "slow"}}, TriggeredBy: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if len(run.ID) != len("run-")+16 || run.Total != 1 || run.Trigger != wire.TriggerUser || run.WorkflowID != run.ID {
		t.Errorf("run = %+v", run)
	}
	if opts.ID != run.ID || in.RunID != run.ID || in.SuiteID != "s" {
		t.Errorf("started %+v with %+v", opts, in)
	}
	cr, err := s.Store.GetCaseResult(ctx, run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var c eval.Case
	_ = json.Unmarshal(cr.Spec, &c)
	if cr.CaseID != "two" || cr.Status != wire.CasePending || c.Env["A"] != "1" || c.Timeout == 0 {
		t.Errorf("case 0 = %+v, spec %+v", cr, c)
	}

	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.RunWorkflowName, mock.Anything).Return(nil, errors.New("frontend down")).Once()
	if _, err := s.CreateRun(ctx, CreateRunRequest{SuiteID: "s"}); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("create with Temporal down = %v, want unavailable", err)
	}
	runs, _ := s.Store.ListRuns(ctx, models.RunFilter{SuiteID: "s"})
	if len(runs) != 1 {
		t.Errorf("%d runs stored, want only the started one", len(runs))
	}
	if _, err := s.CreateRun(ctx, CreateRunRequest{SuiteID: "s", Selection: eval.Selection{Cases: []string{"nope"}}}); errs.FieldOf(err) != "cases" {
		t.Errorf("unknown case = %v, want field cases", err)
	}
	if _, err := s.CreateRun(ctx, CreateRunRequest{SuiteID: "gone"}); !errs.Is(err, errs.NotFound) {
		t.Errorf("unknown suite = %v, want not found", err)
	}
}

// CancelRun cancels the workflow of a run that is not final; a final run
// is a precondition error.
func TestStarterCancelRun(t *testing.T) {
	s, tc := starterWithSuite(t)
	ctx := context.Background()
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.RunWorkflowName, mock.Anything).Return(&mocks.WorkflowRun{}, nil)
	run, err := s.CreateRun(ctx, CreateRunRequest{SuiteID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	tc.On("CancelWorkflow", mock.Anything, run.ID, "").Return(nil).Once()
	if err := s.CancelRun(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	tc.AssertCalled(t, "CancelWorkflow", mock.Anything, run.ID, "")
	if err := s.Store.SetRunStatus(ctx, run.ID, wire.RunSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	err = s.CancelRun(ctx, run.ID)
	if !errs.Is(err, errs.Precondition) || err.Error() != "run "+run.ID+": is succeeded; only a pending or running run can be canceled" {
		t.Errorf("cancel a final run = %v", err)
	}
	if err := s.CancelRun(ctx, "run-0000000000000000"); !errs.Is(err, errs.NotFound) {
		t.Errorf("cancel unknown = %v", err)
	}
}
