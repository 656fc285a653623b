package workflows

import (
	"context"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/models"
)

// CreateRunRequest is a run to make of a suite.
type CreateRunRequest struct {
	SuiteID     string
	Selection   eval.Selection
	Trigger     string // models.TriggerUser or models.TriggerSchedule
	TriggeredBy string
}

// CreateRun stores a run of a suite (its cases resolved and pending) and
// starts its workflow; if the workflow cannot be started the run's rows are
// removed again. NotFound if the suite does not exist; Invalid (field
// cases) for a selection naming unknown cases or picking none.
func (s *Starter) CreateRun(ctx context.Context, req CreateRunRequest) (*models.Run, error) {
	return nil, errs.E(errs.Other, "run: not implemented")
}

// CancelRun asks a run's workflow to stop: cases not finished are
// canceled, its workspaces released, and the run ends canceled.
// Precondition (409) if the run is already final.
func (s *Starter) CancelRun(ctx context.Context, runID string) error {
	return errs.E(errs.Other, "run: not implemented")
}
