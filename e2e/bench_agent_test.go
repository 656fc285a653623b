//go:build bench

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/primerhq/primer/activities/llm"
	"github.com/primerhq/primer/activities/llm/llmtest"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// agentBenchTurns is how many turns the benchmark's run takes.
const agentBenchTurns = 41

// TestBenchAgentTurn measures Primer's overhead per agent turn on the
// container backend: a run whose test model answers at once with one
// workspace__exec of `true`, agentBenchTurns times. A turn (from one
// assistant message stored to the next) is one tool call and one model
// call with their records and .state commits; its overhead is the turn
// minus the model's own time (llm.Complete against the same server, the
// same request) and the tool's own time (`true` through the runtime
// client). Target: p50 under 20 ms.
func TestBenchAgentTurn(t *testing.T) {
	requireBench(t)
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e)
		r.template("bench", nil)
		ws := r.running(t, "bench")
		ctx := ctxT(t, 5*time.Minute)
		key := secretKey(t)
		srv := llmtest.Start(t, llmtest.Script{{ToolCalls: llmtest.ToolTurn("workspace__exec", map[string]string{"command": "true"}).ToolCalls, Forever: true}})
		if _, err := r.p.api.CreateLLMProvider(ctx, wire.LLMProviderSpec{ID: "bench-model", Kind: wire.LLMOpenAI, BaseURL: srv.URL(), APIKey: key}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.p.api.CreateAgent(ctx, wire.AgentSpec{ID: "bench", Model: &wire.AgentModel{ProviderID: "bench-model", ModelName: "m"}, MaxTurns: agentBenchTurns}); err != nil {
			t.Fatal(err)
		}
		ses, err := r.p.api.CreateSession(ctx, wire.CreateSessionRequest{WorkspaceID: ws.ID, Agent: "bench", Instructions: "run true"})
		if err != nil {
			t.Fatal(err)
		}
		run, err := r.p.api.FollowTranscript(ctx, ses.ID, func(wire.TranscriptEntry) error { return nil })
		if err != nil || run.EndReason != wire.AgentMaxTurns {
			t.Fatalf("run = %+v, %v; want max_turns", run, err)
		}
		tr, err := r.p.api.SessionTranscript(ctx, ses.ID)
		if err != nil {
			t.Fatal(err)
		}
		// The turn's two halves: from the answer stored to its tool call
		// finished (the turn's commit, the tool activity), and from there
		// to the next answer stored (the model activity).
		var asst []time.Time
		var toolHalf, modelHalf []time.Duration
		var toolDone time.Time
		for _, e := range tr.Items {
			switch e.Role {
			case wire.RoleAssistant:
				if !toolDone.IsZero() {
					modelHalf = append(modelHalf, e.CreatedAt.Sub(toolDone))
				}
				asst = append(asst, e.CreatedAt)
			case wire.RoleTool:
				toolDone = e.UpdatedAt
				toolHalf = append(toolHalf, e.UpdatedAt.Sub(asst[len(asst)-1]))
			}
		}
		if len(asst) != agentBenchTurns {
			t.Fatalf("%d assistant turns, want %d", len(asst), agentBenchTurns)
		}
		var turns []time.Duration
		for i := 1; i < len(asst); i++ {
			turns = append(turns, asst[i].Sub(asst[i-1]))
		}

		// The model's own time: a request of the run's size, sent again.
		last := llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "run true"}}}
		model := timeN(t, len(turns), func() error {
			_, err := llm.Complete(ctx, nil, llm.Endpoint{Kind: llm.KindOpenAI, BaseURL: srv.URL(), APIKey: key}, last)
			return err
		})
		rt, err := r.p.srv.Runtime(ctx, ws.ID)
		if err != nil {
			t.Fatal(err)
		}
		tool := timeN(t, len(turns), runtimeExecTrue(ctx, rt))
		own := pct(model, .5) + pct(tool, .5)
		overhead := make([]time.Duration, len(turns))
		for i, d := range turns {
			overhead[i] = d - own
		}
		printTable(t, "Agent turn overhead: container on "+e.Name, append([]row{
			{name: "agent turn (model call + workspace__exec `true`)", target: "-", samples: turns,
				baseName: "model call + runtime exec `true`", baseline: addDurations(model, tool)},
			{name: fmt.Sprintf("Primer's overhead per turn (turn - model p50 %s - tool p50 %s)", ms(pct(model, .5)), ms(pct(tool, .5))),
				target: "p50 < 20 ms", samples: overhead, limit: 20 * time.Millisecond},
			{name: "of which: answer stored to its tool call finished", target: "-", samples: toolHalf},
			{name: "of which: tool call finished to the next answer stored", target: "-", samples: modelHalf},
		}, runSteps(t, ctx, r.p, ses.ID)...))
	})
}

func addDurations(a, b []time.Duration) []time.Duration {
	out := make([]time.Duration, min(len(a), len(b)))
	for i := range out {
		out[i] = a[i] + b[i]
	}
	return out
}

// runSteps splits the run's Temporal history (every run of its
// continue-as-new chain) into the steps of its turns: for each activity,
// scheduled to started (dispatch), started to completed (its own work),
// and completed to the next activity scheduled (the workflow task in
// between). Printed so a slow turn shows which step it is in.
func runSteps(t *testing.T, ctx context.Context, p *primer, sessionID string) []row {
	t.Helper()
	tc := p.srv.TemporalClient()
	var events [][]*historypb.HistoryEvent
	runID := ""
	for {
		var evs []*historypb.HistoryEvent
		it := tc.GetWorkflowHistory(ctx, workflows.SessionRunID(sessionID), runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", workflows.SessionRunID(sessionID), err)
			}
			evs = append(evs, ev)
		}
		events = append([][]*historypb.HistoryEvent{evs}, events...)
		runID = evs[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if runID == "" {
			break
		}
	}
	steps := map[string][]time.Duration{}
	var names []string
	add := func(name string, d time.Duration) {
		if _, ok := steps[name]; !ok {
			names = append(names, name)
		}
		steps[name] = append(steps[name], d)
	}
	var prevEnd time.Time
	for _, evs := range events {
		if !prevEnd.IsZero() {
			add("continue-as-new: previous run closed to this run's first workflow task started", firstOf(evs, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED).Sub(prevEnd))
		}
		prevEnd = evs[len(evs)-1].GetEventTime().AsTime()
		sched := map[int64]*historypb.HistoryEvent{}
		started := map[int64]*historypb.HistoryEvent{}
		var lastDone *historypb.HistoryEvent
		var lastName string
		var wtSched, wtStart time.Time
		for _, ev := range evs {
			at := ev.GetEventTime().AsTime()
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				sched[ev.GetEventId()] = ev
				name := ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
				if lastDone != nil {
					add("workflow: "+lastName+" completed to "+name+" scheduled", at.Sub(lastDone.GetEventTime().AsTime()))
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				a := ev.GetActivityTaskStartedEventAttributes()
				s := sched[a.GetScheduledEventId()]
				started[a.GetScheduledEventId()] = ev
				add(s.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()+": scheduled to started", at.Sub(s.GetEventTime().AsTime()))
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				a := ev.GetActivityTaskCompletedEventAttributes()
				s, st := sched[a.GetScheduledEventId()], started[a.GetScheduledEventId()]
				lastName = s.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
				add(lastName+": started to completed", at.Sub(st.GetEventTime().AsTime()))
				lastDone = ev
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
				wtSched = at
				if lastDone != nil {
					add("workflow task: "+lastName+" completed to scheduled", at.Sub(lastDone.GetEventTime().AsTime()))
				}
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				wtStart = at
				add("workflow task: scheduled to started", at.Sub(wtSched))
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				add("workflow task: started to completed", at.Sub(wtStart))
			}
		}
	}
	var rows []row
	for _, n := range names {
		rows = append(rows, row{name: "history: " + n, target: "-", samples: steps[n]})
	}
	return rows
}

// firstOf is the time of the first event of type typ in evs.
func firstOf(evs []*historypb.HistoryEvent, typ enumspb.EventType) time.Time {
	for _, ev := range evs {
		if ev.GetEventType() == typ {
			return ev.GetEventTime().AsTime()
		}
	}
	return time.Time{}
}
