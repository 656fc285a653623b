package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

func TestStatusOf(t *testing.T) {
	// Every kind the doc lists maps to its documented status.
	for kind, want := range map[errs.Kind]int{
		errs.Invalid: 400, errs.NotFound: 404, errs.Conflict: 409, errs.Precondition: 409,
		errs.Forbidden: 403, errs.TooLarge: 413, errs.Unavailable: 503, errs.Timeout: 504, errs.Other: 500,
	} {
		if got := statusOf(kind); got != want {
			t.Errorf("statusOf(%s) = %d, want %d", kind, got, want)
		}
	}
}

func TestRoutingErrorsUseTheEnvelope(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/nope", 404, "not_found"},
		{"GET", "/v1/nope/deeper", 404, "not_found"},
		{"GET", "/v1/providers/nope", 404, "not_found"},
		{"GET", "/v1/templates/nope", 404, "not_found"},
		{"GET", "/v1/workspaces/ws-0000000000000000", 404, "not_found"},
		{"DELETE", "/v1/workspaces/ws-0000000000000000", 404, "not_found"},
		{"GET", "/v1/workspaces/ws-0000000000000000/events", 404, "not_found"},
		{"GET", "/v1/workspaces/ws-0000000000000000/files/a", 404, "not_found"},
		{"POST", "/v1/workspaces/ws-0000000000000000/exec", 404, "not_found"},
		{"GET", "/v1/sessions/ses-0000000000000000", 404, "not_found"},
		{"POST", "/v1/sessions/ses-0000000000000000/end", 404, "not_found"},
		{"DELETE", "/v1/templates/nope", 404, "not_found"},
		{"DELETE", "/v1/providers/nope", 404, "not_found"},
		{"PATCH", "/v1/providers", 405, "method_not_allowed"},
		{"DELETE", "/v1/sessions/ses-1", 405, "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			var body any
			if strings.HasSuffix(tt.path, "/exec") {
				body = `{"command":["true"]}`
			}
			h.do(tt.method, tt.path, body).expectError(t, tt.status, tt.code, "", "")
		})
	}
}

func TestProviders(t *testing.T) {
	h := newHarness(t)
	root := func(name string) string { return filepath.Join(h.dir, name) }
	okBody := fmt.Sprintf(`{"id":"extra","provider":"local","config":{"kind":"local","root_path":%q}}`, root("extra"))

	h.do("POST", "/v1/providers", okBody).expect(t, 201)

	bad := []struct {
		name, method, path, body string
		status                   int
		code, field, msg         string
	}{
		{"duplicate", "POST", "/v1/providers", okBody, 409, "conflict", "", "extra"},
		{"local again", "POST", "/v1/providers", fmt.Sprintf(`{"id":"local","provider":"local","config":{"root_path":%q}}`, root("x")), 409, "conflict", "", "local"},
		{"malformed JSON", "POST", "/v1/providers", `{"id":"a",`, 400, "invalid", "", "malformed JSON"},
		{"syntax error offset", "POST", "/v1/providers", `{"id": nope}`, 400, "invalid", "", "offset"},
		{"unknown field", "POST", "/v1/providers", `{"id":"a","provider":"local","colour":"red"}`, 400, "invalid", "spec.colour", "unknown field"},
		{"wrong type", "POST", "/v1/providers", `{"id":7,"provider":"local"}`, 400, "invalid", "spec.id", "string"},
		{"trailing data", "POST", "/v1/providers", okBody + `{}`, 400, "invalid", "", "after the JSON value"},
		{"not an object", "POST", "/v1/providers", `[1,2]`, 400, "invalid", "", "object"},
		{"empty body", "POST", "/v1/providers", ``, 400, "invalid", "", "empty"},
		{"bad id", "POST", "/v1/providers", `{"id":"Bad_ID!","provider":"local"}`, 400, "invalid", "spec.id", "not a valid id"},
		{"missing id", "POST", "/v1/providers", `{"provider":"local"}`, 400, "invalid", "spec.id", "required"},
		{"unknown provider type", "POST", "/v1/providers", `{"id":"d","provider":"dockerish","config":{}}`, 400, "invalid", "spec.provider", "dockerish"},
		{"missing provider type", "POST", "/v1/providers", `{"id":"d"}`, 400, "invalid", "spec.provider", "required"},
		{"bad config", "POST", "/v1/providers", `{"id":"d","provider":"local","config":{"root_path":"relative"}}`, 400, "invalid", "spec.config.root_path", ""},
		{"update local", "PUT", "/v1/providers/local", okBody, 403, "forbidden", "", "local"},
		{"delete local", "DELETE", "/v1/providers/local", ``, 403, "forbidden", "", "local"},
		{"update id mismatch", "PUT", "/v1/providers/extra", `{"id":"other","provider":"local","config":{"root_path":"/tmp"}}`, 400, "invalid", "spec.id", "does not match"},
		{"update unknown", "PUT", "/v1/providers/ghost", fmt.Sprintf(`{"provider":"local","config":{"root_path":%q}}`, root("g")), 404, "not_found", "", "ghost"},
		{"update bad config", "PUT", "/v1/providers/extra", `{"provider":"local","config":{"root_path":""}}`, 400, "invalid", "spec.config.root_path", ""},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.body != "" {
				body = tt.body
			}
			h.do(tt.method, tt.path, body).expectError(t, tt.status, tt.code, tt.field, tt.msg)
		})
	}

	// The refused requests changed nothing.
	var got wire.Items[wire.Provider]
	h.do("GET", "/v1/providers", nil).expect(t, 200).decode(t, &got)
	if len(got.Items) != 2 || got.Items[0].ID != "extra" || got.Items[1].ID != "local" {
		t.Fatalf("providers = %+v, want extra and local", got.Items)
	}
	var lp wire.Provider
	h.do("GET", "/v1/providers/local", nil).expect(t, 200).decode(t, &lp)
	if !strings.Contains(string(lp.Config), h.root) {
		t.Fatalf("local provider config %s changed", lp.Config)
	}

	// Update, then the row carries the new config.
	var up wire.Provider
	h.do("PUT", "/v1/providers/extra", fmt.Sprintf(`{"provider":"local","config":{"kind":"local","root_path":%q}}`, root("moved"))).
		expect(t, 200).decode(t, &up)
	if up.ID != "extra" || !strings.Contains(string(up.Config), "moved") {
		t.Fatalf("updated provider = %+v", up)
	}

	// A provider in use by a template cannot be deleted; once free it can.
	h.do("POST", "/v1/templates", `{"id":"t1","provider_id":"extra","backend":{"kind":"local"}}`).expect(t, 201)
	h.do("DELETE", "/v1/providers/extra", nil).expectError(t, 409, "conflict", "", "")
	h.do("DELETE", "/v1/templates/t1", nil).expect(t, 204)
	h.do("DELETE", "/v1/providers/extra", nil).expect(t, 204)
	h.do("GET", "/v1/providers/extra", nil).expectError(t, 404, "not_found", "", "extra")
}

func TestTemplates(t *testing.T) {
	h := newHarness(t)
	bad := []struct {
		name, method, path, body string
		status                   int
		code, field, msg         string
	}{
		{"unknown provider", "POST", "/v1/templates", `{"id":"t","provider_id":"docker-local","backend":{"kind":"container"}}`, 404, "not_found", "spec.provider_id", "docker-local"},
		{"missing provider", "POST", "/v1/templates", `{"id":"t","backend":{"kind":"local"}}`, 400, "invalid", "spec.provider_id", "required"},
		{"kind mismatch", "POST", "/v1/templates", `{"id":"t","provider_id":"local","backend":{"kind":"container","image":"x"}}`, 400, "invalid", "spec.backend.kind", "does not match"},
		{"missing kind", "POST", "/v1/templates", `{"id":"t","provider_id":"local","backend":{}}`, 400, "invalid", "spec.backend.kind", "required"},
		{"missing backend", "POST", "/v1/templates", `{"id":"t","provider_id":"local"}`, 400, "invalid", "spec.backend", "required"},
		{"backend not an object", "POST", "/v1/templates", `{"id":"t","provider_id":"local","backend":"local"}`, 400, "invalid", "spec.backend", ""},
		{"backend unknown field", "POST", "/v1/templates", `{"id":"t","provider_id":"local","backend":{"kind":"local","image":"x"}}`, 400, "invalid", "spec.backend.image", ""},
		{"backend escaping file", "POST", "/v1/templates", `{"id":"t","provider_id":"local","backend":{"kind":"local","files":{"../x":"y"}}}`, 400, "invalid", "spec.backend.files", ""},
		{"config_toml not TOML", "POST", "/v1/templates", `{"id":"t","provider_id":"local","backend":{"kind":"local","config_toml":"[model]\nname = \"x\n"}}`, 400, "invalid", "spec.backend.config_toml", "line 2, column"},
		{"config_toml holds an env value", "POST", "/v1/templates", `{"id":"t","provider_id":"local","backend":{"kind":"local","env":{"API_KEY":"k-123456"},"config_toml":"[model]\napi_key = \"k-123456\"\n"}}`, 400, "invalid", "spec.backend.config_toml", "key model.api_key holds the value of env API_KEY"},
		{"unknown top field", "POST", "/v1/templates", `{"id":"t","provider_id":"local","backend":{"kind":"local"},"kind":"x"}`, 400, "invalid", "spec.kind", "unknown field"},
		{"bad id", "POST", "/v1/templates", `{"id":"-t","provider_id":"local","backend":{"kind":"local"}}`, 400, "invalid", "spec.id", ""},
		{"duplicate", "POST", "/v1/templates", `{"id":"default","provider_id":"local","backend":{"kind":"local"}}`, 409, "conflict", "", ""},
		{"update unknown", "PUT", "/v1/templates/ghost", `{"provider_id":"local","backend":{"kind":"local"}}`, 404, "not_found", "", "ghost"},
		{"update unknown provider", "PUT", "/v1/templates/default", `{"provider_id":"nope","backend":{"kind":"local"}}`, 404, "not_found", "spec.provider_id", ""},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			h.do(tt.method, tt.path, tt.body).expectError(t, tt.status, tt.code, tt.field, tt.msg)
		})
	}

	// Env values are secrets: stored, but never in a response.
	const secret = "sk-very-secret-value"
	body := `{"id":"withenv","provider_id":"local","description":"d","backend":{"kind":"local","env":{"API_KEY":"` + secret + `","MODE":"test"},"init":["true"]}}`
	r := h.do("POST", "/v1/templates", body).expect(t, 201)
	if strings.Contains(string(r.body), secret) || strings.Contains(string(r.body), `"test"`) {
		t.Fatalf("create response leaks env: %s", r.body)
	}
	for _, path := range []string{"/v1/templates/withenv", "/v1/templates", "/v1/templates?provider_id=local"} {
		r := h.do("GET", path, nil).expect(t, 200)
		if strings.Contains(string(r.body), secret) || !strings.Contains(string(r.body), Redacted) {
			t.Fatalf("GET %s: env not redacted: %s", path, r.body)
		}
	}
	stored, err := h.store.GetTemplate(context.Background(), "withenv")
	if err != nil || !strings.Contains(string(stored.Backend), secret) {
		t.Fatalf("stored template lost its env: %s %v", stored.Backend, err)
	}

	// Sending the redacted document back keeps the stored values; a new
	// value replaces one; a placeholder for an unknown key is refused.
	var got wire.Template
	h.do("GET", "/v1/templates/withenv", nil).decode(t, &got)
	put := fmt.Sprintf(`{"provider_id":"local","description":"d2","backend":%s}`, got.Backend)
	h.do("PUT", "/v1/templates/withenv", put).expect(t, 200)
	stored, _ = h.store.GetTemplate(context.Background(), "withenv")
	if !strings.Contains(string(stored.Backend), secret) || stored.Description != "d2" {
		t.Fatalf("round trip lost the secret: %+v %s", stored, stored.Backend)
	}
	h.do("PUT", "/v1/templates/withenv", `{"provider_id":"local","backend":{"kind":"local","env":{"NEW":"(redacted)"}}}`).
		expectError(t, 400, "invalid", "spec.backend.env.NEW", "placeholder")

	// config_toml is checked against the stored env values a redacted
	// document stands for, and the refusal does not repeat the value.
	r = h.do("PUT", "/v1/templates/withenv", `{"provider_id":"local","backend":{"kind":"local","env":{"API_KEY":"(redacted)"},"config_toml":"[[tools]]\nauth = \"Bearer `+secret+`\"\n"}}`)
	r.expectError(t, 400, "invalid", "spec.backend.config_toml", "key tools[0].auth holds the value of env API_KEY")
	if strings.Contains(string(r.body), secret) {
		t.Fatalf("refusal repeats the env value: %s", r.body)
	}
	h.do("PUT", "/v1/templates/withenv", `{"provider_id":"local","backend":{"kind":"local","env":{"API_KEY":"(redacted)"},"config_toml":"[model]\napi_key_env = \"API_KEY\"\n"}}`).expect(t, 200)
	stored, _ = h.store.GetTemplate(context.Background(), "withenv")
	if !strings.Contains(string(stored.Backend), `"config_toml":"[model]\napi_key_env = \"API_KEY\"\n"`) {
		t.Fatalf("config_toml not stored: %s", stored.Backend)
	}

	// A webhook URL may carry a token: redacted the same way.
	const hook = "https://ops.example/hook?token=hook-tok-77"
	h.do("POST", "/v1/templates", `{"id":"hooked","provider_id":"local","backend":{"kind":"local","recovery":{"max_attempts":2,"webhook_url":"`+hook+`"}}}`).expect(t, 201)
	r = h.do("GET", "/v1/templates/hooked", nil).expect(t, 200)
	if strings.Contains(string(r.body), "hook-tok-77") || !strings.Contains(string(r.body), `"webhook_url":"`+Redacted+`"`) {
		t.Fatalf("webhook not redacted: %s", r.body)
	}
	var hooked wire.Template
	r.decode(t, &hooked)
	h.do("PUT", "/v1/templates/hooked", fmt.Sprintf(`{"provider_id":"local","backend":%s}`, hooked.Backend)).expect(t, 200)
	stored, _ = h.store.GetTemplate(context.Background(), "hooked")
	if !strings.Contains(string(stored.Backend), "hook-tok-77") || !strings.Contains(string(stored.Backend), `"max_attempts":2`) {
		t.Fatalf("round trip lost the webhook: %s", stored.Backend)
	}
	h.do("PUT", "/v1/templates/withenv", `{"provider_id":"local","backend":{"kind":"local","recovery":{"webhook_url":"(redacted)"}}}`).
		expectError(t, 400, "invalid", "spec.backend.recovery.webhook_url", "placeholder")

	// Filter by provider.
	var list wire.Items[wire.Template]
	h.do("GET", "/v1/templates?provider_id=none", nil).expect(t, 200).decode(t, &list)
	if len(list.Items) != 0 {
		t.Fatalf("filter by unknown provider returned %d", len(list.Items))
	}

	// A template in use by a workspace cannot be deleted.
	h.workspace(wire.PhaseRunning)
	h.do("DELETE", "/v1/templates/default", nil).expectError(t, 409, "conflict", "", "")
	h.do("DELETE", "/v1/templates/withenv", nil).expect(t, 204)
}

func TestCreateWorkspaceStartsItsWorkflow(t *testing.T) {
	h := newHarness(t)
	var gotOpts client.StartWorkflowOptions
	var gotIn workflows.WorkspaceInput
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) {
			gotOpts = args.Get(1).(client.StartWorkflowOptions)
			gotIn = args.Get(3).(workflows.WorkspaceInput)
		}).Return(&mocks.WorkflowRun{}, nil).Once()

	r := h.do("POST", "/v1/workspaces", `{"template_id":"default","labels":{"team":"evals"}}`).expect(t, 201)
	var w wire.Workspace
	r.decode(t, &w)
	if !strings.HasPrefix(w.ID, "ws-") || w.Phase != wire.PhasePending || w.TemplateID != "default" ||
		w.ProviderID != "local" || w.Backend != "local" || w.Labels["team"] != "evals" ||
		w.WorkflowID != workflows.WorkflowID(w.ID) {
		t.Fatalf("workspace = %+v", w)
	}
	if loc := r.header.Get("Location"); loc != "/v1/workspaces/"+w.ID {
		t.Fatalf("Location = %q", loc)
	}
	// The template's start and recovery policy travels with the input.
	if gotIn.Policy == nil {
		t.Fatalf("workflow input has no policy: %+v", gotIn)
	}
	want := workflows.WorkspaceInput{WorkspaceID: w.ID, TemplateID: "default", ProviderID: "local", Backend: "local",
		ProbeInterval: h.srv.cfg.Starter.ProbeInterval, Policy: gotIn.Policy, TenantID: wire.DefaultTenantID}
	if gotIn != want {
		t.Fatalf("workflow input = %+v, want %+v", gotIn, want)
	}
	if gotOpts.ID != w.WorkflowID || gotOpts.TaskQueue != workflows.TaskQueue {
		t.Fatalf("start options = %+v", gotOpts)
	}
	// The row is stored and readable.
	var got wire.Workspace
	h.do("GET", "/v1/workspaces/"+w.ID, nil).expect(t, 200).decode(t, &got)
	if got.ID != w.ID || got.Phase != wire.PhasePending {
		t.Fatalf("GET = %+v", got)
	}
}

func TestCreateWorkspaceBadInput(t *testing.T) {
	h := newHarness(t) // no ExecuteWorkflow expected: the mock fails the test on any call
	tests := []struct {
		name, body  string
		field, msgs string
	}{
		{"missing template", `{"labels":{}}`, "template_id", "required"},
		{"unknown field", `{"template_id":"default","image":"x"}`, "image", "unknown field"},
		{"labels wrong type", `{"template_id":"default","labels":["a"]}`, "labels", "object"},
		{"label control char", `{"template_id":"default","labels":{"a":"b\nc"}}`, "labels.a", ""},
		{"malformed", `{"template_id":`, "", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.do("POST", "/v1/workspaces", tt.body).expectError(t, 400, "invalid", tt.field, tt.msgs)
		})
	}
	// An unknown template is 404 naming the field, as another tenant's is.
	t.Run("unknown template", func(t *testing.T) {
		h.do("POST", "/v1/workspaces", `{"template_id":"nope"}`).expectError(t, 404, "not_found", "template_id", "nope")
	})
	ws, _ := h.store.ListWorkspaces(context.Background(), models.WorkspaceFilter{})
	if len(ws) != 0 {
		t.Fatalf("bad input left %d workspaces", len(ws))
	}
}

func TestCreateWorkspaceTemporalDown(t *testing.T) {
	h := newHarness(t)
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Return(nil, errors.New("connection refused")).Once()
	h.do("POST", "/v1/workspaces", `{"template_id":"default"}`).expectError(t, 503, "unavailable", "", "connection refused")
	ws, err := h.store.ListWorkspaces(context.Background(), models.WorkspaceFilter{})
	if err != nil || len(ws) != 0 {
		t.Fatalf("a failed start left workspaces %+v (%v)", ws, err)
	}
}

func TestDeleteWorkspaceSignalsWithStart(t *testing.T) {
	h := newHarness(t)
	w := h.workspace(wire.PhaseRunning)
	var gotOpts client.StartWorkflowOptions
	var gotSig workflows.DeleteSignal
	var gotIn workflows.WorkspaceInput
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, w.WorkflowID, workflows.SignalDelete, mock.Anything,
		mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) {
			gotSig = args.Get(3).(workflows.DeleteSignal)
			gotOpts = args.Get(4).(client.StartWorkflowOptions)
			gotIn = args.Get(6).(workflows.WorkspaceInput)
		}).Return(&mocks.WorkflowRun{}, nil).Once()

	var got wire.Workspace
	h.do("DELETE", "/v1/workspaces/"+w.ID, nil).expect(t, 202).decode(t, &got)
	if got.ID != w.ID || got.Phase != wire.PhaseTerminating {
		t.Fatalf("response = %+v, want phase terminating", got)
	}
	if gotSig.Reason != "deleted by user" || gotIn.WorkspaceID != w.ID || gotIn.TemplateID != w.TemplateID ||
		gotOpts.ID != w.WorkflowID || gotOpts.WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE {
		t.Fatalf("signal %+v input %+v options %+v", gotSig, gotIn, gotOpts)
	}

	// Temporal down: 503, and the workspace is untouched.
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything,
		mock.Anything, mock.Anything, mock.Anything).Return(nil, errors.New("deadline exceeded")).Once()
	h.do("DELETE", "/v1/workspaces/"+w.ID, nil).expectError(t, 503, "unavailable", "", "signal delete")
	stored, err := h.store.GetWorkspace(context.Background(), w.ID)
	if err != nil || stored.Phase != wire.PhaseRunning {
		t.Fatalf("workspace after failed delete = %+v, %v", stored, err)
	}
}

func TestListWorkspaces(t *testing.T) {
	h := newHarness(t)
	a := h.workspace(wire.PhaseRunning)
	b := h.workspace(wire.PhasePending)
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{b.ID, a.ID}},
		{"?phase=running", []string{a.ID}},
		{"?phase=pending&template_id=default&provider_id=local&backend=local", []string{b.ID}},
		{"?backend=container", nil},
		{"?limit=1", []string{b.ID}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var got wire.Items[wire.Workspace]
			h.do("GET", "/v1/workspaces"+tt.query, nil).expect(t, 200).decode(t, &got)
			var ids []string
			for _, w := range got.Items {
				ids = append(ids, w.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tt.want) {
				t.Fatalf("ids = %v, want %v", ids, tt.want)
			}
		})
	}
	h.do("GET", "/v1/workspaces?phase=sleeping", nil).expectError(t, 400, "invalid", "phase", "sleeping")
	h.do("GET", "/v1/workspaces?limit=-1", nil).expectError(t, 400, "invalid", "limit", "")
	h.do("GET", "/v1/workspaces?limit=x", nil).expectError(t, 400, "invalid", "limit", "")
}

func TestWorkspaceJSONHasNoToken(t *testing.T) {
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	stored, err := h.store.GetWorkspace(context.Background(), w.ID)
	if err != nil || stored.RuntimeToken == "" {
		t.Fatalf("no token stored: %v", err)
	}
	for _, path := range []string{"/v1/workspaces/" + w.ID, "/v1/workspaces"} {
		r := h.do("GET", path, nil).expect(t, 200)
		if strings.Contains(string(r.body), stored.RuntimeToken) || strings.Contains(string(r.body), "token") {
			t.Fatalf("GET %s leaks the token: %s", path, r.body)
		}
	}
}

func TestSessions(t *testing.T) {
	h := newHarness(t)
	w := h.workspace(wire.PhaseRunning)
	dying := h.workspace(wire.PhaseTerminating)

	var ses wire.Session
	h.do("POST", "/v1/sessions", fmt.Sprintf(`{"workspace_id":%q,"agent":"claude","metadata":{"run":"7"}}`, w.ID)).
		expect(t, 201).decode(t, &ses)
	if !strings.HasPrefix(ses.ID, "ses-") || ses.Status != wire.SessionOpen || ses.Agent != "claude" || ses.Metadata["run"] != "7" {
		t.Fatalf("session = %+v", ses)
	}

	bad := []struct {
		name, body       string
		status           int
		code, field, msg string
	}{
		{"unknown workspace", `{"workspace_id":"ws-nope"}`, 404, "not_found", "workspace_id", "ws-nope"},
		{"missing workspace", `{"agent":"a"}`, 400, "invalid", "workspace_id", "required"},
		{"terminating workspace", fmt.Sprintf(`{"workspace_id":%q}`, dying.ID), 409, "failed_precondition", "", "terminating"},
		{"unknown field", fmt.Sprintf(`{"workspace_id":%q,"x":1}`, w.ID), 400, "invalid", "x", ""},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			h.do("POST", "/v1/sessions", tt.body).expectError(t, tt.status, tt.code, tt.field, tt.msg)
		})
	}

	// The first end wins; a second end keeps the first reason.
	var ended wire.Session
	h.do("POST", "/v1/sessions/"+ses.ID+"/end", `{"reason":"done"}`).expect(t, 200).decode(t, &ended)
	if ended.Status != wire.SessionEnded || ended.EndReason != "done" || ended.EndedAt == nil {
		t.Fatalf("ended = %+v", ended)
	}
	h.do("POST", "/v1/sessions/"+ses.ID+"/end", `{"reason":"again"}`).expect(t, 200).decode(t, &ended)
	if ended.EndReason != "done" {
		t.Fatalf("second end changed the reason to %q", ended.EndReason)
	}

	// No body: the default reason.
	var other wire.Session
	h.do("POST", "/v1/sessions", fmt.Sprintf(`{"workspace_id":%q}`, w.ID)).expect(t, 201).decode(t, &other)
	h.do("POST", "/v1/sessions/"+other.ID+"/end", nil).expect(t, 200).decode(t, &ended)
	if ended.EndReason != wire.ReasonEndedByUser {
		t.Fatalf("default reason = %q", ended.EndReason)
	}

	var open wire.Items[wire.Session]
	h.do("POST", "/v1/sessions", fmt.Sprintf(`{"workspace_id":%q}`, w.ID)).expect(t, 201)
	h.do("GET", "/v1/sessions?status=open&workspace_id="+w.ID, nil).expect(t, 200).decode(t, &open)
	if len(open.Items) != 1 || open.Items[0].Status != wire.SessionOpen {
		t.Fatalf("open sessions = %+v", open.Items)
	}
	var all wire.Items[wire.Session]
	h.do("GET", "/v1/sessions", nil).expect(t, 200).decode(t, &all)
	if len(all.Items) != 3 {
		t.Fatalf("all sessions = %d, want 3", len(all.Items))
	}
	h.do("GET", "/v1/sessions?status=paused", nil).expectError(t, 400, "invalid", "status", "")
	h.do("GET", "/v1/sessions/"+ses.ID, nil).expect(t, 200)
}

func TestOversizedJSONIs413(t *testing.T) {
	h := newHarness(t)
	big := `{"id":"x","provider":"local","config":{"pad":"` + strings.Repeat("a", DefaultMaxJSONBytes) + `"}}`
	h.do("POST", "/v1/providers", big).expectError(t, 413, "too_large", "", "limit")
	// Without a Content-Length the limit is enforced while reading.
	h.do("POST", "/v1/workspaces", io.MultiReader(strings.NewReader(big))).expectError(t, 413, "too_large", "", "limit")
}

func TestOperations(t *testing.T) {
	var ready error
	h := newHarness(t, func(c *Config) {
		c.Ready = func(context.Context) error { return ready }
	})
	h.do("GET", "/healthz", nil).expect(t, 200)
	h.do("GET", "/readyz", nil).expect(t, 200)
	ready = errors.New("temporal: connection refused")
	h.do("GET", "/readyz", nil).expectError(t, 503, "unavailable", "", "temporal")
	h.do("GET", "/healthz", nil).expect(t, 200)

	h.do("GET", "/v1/providers/local", nil).expect(t, 200)
	h.do("GET", "/v1/providers/ghost-1", nil).expect(t, 404)
	h.do("GET", "/v1/providers/ghost-2", nil).expect(t, 404)
	m := string(h.do("GET", "/metrics", nil).expect(t, 200).body)
	for _, want := range []string{
		`primer_http_requests_total{code="200",method="GET",route="/v1/providers/:id"} 1`,
		`primer_http_requests_total{code="404",method="GET",route="/v1/providers/:id"} 2`,
		`primer_http_request_duration_seconds_count{method="GET",route="/v1/providers/:id"} 3`,
		`go_goroutines`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(m, "ghost") {
		t.Errorf("metrics carry raw paths")
	}
}

func TestPanicBecomesEnvelope(t *testing.T) {
	h := newHarness(t)
	h.engine.GET("/v1/boom", func(*gin.Context) { panic("boom") })
	h.do("GET", "/v1/boom", nil).expectError(t, 500, "internal", "", "internal error")
	// The server still serves.
	h.do("GET", "/healthz", nil).expect(t, 200)
}

func TestNewValidatesConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New with an empty config succeeded")
	}
}

func TestDecodeStrict(t *testing.T) {
	type body struct {
		A string            `json:"a"`
		B []string          `json:"b"`
		C map[string]string `json:"c"`
	}
	tests := []struct {
		in, field, msg string
	}{
		{`{"a":1}`, "p.a", "expected a string"},
		{`{"b":"x"}`, "p.b", "expected an array"},
		{`{"c":[]}`, "p.c", "expected an object"},
		{`{"z":1}`, "p.z", "unknown field"},
		{`{"a":"x"} x`, "", "after the JSON value"},
		{`{"a":"x"`, "", "unexpected end"},
		{`{"a" "x"}`, "", "offset 6"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var b body
			err := decodeStrict([]byte(tt.in), &b, "p.")
			if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tt.field || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v (field %q), want field %q and %q", err, errs.FieldOf(err), tt.field, tt.msg)
			}
		})
	}
	var b body
	if err := decodeStrict([]byte(` {"a":"x","b":["1"]} `), &b, ""); err != nil || b.A != "x" || b.B[0] != "1" {
		t.Fatalf("good body: %+v %v", b, err)
	}
}
