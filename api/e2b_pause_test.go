package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// TestE2BPausedState: a paused workspace is E2B state paused in get and
// in the list, and the list's state filter tells paused from running.
func TestE2BPausedState(t *testing.T) {
	h := newHarness(t)
	running := h.workspace(wire.PhaseRunning)
	paused := h.workspace(wire.PhasePaused)

	var got e2bListed
	h.e2b(h.adminKey, "GET", "/sandboxes/"+paused.ID, "").expect(t, 200).decode(t, &got)
	if got.SandboxID != paused.ID || got.State != "paused" {
		t.Fatalf("get of a paused sandbox = %+v, want state paused", got)
	}
	h.e2b(h.adminKey, "GET", "/sandboxes/"+running.ID, "").expect(t, 200).decode(t, &got)
	if got.State != "running" {
		t.Fatalf("get of a running sandbox: state %q", got.State)
	}

	tests := []struct {
		query string
		want  map[string]string // id -> state
	}{
		{"state=paused", map[string]string{paused.ID: "paused"}},
		{"state=running", map[string]string{running.ID: "running"}},
		{"state=running,paused", map[string]string{running.ID: "running", paused.ID: "paused"}},
		{"", map[string]string{running.ID: "running", paused.ID: "paused"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var items []e2bListed
			h.e2b(h.adminKey, "GET", "/v2/sandboxes?"+tt.query, "").expect(t, 200).decode(t, &items)
			seen := map[string]string{}
			for _, s := range items {
				seen[s.SandboxID] = s.State
			}
			if len(seen) != len(tt.want) {
				t.Fatalf("list ?%s = %v, want %v", tt.query, seen, tt.want)
			}
			for id, st := range tt.want {
				if seen[id] != st {
					t.Fatalf("list ?%s = %v, want %v", tt.query, seen, tt.want)
				}
			}
		})
	}
}

// TestE2BAutoPauseRefused: autoPause asks to pause at the timeout, which
// Primer cannot do (the timeout deletes); the create is refused 400
// naming the field and the way that works, and nothing is made.
func TestE2BAutoPauseRefused(t *testing.T) {
	h := newHarness(t)
	r := h.e2b(h.adminKey, "POST", "/v2/sandboxes", `{"templateID":"default","autoPause":true}`)
	r.e2bError(t, 400, "autoPause")
	if !strings.Contains(string(r.body), "/pause") {
		t.Errorf("the refusal does not say how to pause: %s", r.body)
	}
	ws, err := h.store.ListWorkspaces(t.Context(), models.WorkspaceFilter{})
	if err != nil || len(ws) != 0 {
		t.Errorf("workspaces after a refused create: %d (%v)", len(ws), err)
	}
}

// TestE2BPauseConnect: pause answers 204 once the workspace is paused (its
// workflow, here the mock, gets /v1's pause signal), 409 when it is paused
// already, 404 for an unknown or killed sandbox, 403 for a viewer; a
// connect of the paused sandbox resumes it through /v1 and answers 201
// once it runs, a connect of a running one 200.
func TestE2BPauseConnect(t *testing.T) {
	h := newHarness(t)
	h.lifetimeTemplate()
	ctx := context.Background()
	ws := h.mortal(wire.PhaseRunning, time.Now())
	member := h.newKey(wire.DefaultTenantID, wire.RoleMember)
	viewer := h.newKey(wire.DefaultTenantID, wire.RoleViewer)
	ghost := models.NewID("ws")

	h.e2b(viewer, "POST", "/sandboxes/"+ws.ID+"/pause", "").e2bError(t, 403, "viewer")
	h.e2b(member, "POST", "/sandboxes/"+ghost+"/pause", "").e2bError(t, 404, ghost)

	// The workflow pauses the workspace when signalled.
	var ps workflows.PauseSignal
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, ws.WorkflowID, workflows.SignalPause, mock.Anything,
		mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) {
			ps = args.Get(3).(workflows.PauseSignal)
			_ = h.store.SetWorkspacePhase(ctx, ws.ID, wire.PhasePaused, "paused")
		}).Return(&mocks.WorkflowRun{}, nil).Once()
	h.e2b(member, "POST", "/sandboxes/"+ws.ID+"/pause", "").expect(t, 204)
	if got, _ := h.store.GetWorkspace(ctx, ws.ID); got.Phase != wire.PhasePaused || ps.Mode != wire.SnapshotModeFilesystem {
		t.Fatalf("after pause: phase %s, signal %+v", got.Phase, ps)
	}
	h.e2b(member, "POST", "/sandboxes/"+ws.ID+"/pause", "").e2bError(t, 409, "already paused")
	var got e2bListed
	h.e2b(member, "GET", "/sandboxes/"+ws.ID, "").expect(t, 200).decode(t, &got)
	if got.State != "paused" {
		t.Fatalf("get of the paused sandbox: state %q", got.State)
	}

	// A viewer's connect is refused before anything is resumed.
	h.e2b(viewer, "POST", "/sandboxes/"+ws.ID+"/connect", `{"timeout":60}`).e2bError(t, 403, "viewer")
	var rs workflows.ResumeSignal
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, ws.WorkflowID, workflows.SignalResume, mock.Anything,
		mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) {
			rs = args.Get(3).(workflows.ResumeSignal)
			_ = h.store.SetWorkspacePhase(ctx, ws.ID, wire.PhaseRunning, "")
		}).Return(&mocks.WorkflowRun{}, nil).Once()
	var c e2bSandbox
	h.e2b(member, "POST", "/v2/sandboxes/"+ws.ID+"/connect", `{"timeout":600}`).expect(t, 201).decode(t, &c)
	after, _ := h.store.GetWorkspace(ctx, ws.ID)
	if c.SandboxID != ws.ID || c.EnvdAccessToken == "" || after.Phase != wire.PhaseRunning || rs.Reason == "" {
		t.Fatalf("connect of a paused sandbox = %+v, phase %s, signal %+v", c, after.Phase, rs)
	}
	h.e2b(member, "POST", "/sandboxes/"+ws.ID+"/connect", `{"timeout":60}`).expect(t, 200)

	// A killed sandbox is 404 to pause.
	if err := h.store.SetWorkspacePhase(ctx, ws.ID, wire.PhaseTerminating, "deleted by user"); err != nil {
		t.Fatal(err)
	}
	h.e2b(member, "POST", "/sandboxes/"+ws.ID+"/pause", "").e2bError(t, 404, ws.ID)
}
