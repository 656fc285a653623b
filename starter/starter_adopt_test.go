package starter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// AdoptWorkspace starts a workflow only for a row whose workflow Temporal
// does not know, with the workspace's own start options (its id, so a race
// with the original start gets the running one), and leaves a workspace
// whose workflow exists alone.
func TestStarterAdoptWorkspace(t *testing.T) {
	s, tc := starterWithSuite(t)
	ctx := context.Background()
	orphan := &wire.Workspace{ID: "ws-orphan", TemplateID: wire.DefaultTemplateID, ProviderID: wire.LocalProviderID,
		Backend: wire.BackendLocal, Phase: wire.PhasePending, WorkflowID: workflows.WorkflowID("ws-orphan")}
	alive := &wire.Workspace{ID: "ws-alive", TemplateID: wire.DefaultTemplateID, ProviderID: wire.LocalProviderID,
		Backend: wire.BackendLocal, Phase: wire.PhasePending, WorkflowID: workflows.WorkflowID("ws-alive")}
	tc.On("DescribeWorkflowExecution", mock.Anything, orphan.WorkflowID, "").
		Return(nil, serviceerror.NewNotFound("workflow not found"))
	tc.On("DescribeWorkflowExecution", mock.Anything, alive.WorkflowID, "").
		Return(&workflowservice.DescribeWorkflowExecutionResponse{}, nil)
	var started []client.StartWorkflowOptions
	var inputs []workflows.WorkspaceInput
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).Run(func(args mock.Arguments) {
		started = append(started, args.Get(1).(client.StartWorkflowOptions))
		inputs = append(inputs, args.Get(3).(workflows.WorkspaceInput))
	}).Return(&mocks.WorkflowRun{}, nil)

	got, err := s.AdoptWorkspace(ctx, orphan)
	if err != nil || !got {
		t.Fatalf("adopt the orphan = %v, %v; want true", got, err)
	}
	got, err = s.AdoptWorkspace(ctx, alive)
	if err != nil || got {
		t.Fatalf("adopt a workspace whose workflow exists = %v, %v; want false", got, err)
	}
	if len(started) != 1 || started[0].ID != orphan.WorkflowID {
		t.Fatalf("started %+v, want one start of %s", started, orphan.WorkflowID)
	}
	if in := inputs[0]; in.WorkspaceID != orphan.ID || in.State != nil {
		t.Fatalf("input %+v: want the orphan's id and no state, so it provisions", in)
	}
}
