package starter

import (
	"context"

	"github.com/primerhq/primer/activities/evalrun"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// CreateRunRequest is a run to make of a suite.
type CreateRunRequest struct {
	SuiteID     string
	Selection   eval.Selection
	Trigger     string // models.TriggerUser or models.TriggerSchedule
	TriggeredBy string
}

// CreateRun stores a run of a suite (its cases resolved and pending) and
// starts its workflow. The run belongs to its suite's tenant, whoever
// triggers it (evalrun.CreateRun); if the workflow cannot be started the run's rows are
// removed again. NotFound if the suite does not exist; Invalid (field
// cases) for a selection naming unknown cases or picking none.
func (s *Starter) CreateRun(ctx context.Context, req CreateRunRequest) (*wire.Run, error) {
	trigger := req.Trigger
	if trigger == "" {
		trigger = wire.TriggerUser
	}
	id := models.NewID("run")
	run, err := evalrun.CreateRun(ctx, s.Store, evalrun.CreateRunSpec{
		RunID:       id,
		SuiteID:     req.SuiteID,
		Selection:   req.Selection,
		Trigger:     trigger,
		TriggeredBy: req.TriggeredBy,
	})
	if err != nil {
		return nil, err
	}
	in := workflows.RunInput{RunID: id, SuiteID: run.SuiteID, TriggeredBy: req.TriggeredBy}
	if _, err := s.Temporal.ExecuteWorkflow(ctx, workflows.RunStartOptions(run.TenantID, run.SuiteID, id), workflows.RunWorkflowName, in); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := s.Store.DeleteRun(cctx, id); derr != nil && !errs.Is(derr, errs.NotFound) {
			s.logger().Error("run: remove rows after failed start", "run_id", id, "error", derr.Error())
		}
		return nil, errs.E(errs.Unavailable, "run %s: start workflow: %w", id, err)
	}
	s.logger().Info("run created", "run_id", id, "tenant_id", run.TenantID, "suite_id", run.SuiteID, "total", run.Total,
		"trigger", trigger, "triggered_by", req.TriggeredBy)
	return run, nil
}

// CancelRun asks a run's workflow to stop: cases not finished are
// canceled, its workspaces released, and the run ends canceled.
// Precondition (409) if the run is already final.
func (s *Starter) CancelRun(ctx context.Context, runID string) error {
	run, err := s.Store.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	if run.Status != wire.RunPending && run.Status != wire.RunRunning {
		return errs.E(errs.Precondition, "run %s: is %s; only a pending or running run can be canceled", runID, run.Status)
	}
	wid := run.WorkflowID
	if wid == "" {
		wid = run.ID
	}
	if err := s.Temporal.CancelWorkflow(ctx, wid, ""); err != nil {
		return errs.E(errs.Unavailable, "run %s: cancel workflow: %w", runID, err)
	}
	s.logger().Info("run cancel requested", "run_id", runID)
	return nil
}
