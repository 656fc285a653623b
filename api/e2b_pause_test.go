package api

import (
	"context"
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

// TestE2BAutoPause: autoPause makes a sandbox whose timeout pauses it
// (/v1's expire_action pause), which getInfo's lifecycle shows; a connect
// of one paused at its timeout extends it first, so the resumed sandbox
// has a fresh timeout, while /v1's resume of it without an extend is
// refused (it would be paused again at once).
func TestE2BAutoPause(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	member := h.newKey(wire.DefaultTenantID, wire.RoleMember)

	ids := h.expectColdStart()
	var sb e2bSandbox
	h.e2b(h.adminKey, "POST", "/v2/sandboxes", `{"templateID":"default","timeout":60,"autoPause":true}`).expect(t, 201).decode(t, &sb)
	h.expectColdStart()
	var plain e2bSandbox
	h.e2b(h.adminKey, "POST", "/v2/sandboxes", `{"templateID":"default","timeout":60,"autoPause":false}`).expect(t, 201).decode(t, &plain)
	if len(*ids) != 1 || sb.SandboxID != (*ids)[0] {
		t.Fatalf("create = %+v, started %v", sb, *ids)
	}
	for _, tt := range []struct{ id, action, onTimeout string }{
		{sb.SandboxID, wire.ExpireActionPause, "pause"},
		{plain.SandboxID, "", "kill"},
	} {
		ws, err := h.store.GetWorkspace(ctx, tt.id)
		if err != nil || ws.ExpireAction != tt.action || ws.ExpiresAt == nil {
			t.Fatalf("workspace %s = %+v (%v), want expire_action %q and an expiry", tt.id, ws, err, tt.action)
		}
		var got struct {
			Lifecycle struct {
				OnTimeout  string `json:"onTimeout"`
				AutoResume bool   `json:"autoResume"`
			} `json:"lifecycle"`
		}
		h.e2b(member, "GET", "/sandboxes/"+tt.id, "").expect(t, 200).decode(t, &got)
		if got.Lifecycle.OnTimeout != tt.onTimeout || got.Lifecycle.AutoResume {
			t.Errorf("getInfo of %s: lifecycle %+v, want onTimeout %s", tt.id, got.Lifecycle, tt.onTimeout)
		}
	}

	// Its workflow paused it at its timeout: the expiry has passed.
	past := time.Now().Add(-time.Minute)
	if err := h.store.SetDeadlines(ctx, sb.SandboxID, wire.Deadlines{ExpiresAt: &past}); err != nil {
		t.Fatal(err)
	}
	if err := h.store.SetWorkspacePhase(ctx, sb.SandboxID, wire.PhasePaused, wire.ReasonExpired); err != nil {
		t.Fatal(err)
	}
	h.do("POST", "/v1/workspaces/"+sb.SandboxID+"/resume", nil).expectError(t, 409, "failed_precondition", "", "extend it")

	h.temporal.On("SignalWithStartWorkflow", mock.Anything, workflows.WorkflowID(sb.SandboxID), workflows.SignalResume, mock.Anything,
		mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(mock.Arguments) {
			_ = h.store.SetWorkspacePhase(ctx, sb.SandboxID, wire.PhaseRunning, "")
		}).Return(&mocks.WorkflowRun{}, nil).Once()
	before := time.Now()
	h.e2b(member, "POST", "/sandboxes/"+sb.SandboxID+"/connect", `{"timeout":120}`).expect(t, 201)
	after, err := h.store.GetWorkspace(ctx, sb.SandboxID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Phase != wire.PhaseRunning || after.ExpiresAt == nil || after.ExpiresAt.Before(before.Add(119*time.Second)) {
		t.Fatalf("after connect: phase %s, expires_at %v; want running with a fresh 120 s timeout", after.Phase, after.ExpiresAt)
	}
}

// TestCreateExpireAction: /v1's create takes expire_action pause or
// delete and refuses anything else, naming the field, before making
// anything.
func TestCreateExpireAction(t *testing.T) {
	h := newHarness(t)
	h.do("POST", "/v1/workspaces", map[string]any{"template_id": "default", "expire_action": "sleep"}).expectError(t, 400, "invalid", "expire_action", "sleep")
	if ws, _ := h.store.ListWorkspaces(t.Context(), models.WorkspaceFilter{}); len(ws) != 0 {
		t.Fatalf("workspaces after a refused create: %d", len(ws))
	}
	for _, action := range []string{wire.ExpireActionPause, wire.ExpireActionDelete} {
		h.expectColdStart()
		var got wire.Created
		h.do("POST", "/v1/workspaces", map[string]any{"template_id": "default", "ttl": "10m", "expire_action": action}).expect(t, 201).decode(t, &got)
		ws, err := h.store.GetWorkspace(t.Context(), got.ID)
		want := action
		if action == wire.ExpireActionDelete {
			want = ""
		}
		if err != nil || ws.ExpireAction != want || got.ExpireAction != want {
			t.Errorf("create with expire_action %s: stored %q, answered %q (%v)", action, ws.ExpireAction, got.ExpireAction, err)
		}
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
