package api

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// lifetimeTemplate stores template "life" on the local provider with
// lifetime {max: 1h, idle: 10m}.
func (h *harness) lifetimeTemplate() {
	h.t.Helper()
	err := h.store.CreateTemplate(context.Background(), &wire.Template{ID: "life", ProviderID: wire.LocalProviderID,
		Backend: json.RawMessage(`{"kind":"local","lifetime":{"max":"1h","idle":"10m"}}`)})
	if err != nil {
		h.t.Fatalf("create template: %v", err)
	}
}

// mortal stores a workspace of template life whose life started at
// start: expires in 30m, may live 1h, idle after 10m.
func (h *harness) mortal(phase string, start time.Time) *wire.Workspace {
	h.t.Helper()
	id := models.NewID("ws")
	w := &wire.Workspace{
		ID: id, TemplateID: "life", ProviderID: wire.LocalProviderID,
		Backend: wire.BackendLocal, Phase: phase, WorkflowID: workflows.WorkflowID(id),
		MaxLifetimeMS: time.Hour.Milliseconds(), IdleTimeoutMS: (10 * time.Minute).Milliseconds(),
	}
	w.SetDeadlines(models.StartDeadlines(start, time.Hour, 30*time.Minute, 10*time.Minute, 0))
	if err := h.store.CreateWorkspace(context.Background(), w); err != nil {
		h.t.Fatalf("create workspace: %v", err)
	}
	return w
}

func TestLifetimeBadInput(t *testing.T) {
	h := newHarness(t)
	h.lifetimeTemplate()
	ws := h.mortal(wire.PhaseRunning, time.Now())
	plain := h.workspace(wire.PhaseRunning)
	h.pool("p", 1)
	far := time.Now().Add(3 * time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)

	tests := []struct {
		name, method, path, body string
		status                   int
		code, field, msg         string
	}{
		{"ttl over max", "POST", "/v1/workspaces", `{"template_id":"life","ttl":"2h"}`, 400, "invalid", "ttl", "lifetime.max"},
		{"ttl not a duration", "POST", "/v1/workspaces", `{"template_id":"life","ttl":"soon"}`, 400, "invalid", "ttl", "not a duration"},
		{"ttl negative", "POST", "/v1/workspaces", `{"template_id":"life","ttl":"-5m"}`, 400, "invalid", "ttl", "more than 0"},
		{"ttl too long", "POST", "/v1/workspaces", `{"template_id":"default","ttl":"9000h"}`, 400, "invalid", "ttl", "more than"},
		{"extend unknown", "POST", "/v1/workspaces/ws-ghost/extend", `{"by":"30m"}`, 404, "not_found", "", "ws-ghost"},
		{"extend beyond max", "POST", "/v1/workspaces/" + ws.ID + "/extend", `{"by":"2h"}`, 400, "invalid", "by", "max_expires_at"},
		{"extend until beyond max", "POST", "/v1/workspaces/" + ws.ID + "/extend", `{"until":"` + far + `"}`, 400, "invalid", "until", "max_expires_at"},
		{"extend until in the past", "POST", "/v1/workspaces/" + ws.ID + "/extend", `{"until":"` + past + `"}`, 400, "invalid", "until", "future"},
		{"extend until not a time", "POST", "/v1/workspaces/" + ws.ID + "/extend", `{"until":"tomorrow"}`, 400, "invalid", "until", "RFC 3339"},
		{"extend bad duration", "POST", "/v1/workspaces/" + ws.ID + "/extend", `{"by":"a while"}`, 400, "invalid", "by", "not a duration"},
		{"extend zero", "POST", "/v1/workspaces/" + ws.ID + "/extend", `{"by":"0s"}`, 400, "invalid", "by", "more than 0"},
		{"extend both", "POST", "/v1/workspaces/" + ws.ID + "/extend", `{"by":"1m","until":"` + far + `"}`, 400, "invalid", "by", "not both"},
		{"extend neither", "POST", "/v1/workspaces/" + ws.ID + "/extend", `{}`, 400, "invalid", "by", "required"},
		{"exact without until", "POST", "/v1/workspaces/" + ws.ID + "/extend", `{"by":"1m","exact":true}`, 400, "invalid", "exact", "needs until"},
		{"exact beyond max", "POST", "/v1/workspaces/" + ws.ID + "/extend", `{"until":"` + far + `","exact":true}`, 400, "invalid", "until", "max_expires_at"},
		{"extend unknown field", "POST", "/v1/workspaces/" + ws.ID + "/extend", `{"for":"1m"}`, 400, "invalid", "for", "unknown field"},
		{"extend without deadlines", "POST", "/v1/workspaces/" + plain.ID + "/extend", `{"by":"1m"}`, 409, "failed_precondition", "", "no deadline"},
		{"pool lease_ttl bad", "POST", "/v1/pools", `{"id":"q","template_id":"default","lease_ttl":"forever"}`, 400, "invalid", "lease_ttl", "not a duration"},
		{"pool lease_ttl zero", "POST", "/v1/pools", `{"id":"q","template_id":"default","lease_ttl":"0s"}`, 400, "invalid", "lease_ttl", "more than 0"},
		{"lease lease_ttl bad", "POST", "/v1/pools/p/lease", `{"lease_ttl":"-1m"}`, 400, "invalid", "lease_ttl", "more than 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.do(tt.method, tt.path, tt.body).expectError(t, tt.status, tt.code, tt.field, tt.msg)
		})
	}
	// Nothing moved.
	got, err := h.store.GetWorkspace(context.Background(), ws.ID)
	if err != nil || !got.ExpiresAt.Equal(*ws.ExpiresAt) {
		t.Fatalf("after refused extends: expires_at %v, want %v (%v)", got.ExpiresAt, ws.ExpiresAt, err)
	}
}

func TestExtendWorkspace(t *testing.T) {
	h := newHarness(t)
	h.lifetimeTemplate()
	start := time.Now()
	ws := h.mortal(wire.PhaseRunning, start)

	var got wire.Workspace
	h.do("POST", "/v1/workspaces/"+ws.ID+"/extend", `{"by":"20m"}`).expect(t, 200).decode(t, &got)
	if want := ws.ExpiresAt.Add(20 * time.Minute); got.ExpiresAt == nil || !got.ExpiresAt.Equal(want) {
		t.Fatalf("expires_at after extend by 20m = %v, want %v", got.ExpiresAt, want)
	}
	// The idle deadline moves with it: the workspace is wanted until then.
	if want := ws.IdleDeadline.Add(20 * time.Minute); got.IdleDeadline == nil || got.IdleDeadline.Before(want) {
		t.Fatalf("idle_deadline after extend = %v, want at least %v", got.IdleDeadline, want)
	}
	// Up to max exactly is fine.
	until := ws.MaxExpiresAt.UTC().Format(time.RFC3339Nano)
	h.do("POST", "/v1/workspaces/"+ws.ID+"/extend", fmt.Sprintf(`{"until":%q}`, until)).expect(t, 200).decode(t, &got)
	stored, err := h.store.GetWorkspace(context.Background(), ws.ID)
	if err != nil || stored.ExpiresAt == nil || !stored.ExpiresAt.Equal(*ws.MaxExpiresAt) {
		t.Fatalf("stored expires_at after extend until max = %v, want %v (%v)", stored.ExpiresAt, ws.MaxExpiresAt, err)
	}

	// An earlier until is ignored by an extend, and set with exact.
	sooner := time.Now().Add(5 * time.Minute).UTC().Truncate(time.Second)
	h.do("POST", "/v1/workspaces/"+ws.ID+"/extend", fmt.Sprintf(`{"until":%q}`, sooner.Format(time.RFC3339))).expect(t, 200)
	if stored, _ = h.store.GetWorkspace(context.Background(), ws.ID); !stored.ExpiresAt.Equal(*ws.MaxExpiresAt) {
		t.Fatalf("expires_at after an extend to an earlier time = %v, want it kept at %v", stored.ExpiresAt, ws.MaxExpiresAt)
	}
	h.do("POST", "/v1/workspaces/"+ws.ID+"/extend", fmt.Sprintf(`{"until":%q,"exact":true}`, sooner.Format(time.RFC3339))).expect(t, 200)
	if stored, _ = h.store.GetWorkspace(context.Background(), ws.ID); !stored.ExpiresAt.Equal(sooner) {
		t.Fatalf("expires_at after an exact extend = %v, want %v", stored.ExpiresAt, sooner)
	}
}

func TestCreateWithTTL(t *testing.T) {
	h := newHarness(t)
	h.lifetimeTemplate()
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Return(&mocks.WorkflowRun{}, nil).Twice()
	before := time.Now().Truncate(time.Microsecond)
	var cr wire.Created
	h.do("POST", "/v1/workspaces", `{"template_id":"life","ttl":"15m"}`).expect(t, 201).decode(t, &cr)
	w := cr.Workspace
	if w.ExpiresAt == nil || w.ExpiresAt.Before(before.Add(15*time.Minute)) || w.ExpiresAt.After(time.Now().Add(15*time.Minute)) {
		t.Fatalf("expires_at = %v, want 15m from now", w.ExpiresAt)
	}
	if w.MaxExpiresAt == nil || w.MaxExpiresAt.Before(before.Add(time.Hour)) || w.IdleDeadline == nil {
		t.Fatalf("max_expires_at = %v, idle_deadline = %v", w.MaxExpiresAt, w.IdleDeadline)
	}
	// No ttl: the template's max.
	h.do("POST", "/v1/workspaces", `{"template_id":"life"}`).expect(t, 201).decode(t, &cr)
	if w := cr.Workspace; w.ExpiresAt == nil || !w.ExpiresAt.Equal(*w.MaxExpiresAt) {
		t.Fatalf("without ttl: expires_at %v, max_expires_at %v", w.ExpiresAt, w.MaxExpiresAt)
	}
}

func TestLeaseTTL(t *testing.T) {
	h := newHarness(t)
	h.expectPoolStart("p", nil)
	var pv wire.PoolView
	h.do("POST", "/v1/pools", `{"id":"p","template_id":"default","size":1,"lease_ttl":"5m"}`).expect(t, 201).decode(t, &pv)
	if pv.LeaseTTL != "5m" {
		t.Fatalf("pool lease_ttl = %q", pv.LeaseTTL)
	}
	h.member("p", wire.PhaseRunning, wire.PoolIdle)
	h.member("p", wire.PhaseRunning, wire.PoolIdle)
	h.expectNotify("p", 2)

	before := time.Now().Truncate(time.Microsecond)
	var lr wire.Lease
	h.do("POST", "/v1/pools/p/lease", nil).expect(t, 200).decode(t, &lr)
	if at := lr.Workspace.LeaseExpiresAt; at == nil || at.Before(before.Add(5*time.Minute)) || at.After(time.Now().Add(5*time.Minute)) {
		t.Fatalf("lease_expires_at with the pool's ttl = %v", at)
	}
	h.do("POST", "/v1/pools/p/lease", `{"lease_ttl":"1m"}`).expect(t, 200).decode(t, &lr)
	if at := lr.Workspace.LeaseExpiresAt; at == nil || at.After(time.Now().Add(time.Minute)) {
		t.Fatalf("lease_expires_at with the lease's ttl = %v", at)
	}
	stored, err := h.store.GetWorkspace(context.Background(), lr.Workspace.ID)
	if err != nil || stored.LeaseExpiresAt == nil || !stored.LeaseExpiresAt.Equal(*lr.Workspace.LeaseExpiresAt) {
		t.Fatalf("stored lease_expires_at = %v (%v)", stored, err)
	}
	// Back in the pool, its deadlines are gone: idle members never expire.
	if err := h.store.SetPoolState(context.Background(), stored.ID, wire.PoolLeased, wire.PoolReturning); err != nil {
		t.Fatal(err)
	}
	if err := h.store.SetPoolState(context.Background(), stored.ID, wire.PoolReturning, wire.PoolIdle); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.store.GetWorkspace(context.Background(), stored.ID); got.LeaseExpiresAt != nil || got.ExpiresAt != nil {
		t.Fatalf("idle again with deadlines %+v", got.Deadlines())
	}
}

// TestTouch checks the idle deadline follows calls, written only when it
// lags by more than a tenth of the idle timeout (exec, files and sessions
// call touch; the e2e tests drive it through them).
func TestTouch(t *testing.T) {
	h := newHarness(t)
	h.lifetimeTemplate()
	ctx := context.Background()
	w := h.mortal(wire.PhaseRunning, time.Now().Add(-5*time.Minute))
	before := time.Now().Truncate(time.Microsecond)
	h.srv.touch(ctx, w)
	got, err := h.store.GetWorkspace(ctx, w.ID)
	if err != nil || got.IdleDeadline == nil || got.IdleDeadline.Before(before.Add(10*time.Minute)) {
		t.Fatalf("idle_deadline after a touch = %v, want 10m from %v (%v)", got.IdleDeadline, before.UTC(), err)
	}
	// Fresh enough now: the next touch writes nothing.
	first := *got.IdleDeadline
	h.srv.touch(ctx, got)
	if again, _ := h.store.GetWorkspace(ctx, w.ID); !again.IdleDeadline.Equal(first) {
		t.Fatalf("idle_deadline rewritten within a tenth of idle: %v, was %v", again.IdleDeadline, first)
	}
	// A workspace without an idle deadline (an idle pool member) is left alone.
	plain := h.workspace(wire.PhaseRunning)
	h.srv.touch(ctx, plain)
	if again, _ := h.store.GetWorkspace(ctx, plain.ID); again.IdleDeadline != nil {
		t.Fatalf("touch gave a deadline to a workspace without one: %v", again.IdleDeadline)
	}
}
