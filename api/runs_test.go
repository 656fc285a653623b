package api

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// expectRunStarts expects times starts of run workflows, answering err,
// and records their inputs.
func (h *harness) expectRunStarts(times int, err error) func() []workflows.RunInput {
	var mu sync.Mutex
	var ins []workflows.RunInput
	var run any = &mocks.WorkflowRun{}
	if err != nil {
		run = nil
	}
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool {
		return strings.HasPrefix(o.ID, "run-") && o.TaskQueue == workflows.TaskQueue
	}), workflows.RunWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) {
			mu.Lock()
			ins = append(ins, args.Get(3).(workflows.RunInput))
			mu.Unlock()
		}).Return(run, err).Times(times)
	return func() []workflows.RunInput {
		mu.Lock()
		defer mu.Unlock()
		return append([]workflows.RunInput(nil), ins...)
	}
}

// startRun makes a run through the API and returns it.
func (h *harness) startRun(t *testing.T, suiteID string, body any) wire.RunView {
	t.Helper()
	var v wire.RunView
	h.do("POST", "/v1/suites/"+suiteID+"/runs", body).expect(t, 201).decode(t, &v)
	return v
}

// finish gives a case of a run its final result, as the run's activity
// would.
func (h *harness) finish(t *testing.T, runID string, ordinal int, verdict, reason string, durMS int64, score *float64) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	if err := h.store.StartCase(ctx, runID, ordinal, now); err != nil {
		t.Fatalf("start case %d: %v", ordinal, err)
	}
	r := &wire.CaseResult{RunID: runID, Ordinal: ordinal, Verdict: verdict, Reason: reason, DurationMS: durMS, Score: score,
		Attempts: json.RawMessage(`[{"attempt":1,"workspace_id":"ws-1","verdict":"` + verdict + `","started_at":"` + now.UTC().Format(time.RFC3339Nano) + `","ended_at":"` + now.UTC().Format(time.RFC3339Nano) + `"}]`), EndedAt: &now}
	if err := h.store.FinishCase(ctx, r); err != nil {
		t.Fatalf("finish case %d: %v", ordinal, err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestRuns(t *testing.T) {
	h := newHarness(t)
	h.withSchedules()
	ctx := context.Background()
	h.do("POST", "/v1/suites", suiteJSON("s", 4, "")).expect(t, 201)
	starts := h.expectRunStarts(3, nil)

	// All cases, by the default user.
	r1 := h.startRun(t, "s", nil)
	if !strings.HasPrefix(r1.ID, "run-") || r1.SuiteID != "s" || r1.Total != 4 || r1.Status != wire.RunPending ||
		r1.Trigger != wire.TriggerUser || r1.TriggeredBy != "api" || r1.Progress.Total != 4 || r1.Progress.Pending != 4 {
		t.Fatalf("run = %+v", r1)
	}
	// A subset by id, and who asked.
	r2 := h.startRun(t, "s", `{"cases":["c1","c3"],"triggered_by":"ci job 7"}`)
	if r2.Total != 2 || r2.TriggeredBy != "ci job 7" {
		t.Fatalf("run of two cases = %+v", r2)
	}
	// A subset by label.
	r3 := h.startRun(t, "s", `{"labels":{"level":"l0"}}`)
	if r3.Total != 2 {
		t.Fatalf("run by label = %+v", r3)
	}
	if ins := starts(); len(ins) != 3 || ins[0] != (workflows.RunInput{RunID: r1.ID, SuiteID: "s", TriggeredBy: "api"}) {
		t.Fatalf("workflow inputs = %+v", ins)
	}

	bad := []struct {
		name, method, path, body string
		status                   int
		code, field, msg         string
	}{
		{"unknown case", "POST", "/v1/suites/s/runs", `{"cases":["c1","nope"]}`, 400, "invalid", "cases", "nope"},
		{"labels pick none", "POST", "/v1/suites/s/runs", `{"labels":{"level":"l9"}}`, 400, "invalid", "cases", "picks no case"},
		{"unknown suite", "POST", "/v1/suites/ghost/runs", ``, 404, "not_found", "", "ghost"},
		{"unknown field", "POST", "/v1/suites/s/runs", `{"case":["c1"]}`, 400, "invalid", "case", "unknown field"},
		{"triggered_by too long", "POST", "/v1/suites/s/runs", `{"triggered_by":"` + strings.Repeat("x", 201) + `"}`, 400, "invalid", "triggered_by", "200"},
		{"bad label", "POST", "/v1/suites/s/runs", `{"labels":{"":"x"}}`, 400, "invalid", "labels", ""},
		{"list bad status", "GET", "/v1/runs?status=done", ``, 400, "invalid", "status", "done"},
		{"list bad limit", "GET", "/v1/runs?limit=-1", ``, 400, "invalid", "limit", ""},
		{"get unknown", "GET", "/v1/runs/run-ghost", ``, 404, "not_found", "", "run-ghost"},
		{"results unknown", "GET", "/v1/runs/run-ghost/results", ``, 404, "not_found", "", "run-ghost"},
		{"results bad format", "GET", "/v1/runs/" + r1.ID + "/results?format=csv", ``, 400, "invalid", "format", "csv"},
		{"compare without base", "GET", "/v1/runs/" + r1.ID + "/compare", ``, 400, "invalid", "base", "required"},
		{"compare unknown base", "GET", "/v1/runs/" + r1.ID + "/compare?base=run-ghost", ``, 404, "not_found", "", "base run run-ghost"},
		{"compare unknown head", "GET", "/v1/runs/run-ghost/compare?base=" + r1.ID, ``, 404, "not_found", "", "run-ghost"},
		{"cancel unknown", "POST", "/v1/runs/run-ghost/cancel", ``, 404, "not_found", "", "run-ghost"},
		{"events unknown", "GET", "/v1/runs/run-ghost/events", ``, 404, "not_found", "", "run-ghost"},
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

	// Temporal down: 503, and no run is left behind.
	h.expectRunStarts(1, errors.New("connection refused"))
	h.do("POST", "/v1/suites/s/runs", nil).expectError(t, 503, "unavailable", "", "connection refused")
	var l wire.Items[wire.Run]
	h.do("GET", "/v1/runs", nil).expect(t, 200).decode(t, &l)
	if len(l.Items) != 3 || l.Items[0].ID != r3.ID || l.Items[2].ID != r1.ID {
		t.Fatalf("runs = %+v", l.Items)
	}
	h.do("GET", "/v1/runs?suite_id=s&status=pending&limit=2", nil).expect(t, 200).decode(t, reset(&l))
	if len(l.Items) != 2 {
		t.Fatalf("runs with filters = %+v", l.Items)
	}
	h.do("GET", "/v1/runs?suite_id=other", nil).expect(t, 200).decode(t, reset(&l))
	if len(l.Items) != 0 {
		t.Fatalf("runs of another suite = %+v", l.Items)
	}

	// Progress follows the results.
	h.finish(t, r1.ID, 0, eval.VerdictPass, "", 100, ptr(1.0))
	h.finish(t, r1.ID, 1, eval.VerdictFail, "exit code 1, want 0", 300, ptr(0.5))
	if err := h.store.StartCase(ctx, r1.ID, 2, time.Now()); err != nil {
		t.Fatal(err)
	}
	var v wire.RunView
	h.do("GET", "/v1/runs/"+r1.ID, nil).expect(t, 200).decode(t, &v)
	if p := v.Progress; p.Total != 4 || p.Pass != 1 || p.Fail != 1 || p.Running != 1 || p.Pending != 1 || p.PassRate != 0.5 ||
		p.MeanScore == nil || *p.MeanScore != 0.75 {
		t.Fatalf("progress = %+v", v.Progress)
	}

	// Results as JSON (attempts included), JSONL and JUnit, by ?format=
	// or Accept.
	var res wire.Items[wire.CaseResult]
	h.do("GET", "/v1/runs/"+r1.ID+"/results", nil).expect(t, 200).decode(t, &res)
	if len(res.Items) != 4 || res.Items[1].CaseID != "c1" || res.Items[1].Verdict != "fail" || res.Items[1].Reason != "exit code 1, want 0" ||
		!strings.Contains(string(res.Items[0].Attempts), `"workspace_id":"ws-1"`) || res.Items[3].Status != wire.CasePending {
		t.Fatalf("results = %+v", res.Items)
	}
	for _, req := range []struct{ path, accept string }{{"?format=jsonl", ""}, {"", "application/x-ndjson"}} {
		r := h.do("GET", "/v1/runs/"+r1.ID+"/results"+req.path, nil, "Accept", req.accept).expect(t, 200)
		lines := strings.Split(strings.TrimRight(string(r.body), "\n"), "\n")
		if r.header.Get("Content-Type") != "application/x-ndjson" || len(lines) != 4 {
			t.Fatalf("results as JSONL (%+v): %q", req, r.body)
		}
		var cr wire.CaseResult
		if err := json.Unmarshal([]byte(lines[0]), &cr); err != nil || cr.CaseID != "c0" || cr.Verdict != "pass" {
			t.Fatalf("JSONL line %q: %+v %v", lines[0], cr, err)
		}
	}
	for _, req := range []struct{ path, accept string }{{"?format=junit", ""}, {"", "application/xml"}} {
		r := h.do("GET", "/v1/runs/"+r1.ID+"/results"+req.path, nil, "Accept", req.accept).expect(t, 200)
		var doc struct {
			XMLName xml.Name
			Cases   []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
			Suites []struct {
				Cases []struct {
					Name    string    `xml:"name,attr"`
					Failure *struct{} `xml:"failure"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if !strings.HasPrefix(r.header.Get("Content-Type"), "application/xml") || xml.Unmarshal(r.body, &doc) != nil {
			t.Fatalf("results as JUnit (%+v): %s %q", req, r.header.Get("Content-Type"), r.body)
		}
		cases := doc.Cases
		if len(doc.Suites) == 1 {
			cases = doc.Suites[0].Cases
		}
		if len(cases) != 4 || cases[1].Name != "c1" || cases[1].Failure == nil || cases[0].Failure != nil {
			t.Fatalf("JUnit %s: %q", doc.XMLName.Local, r.body)
		}
	}

	// Compare: c1 failed in r1 and passes in r2.
	h.finish(t, r2.ID, 0, eval.VerdictPass, "", 80, ptr(0.9))
	h.finish(t, r2.ID, 1, eval.VerdictPass, "", 90, nil)
	var cmp eval.Comparison
	h.do("GET", "/v1/runs/"+r2.ID+"/compare?base="+r1.ID, nil).expect(t, 200).decode(t, &cmp)
	if cmp.Base != r1.ID || cmp.Head != r2.ID || len(cmp.Fixes) != 1 || cmp.Fixes[0].Case != "c1" || len(cmp.Regressions) != 0 ||
		strings.Join(cmp.Missing, ",") != "c0,c2" || len(cmp.ScoreChanges) != 1 || cmp.ScoreChanges[0].Case != "c1" {
		t.Fatalf("comparison = %+v", cmp)
	}
	h.do("GET", "/v1/runs/"+r1.ID+"/compare?base="+r2.ID, nil).expect(t, 200).decode(t, reset(&cmp))
	if len(cmp.Regressions) != 1 || cmp.Regressions[0].Case != "c1" || cmp.Regressions[0].Reason != "exit code 1, want 0" ||
		strings.Join(cmp.New, ",") != "c0,c2" {
		t.Fatalf("reverse comparison = %+v", cmp)
	}

	// Cancel: 202 for a live run, 409 for one that ended, 503 when
	// Temporal cannot be reached.
	h.temporal.On("CancelWorkflow", mock.Anything, r3.ID, "").Return(nil).Once()
	h.do("POST", "/v1/runs/"+r3.ID+"/cancel", nil).expect(t, 202).decode(t, &v)
	if v.ID != r3.ID {
		t.Fatalf("canceled run = %+v", v)
	}
	if err := h.store.SetRunStatus(ctx, r2.ID, wire.RunSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	h.do("POST", "/v1/runs/"+r2.ID+"/cancel", nil).expectError(t, 409, "failed_precondition", "", "succeeded")
	h.temporal.On("CancelWorkflow", mock.Anything, r1.ID, "").Return(errors.New("connection refused")).Once()
	h.do("POST", "/v1/runs/"+r1.ID+"/cancel", nil).expectError(t, 503, "unavailable", "", "connection refused")

	// Runs outlive their suite.
	h.do("DELETE", "/v1/suites/s", nil).expect(t, 204)
	h.do("GET", "/v1/runs/"+r1.ID, nil).expect(t, 200)
	h.do("POST", "/v1/suites/s/runs", nil).expectError(t, 404, "not_found", "", "")
}

func TestRunEvents(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.srv.heartbeat = 50 * time.Millisecond
	// No poll: every change below must wake the stream (Store.WaitRun).
	h.srv.eventPoll = time.Hour
	h.do("POST", "/v1/suites", suiteJSON("s", 3, "")).expect(t, 201)
	h.expectRunStarts(1, nil)
	run := h.startRun(t, "s", nil)

	res, _ := h.follow(t, "/v1/runs/"+run.ID+"/events")
	ch := sseReader(t, res)
	progress := func() wire.Progress {
		t.Helper()
		for {
			m := next(t, ch)
			if m.event == "comment" {
				continue
			}
			if m.event != "progress" {
				t.Fatalf("event %+v, want progress", m)
			}
			var p wire.Progress
			if err := json.Unmarshal([]byte(m.data), &p); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	if p := progress(); p.Total != 3 || p.Pending != 3 {
		t.Fatalf("first progress = %+v", p)
	}
	// Idle: heartbeats only.
	if m := next(t, ch); m.event != "comment" {
		t.Fatalf("idle stream sent %+v, want a heartbeat", m)
	}
	if err := h.store.SetRunStatus(ctx, run.ID, wire.RunRunning, ""); err != nil {
		t.Fatal(err)
	}
	h.finish(t, run.ID, 0, eval.VerdictPass, "", 10, nil)
	// Woken by each write, the stream may show the case running first.
	p := progress()
	for p.Running == 1 && p.Pass == 0 {
		p = progress()
	}
	if p.Pass != 1 || p.Pending != 2 {
		t.Fatalf("progress after one case = %+v", p)
	}
	h.finish(t, run.ID, 1, eval.VerdictPass, "", 10, nil)
	h.finish(t, run.ID, 2, eval.VerdictError, "workspace lost", 10, nil)
	if err := h.store.SetRunStatus(ctx, run.ID, wire.RunSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	// The last progress, then finished with the run, then the end.
	var last wire.Progress
	for {
		m := next(t, ch)
		if m.event == "comment" {
			continue
		}
		if m.event == "progress" {
			_ = json.Unmarshal([]byte(m.data), &last)
			continue
		}
		if m.event != "finished" {
			t.Fatalf("event %+v, want finished", m)
		}
		var v wire.RunView
		if err := json.Unmarshal([]byte(m.data), &v); err != nil {
			t.Fatal(err)
		}
		if v.ID != run.ID || v.Status != wire.RunSucceeded || v.Progress.Pass != 2 || v.Progress.Error != 1 || last != v.Progress {
			t.Fatalf("finished = %+v (last progress %+v)", v, last)
		}
		break
	}
	select {
	case m, ok := <-ch:
		if ok {
			t.Fatalf("stream goes on after finished: %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream did not end after finished")
	}

	// A run that has ended streams its progress and finished at once.
	res, _ = h.follow(t, "/v1/runs/"+run.ID+"/events")
	ch = sseReader(t, res)
	if m := next(t, ch); m.event != "progress" {
		t.Fatalf("first event %+v", m)
	}
	if m := next(t, ch); m.event != "finished" {
		t.Fatalf("second event %+v", m)
	}
}
