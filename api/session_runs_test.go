package api

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

const runKey = "sk-api-run-test-3f9a1c"

// agentFixture stores a provider and the code-runner agent.
func agentFixture(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	if err := h.store.CreateLLMProvider(ctx, &wire.LLMProvider{ID: "test-model", TenantID: wire.DefaultTenantID,
		Kind: wire.LLMOpenAI, BaseURL: "http://127.0.0.1:1/v1", APIKey: runKey}); err != nil {
		t.Fatal(err)
	}
	if err := h.store.CreateAgent(ctx, &wire.Agent{ID: "code-runner", TenantID: wire.DefaultTenantID,
		Model: wire.AgentModel{ProviderID: "test-model", ModelName: "m"}, MaxTurns: 50, Timeout: "30m"}); err != nil {
		t.Fatal(err)
	}
}

func TestSessionRunBadInput(t *testing.T) {
	h := newHarness(t) // no ExecuteWorkflow expected: the mock fails the test on any call
	agentFixture(t, h)
	running := h.workspace(wire.PhaseRunning)
	pending := h.workspace(wire.PhasePending)
	inv, nf, pre := errs.Invalid.String(), errs.NotFound.String(), errs.Precondition.String()
	for _, tc := range []struct {
		name, body       string
		status           int
		code, field, msg string
	}{
		{"no agent", `{"workspace_id":"` + running.ID + `","instructions":"go"}`, 400, inv, "agent", "agent: required"},
		{"unknown agent", `{"workspace_id":"` + running.ID + `","agent":"nobody","instructions":"go"}`, 404, nf, "agent", "agent nobody not found"},
		{"blank instructions", `{"workspace_id":"` + running.ID + `","agent":"code-runner","instructions":"  "}`, 400, inv, "instructions", "instructions: required"},
		{"workspace not running", `{"workspace_id":"` + pending.ID + `","agent":"code-runner","instructions":"go"}`, 409, pre, "", "is pending, not running"},
		{"unknown workspace", `{"workspace_id":"ws-0000","agent":"code-runner","instructions":"go"}`, 404, nf, "workspace_id", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.do("POST", "/v1/sessions", tc.body).expectError(t, tc.status, tc.code, tc.field, tc.msg)
		})
	}
	// Nothing was created by the refused requests.
	if ss, _ := h.store.ListSessions(context.Background(), models.SessionFilter{}); len(ss) != 0 {
		t.Fatalf("%d sessions created by refused requests", len(ss))
	}
	// A session without an agent run has nothing to cancel.
	ses := &wire.Session{WorkspaceID: running.ID}
	if err := h.store.CreateSession(context.Background(), ses); err != nil {
		t.Fatal(err)
	}
	h.do("POST", "/v1/sessions/"+ses.ID+"/cancel", `{}`).expectError(t, 409, pre, "", "has no agent run")
	h.do("GET", "/v1/sessions/"+ses.ID+"/transcript", nil, "Accept", "text/event-stream").expectError(t, 409, pre, "", "has no agent run to follow")
	var tr wire.Transcript
	h.do("GET", "/v1/sessions/"+ses.ID+"/transcript", nil).expect(t, 200).decode(t, &tr)
	if tr.Run != nil || len(tr.Items) != 0 {
		t.Fatalf("transcript of a session without a run = %+v, want empty", tr)
	}
	h.do("POST", "/v1/sessions/"+ses.ID+"/run", `{"agent":"code-runner"}`).expectError(t, 400, inv, "instructions", "")
}

// POST /v1/sessions with agent and instructions starts session-<id> with
// the session id only; the transcript starts with the instructions; a
// second run is refused; cancel signals the workflow; the transcript
// streams until the run ends.
func TestSessionRunStartsItsWorkflow(t *testing.T) {
	h := newHarness(t)
	agentFixture(t, h)
	w := h.workspace(wire.PhaseRunning)
	var gotOpts client.StartWorkflowOptions
	var gotIn workflows.SessionRunInput
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.SessionRunWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) {
			gotOpts = args.Get(1).(client.StartWorkflowOptions)
			gotIn = args.Get(3).(workflows.SessionRunInput)
		}).Return(&mocks.WorkflowRun{}, nil).Once()

	r := h.do("POST", "/v1/sessions", `{"workspace_id":"`+w.ID+`","agent":"code-runner","instructions":"Run this code: print(6 * 7)"}`).expect(t, 201)
	var ses wire.Session
	r.decode(t, &ses)
	if gotOpts.ID != "session-"+ses.ID || gotIn != (workflows.SessionRunInput{SessionID: ses.ID}) {
		t.Fatalf("started %q with %+v; want session-%s with the session id only", gotOpts.ID, gotIn, ses.ID)
	}

	var tr wire.Transcript
	h.do("GET", "/v1/sessions/"+ses.ID+"/transcript", nil).expect(t, 200).decode(t, &tr)
	if tr.Run == nil || tr.Run.AgentID != "code-runner" || tr.Run.Status != wire.AgentRunning ||
		len(tr.Items) != 1 || tr.Items[0].Role != wire.RoleUser || tr.Items[0].Content != "Run this code: print(6 * 7)" {
		t.Fatalf("transcript = %+v", tr)
	}
	h.do("POST", "/v1/sessions/"+ses.ID+"/run", `{"agent":"code-runner","instructions":"again"}`).expectError(t, 409, errs.Conflict.String(), "", "")

	h.temporal.On("SignalWorkflow", mock.Anything, "session-"+ses.ID, "", workflows.SignalCancelRun, mock.Anything).Return(nil).Once()
	h.do("POST", "/v1/sessions/"+ses.ID+"/cancel", `{}`).expect(t, 202)

	// The workflow ends the run; the stream shows the entries, then the end.
	if _, err := h.store.EndSessionRun(context.Background(), ses.ID, wire.AgentCanceled, "", 0); err != nil {
		t.Fatal(err)
	}
	sse := h.do("GET", "/v1/sessions/"+ses.ID+"/transcript", nil, "Accept", "text/event-stream").expect(t, 200)
	body := string(sse.body)
	if !strings.Contains(body, "id: 1\nevent: user\n") || !strings.Contains(body, "event: end\n") || !strings.Contains(body, `"end_reason":"canceled"`) {
		t.Fatalf("stream = %q; want the instructions, then the end", body)
	}
	for _, b := range []string{string(r.body), body} {
		if strings.Contains(b, runKey) {
			t.Fatalf("an answer carries the key: %s", b)
		}
	}
	h.do("POST", "/v1/sessions/"+ses.ID+"/cancel", `{}`).expectError(t, 409, errs.Precondition.String(), "", "already ended")
}
