package starter

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// AdoptWorkspace starts the workflow of a pending, never provisioned
// workspace whose row exists but whose workflow was never started: CreateWorkspace stores the row before
// it starts the workflow, and a process killed between the two leaves a
// pending row nothing moves. It returns true when it started one. A
// workflow that runs, or ran, is left alone: one that closed destroyed the
// workspace, and its row is on its way out.
func (s *Starter) AdoptWorkspace(ctx context.Context, w *wire.Workspace) (bool, error) {
	_, err := s.Temporal.DescribeWorkflowExecution(ctx, w.WorkflowID, "")
	if err == nil {
		return false, nil
	}
	var nf *serviceerror.NotFound
	if !errors.As(err, &nf) {
		return false, errs.E(errs.Unavailable, "workspace %s: describe workflow: %w", w.ID, err)
	}
	var t *wire.Template
	if got, err := s.Store.GetTemplate(ctx, w.TemplateID); err == nil {
		t = got
	}
	// No State: the row is pending and was never provisioned, so the run
	// starts as a create's would.
	in := s.WorkspaceInput(w, t)
	// StartOptions: a start racing the original create's (or another
	// reconciler's) gets the workflow already running, not a second one.
	if _, err := s.Temporal.ExecuteWorkflow(ctx, workflows.StartOptions(in), workflows.WorkspaceWorkflowName, in); err != nil {
		return false, errs.E(errs.Unavailable, "workspace %s: start workflow: %w", w.ID, err)
	}
	s.logger().Warn("workspace adopted: its create stopped before its workflow started", "workspace_id", w.ID)
	return true, nil
}
