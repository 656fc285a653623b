package workflows

import (
	"go.temporal.io/sdk/workflow"
)

// Names of the eval run workflow.
const (
	// RunWorkflowName is the registered name of RunWorkflow.
	RunWorkflowName = "EvalRunWorkflow"
)

// Search attributes of run workflows (Keyword), so the Temporal UI can
// filter runs by suite and run.
var (
	SearchAttrSuite = "PrimerSuite"
	SearchAttrRun   = "PrimerRun"
)

// RunInput starts a run's workflow. A run made through the API has its
// row already (RunID set). A run a suite's schedule starts has only
// SuiteID: its first activity makes the run row from the suite, with the
// workflow's id as the run's id.
type RunInput struct {
	RunID   string
	SuiteID string
	// TriggeredBy names the schedule for a scheduled run.
	TriggeredBy string
}

// RunOutput is a run's result.
type RunOutput struct {
	Status string
	Pass   int
	Fail   int
	Error  int
}

// RunWorkflow runs the cases of one eval run over at most the suite's
// concurrency of workspaces.
func RunWorkflow(ctx workflow.Context, in RunInput) (RunOutput, error) {
	return RunOutput{}, nil
}
