package api

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// createAnswer decodes a create response: the workspace's fields plus
// source.
type createAnswer struct {
	wire.Workspace
	Source string `json:"source"`
}

func TestCreateWorkspaceWarmAndCold(t *testing.T) {
	tests := []struct {
		name string
		// members are the pool states of running members of pool p of
		// the default template; nil means the template has no pool.
		members []string
		want    string
	}{
		{"idle member: warm", []string{wire.PoolIdle}, CreateWarm},
		{"only leased members: cold", []string{wire.PoolLeased, wire.PoolReturning}, CreateCold},
		{"empty pool: cold", []string{}, CreateCold},
		{"no pool: cold", nil, CreateCold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			var idle *wire.Workspace
			if tt.members != nil {
				h.pool("p", 2)
				for _, st := range tt.members {
					w := h.member("p", wire.PhaseRunning, st)
					if st == wire.PoolIdle {
						idle = w
					}
				}
				// A pending idle member is not ready: never taken.
				h.member("p", wire.PhasePending, wire.PoolIdle)
			}
			var notified *int
			if tt.want == CreateWarm {
				notified = h.expectNotify("p", 1)
			} else {
				h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
					Return(&mocks.WorkflowRun{}, nil).Once()
			}

			r := h.do("POST", "/v1/workspaces", `{"template_id":"default","labels":{"team":"evals"}}`).expect(t, 201)
			var got createAnswer
			r.decode(t, &got)
			if got.Source != tt.want || got.Labels["team"] != "evals" || got.TemplateID != "default" ||
				got.PoolID != "" || got.PoolState != "" {
				t.Fatalf("create = %+v, want source %s, labels, no pool", got, tt.want)
			}
			if loc := r.header.Get("Location"); loc != "/v1/workspaces/"+got.ID {
				t.Fatalf("Location = %q", loc)
			}
			stored, err := h.store.GetWorkspace(context.Background(), got.ID)
			if err != nil || stored.PoolID != "" || stored.PoolState != "" || stored.Labels["team"] != "evals" {
				t.Fatalf("stored = %+v (%v)", stored, err)
			}
			h.srv.bg.Wait()
			if tt.want == CreateWarm {
				// The pool's member, running already, and the pool
				// woken to refill after the answer.
				if got.ID != idle.ID || got.Phase != wire.PhaseRunning || got.WorkflowID != idle.WorkflowID {
					t.Fatalf("warm create = %+v, want the idle member %s", got, idle.ID)
				}
				if *notified != 1 {
					t.Fatalf("pool woken %d times, want 1", *notified)
				}
				return
			}
			if got.Phase != wire.PhasePending || (idle != nil && got.ID == idle.ID) {
				t.Fatalf("cold create = %+v", got)
			}
		})
	}
}

// TestCreateWorkspaceWarmConcurrent races creates for fewer idle members:
// each member goes to one create, the others go cold.
func TestCreateWorkspaceWarmConcurrent(t *testing.T) {
	h := newHarness(t)
	const idle, creates = 4, 8
	h.pool("p", idle)
	for range idle {
		h.member("p", wire.PhaseRunning, wire.PoolIdle)
	}
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, workflows.PoolWorkflowID("p"), workflows.SignalPoolChanged,
		mock.Anything, mock.Anything, workflows.PoolWorkflowName, mock.Anything).Return(&mocks.WorkflowRun{}, nil)
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Return(&mocks.WorkflowRun{}, nil)
	got := make([]createAnswer, creates)
	done := make(chan struct{})
	for i := range creates {
		go func() {
			defer func() { done <- struct{}{} }()
			r := h.do("POST", "/v1/workspaces", `{"template_id":"default"}`)
			if r.status == 201 {
				r.decode(t, &got[i])
			}
		}()
	}
	for range creates {
		<-done
	}
	h.srv.bg.Wait()
	seen, warm := map[string]bool{}, 0
	for i, g := range got {
		if g.ID == "" || seen[g.ID] {
			t.Fatalf("create %d = %+v (empty or duplicate)", i, g)
		}
		seen[g.ID] = true
		if g.Source == CreateWarm {
			warm++
		}
	}
	if warm != idle {
		t.Fatalf("%d warm creates, want %d", warm, idle)
	}
}
