package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/starter"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// withSchedules gives the harness's Temporal mock an in-memory schedule
// client.
func (h *harness) withSchedules() *fakeSchedules {
	fs := newFakeSchedules()
	h.temporal.On("ScheduleClient").Return(fs).Maybe()
	return fs
}

// suiteJSON is a suite document on the default template with n cases
// c0..c(n-1) and extra top-level fields (JSON members, without braces).
func suiteJSON(id string, n int, extra string) string {
	var cases []string
	for i := range n {
		cases = append(cases, fmt.Sprintf(`{"id":"c%d","command":"echo %d","labels":{"level":"l%d"}}`, i, i, i%2))
	}
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"id":%q,"template_id":"default","cases":[%s]%s}`, id, strings.Join(cases, ","), extra)
}

// suiteJSONL is the same suite as JSONL.
func suiteJSONL(id string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%q,"template_id":"default"}`+"\n", id)
	for i := range n {
		fmt.Fprintf(&b, `{"id":"c%d","command":["echo","%d"]}`+"\n", i, i)
	}
	return b.String()
}

// reset zeroes *v and returns v, so a decode does not keep fields of the
// previous answer that this one leaves out.
func reset[T any](v *T) *T {
	var zero T
	*v = zero
	return v
}

// noSuite fails the test if the store has the suite id.
func (h *harness) noSuite(t *testing.T, id string) {
	t.Helper()
	if _, err := h.store.GetSuite(context.Background(), id); !errs.Is(err, errs.NotFound) {
		t.Fatalf("suite %s is stored after a failed request (err %v)", id, err)
	}
	if cs, err := h.store.ListSuiteCases(context.Background(), id); err == nil && len(cs) > 0 {
		t.Fatalf("suite %s has %d cases stored after a failed request", id, len(cs))
	}
}

func TestSuiteCRUD(t *testing.T) {
	h := newHarness(t)
	h.withSchedules()

	var v wire.SuiteView
	r := h.do("POST", "/v1/suites", suiteJSON("smoke", 3, `"description":"three cases","concurrency":2`)).expect(t, 201)
	r.decode(t, reset(&v))
	if v.ID != "smoke" || v.TemplateID != "default" || v.CaseCount != 3 || v.Description != "three cases" || v.ScheduleStatus != nil {
		t.Fatalf("created suite = %+v", v)
	}
	if loc := r.header.Get("Location"); loc != "/v1/suites/smoke" {
		t.Fatalf("Location = %q", loc)
	}
	var spec map[string]any
	if err := json.Unmarshal(v.Spec, &spec); err != nil || spec["cases"] != nil || spec["concurrency"] != float64(2) {
		t.Fatalf("stored spec %s (err %v): want the document without its cases", v.Spec, err)
	}

	h.do("GET", "/v1/suites/smoke", nil).expect(t, 200).decode(t, reset(&v))
	if v.CaseCount != 3 || v.ScheduleStatus != nil || v.ScheduleError != "" {
		t.Fatalf("get suite = %+v", v)
	}

	// Cases come back in order as the documents they were given as, as
	// JSON or JSONL (by ?format= or Accept).
	var cases wire.Items[eval.Case]
	h.do("GET", "/v1/suites/smoke/cases", nil).expect(t, 200).decode(t, &cases)
	if len(cases.Items) != 3 || cases.Items[2].ID != "c2" || cases.Items[2].Command.Script != "echo 2" || cases.Items[1].Labels["level"] != "l1" {
		t.Fatalf("cases = %+v", cases.Items)
	}
	for _, hdr := range [][]string{nil, {"Accept", "application/x-ndjson"}} {
		path := "/v1/suites/smoke/cases"
		if hdr == nil {
			path += "?format=jsonl"
		}
		r = h.do("GET", path, nil, hdr...).expect(t, 200)
		lines := strings.Split(strings.TrimRight(string(r.body), "\n"), "\n")
		if ct := r.header.Get("Content-Type"); ct != "application/x-ndjson" || len(lines) != 3 || !strings.HasPrefix(lines[0], `{"id":"c0"`) {
			t.Fatalf("cases as JSONL (%v): %s %q", hdr, ct, r.body)
		}
		// The lines are what a JSONL create reads back.
		back, err := eval.ReadCasesJSONL(strings.NewReader(string(r.body)), 0)
		if err != nil || len(back) != 3 {
			t.Fatalf("read back cases: %v", err)
		}
	}
	h.do("GET", "/v1/suites/smoke/cases?format=xml", nil).expectError(t, 400, "invalid", "format", "xml")
	h.do("GET", "/v1/suites/ghost/cases", nil).expectError(t, 404, "not_found", "", "ghost")

	// A JSONL body: the spec line, then one case a line.
	r = h.do("POST", "/v1/suites", suiteJSONL("big", 1000), "Content-Type", "application/x-ndjson").expect(t, 201)
	r.decode(t, reset(&v))
	if v.ID != "big" || v.CaseCount != 1000 {
		t.Fatalf("JSONL suite = %+v", v)
	}

	var l wire.Items[wire.Suite]
	h.do("GET", "/v1/suites", nil).expect(t, 200).decode(t, &l)
	if len(l.Items) != 2 || l.Items[0].ID != "big" || l.Items[1].ID != "smoke" || l.Items[1].CaseCount != 3 {
		t.Fatalf("suites = %+v", l.Items)
	}

	// PUT replaces the spec and every case.
	h.do("PUT", "/v1/suites/smoke", suiteJSON("", 2, `"pool_id":""`)).expect(t, 200).decode(t, reset(&v))
	if v.CaseCount != 2 {
		t.Fatalf("updated suite = %+v", v)
	}
	h.do("GET", "/v1/suites/smoke/cases", nil).expect(t, 200).decode(t, &cases)
	if len(cases.Items) != 2 {
		t.Fatalf("cases after update = %+v", cases.Items)
	}
	h.do("PUT", "/v1/suites/smoke", suiteJSON("other", 2, "")).expectError(t, 400, "invalid", "spec.id", "does not match")
	h.do("PUT", "/v1/suites/ghost", suiteJSON("", 2, "")).expectError(t, 404, "not_found", "", "ghost")
	h.do("PUT", "/v1/suites/smoke", suiteJSON("", 0, "")).expectError(t, 400, "invalid", "spec.cases", "")

	// DELETE removes the suite and its cases; runs would stay.
	h.do("DELETE", "/v1/suites/smoke", nil).expect(t, 204)
	h.do("GET", "/v1/suites/smoke", nil).expectError(t, 404, "not_found", "", "smoke")
	h.noSuite(t, "smoke")
	h.do("DELETE", "/v1/suites/smoke", nil).expectError(t, 404, "not_found", "", "smoke")
}

func TestSuiteBadInput(t *testing.T) {
	h := newHarness(t)
	h.withSchedules()
	h.pool("warm", 1)
	h.do("POST", "/v1/suites", suiteJSON("taken", 1, "")).expect(t, 201)

	file := func(path string) string {
		return fmt.Sprintf(`{"id":"s","template_id":"default","cases":[{"id":"a","command":"true","files":{%q:"x"}}]}`, path)
	}
	tests := []struct {
		name, body, ctype string
		status            int
		code, field, msg  string
	}{
		{"duplicate case ids", `{"id":"s","template_id":"default","cases":[{"id":"a","command":"true"},{"id":"a","command":"true"}]}`, "",
			400, "invalid", "spec.cases[1].id", "duplicate"},
		{"no cases", `{"id":"s","template_id":"default"}`, "", 400, "invalid", "spec.cases", "at least one"},
		{"unknown template", `{"id":"s","template_id":"nope","cases":[{"id":"a","command":"true"}]}`, "", 404, "not_found", "spec.template_id", "nope"},
		{"unknown pool", `{"id":"s","pool_id":"nope","cases":[{"id":"a","command":"true"}]}`, "", 404, "not_found", "spec.pool_id", "nope"},
		{"both template and pool", `{"id":"s","template_id":"default","pool_id":"warm","cases":[{"id":"a","command":"true"}]}`, "",
			400, "invalid", "spec.template_id", "not both"},
		{"neither template nor pool", `{"id":"s","cases":[{"id":"a","command":"true"}]}`, "", 400, "invalid", "spec.template_id", "required"},
		{"path leaving the workspace", file("../etc/passwd"), "", 400, "invalid", "spec.cases[0].files[../etc/passwd]", "leaves the workspace"},
		{"absolute path", file("/etc/passwd"), "", 400, "invalid", "spec.cases[0].files[/etc/passwd]", "relative"},
		{"bad cron", suiteJSON("s", 1, `"schedule":{"cron":"every night"}`), "", 400, "invalid", "spec.schedule.cron", "cron"},
		{"cron and interval", suiteJSON("s", 1, `"schedule":{"cron":"@daily","interval":"1h"}`), "", 400, "invalid", "spec.schedule.cron", "not both"},
		{"bad time zone", suiteJSON("s", 1, `"schedule":{"cron":"@daily","time_zone":"Mars/Base"}`), "", 400, "invalid", "spec.schedule.time_zone", "Mars"},
		{"concurrency too high", suiteJSON("s", 1, `"concurrency":65`), "", 400, "invalid", "spec.concurrency", "out of range"},
		{"concurrency negative", suiteJSON("s", 1, `"concurrency":-1`), "", 400, "invalid", "spec.concurrency", "out of range"},
		{"unknown field", suiteJSON("s", 1, `"image":"python"`), "", 400, "invalid", "spec.image", "unknown field"},
		{"bad id", suiteJSON("Bad!", 1, ""), "", 400, "invalid", "spec.id", "not a valid id"},
		{"duplicate suite", suiteJSON("taken", 1, ""), "", 409, "conflict", "", "taken"},
		{"malformed JSON", `{"id":`, "", 400, "invalid", "", "malformed"},
		{"JSONL bad case line", `{"id":"s","template_id":"default"}` + "\n" + `{"id":"a","command":"true"}` + "\n" + `{"id":"b",` + "\n",
			"application/x-ndjson", 400, "invalid", "spec.cases", "line 3"},
		{"JSONL unknown case field", `{"id":"s","template_id":"default"}` + "\n" + `{"id":"a","command":"true","cmd":"x"}` + "\n",
			"application/x-ndjson", 400, "invalid", "spec.cases", "line 2"},
		{"JSONL empty", "", "application/x-ndjson", 400, "invalid", "spec", "empty"},
		{"JSONL duplicate ids", `{"id":"s","template_id":"default"}` + "\n" + `{"id":"a","command":"true"}` + "\n" + `{"id":"a","command":"true"}` + "\n",
			"application/x-ndjson", 400, "invalid", "spec.cases[1].id", "duplicate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.ctype != "" {
				hdr = []string{"Content-Type", tt.ctype}
			}
			h.do("POST", "/v1/suites", tt.body, hdr...).expectError(t, tt.status, tt.code, tt.field, tt.msg)
			h.noSuite(t, "s")
		})
	}

	// Oversized bodies are 413, JSON or JSONL, with or without a
	// Content-Length.
	h.srv.maxSuiteBytes = 4 << 10
	big := suiteJSONL("s", 200)
	h.do("POST", "/v1/suites", big, "Content-Type", "application/x-ndjson").expectError(t, 413, "too_large", "", "")
	h.do("POST", "/v1/suites", strings.NewReader(big), "Content-Type", "application/x-ndjson").expectError(t, 413, "too_large", "", "")
	h.do("POST", "/v1/suites", suiteJSON("s", 200, "")).expectError(t, 413, "too_large", "", "")
	h.do("POST", "/v1/suites", strings.NewReader(suiteJSON("s", 200, ""))).expectError(t, 413, "too_large", "", "")
	h.noSuite(t, "s")
	// The limit is the suite limit, not the 1 MiB of other JSON bodies.
	h.srv.maxSuiteBytes = 4 << 20
	h.do("POST", "/v1/suites", suiteJSONL("s", 30000), "Content-Type", "application/x-ndjson").expect(t, 201)
}

func TestSuiteSchedule(t *testing.T) {
	h := newHarness(t)
	fs := h.withSchedules()
	id := starter.ScheduleID("nightly")

	// Create makes the schedule: cron, time zone, overlap, and the action
	// that starts a run of the suite.
	var v wire.SuiteView
	h.do("POST", "/v1/suites", suiteJSON("nightly", 2, `"schedule":{"cron":"0 3 * * *","time_zone":"Europe/Berlin","overlap":"buffer_one"}`)).
		expect(t, 201).decode(t, reset(&v))
	sch := fs.get(id)
	if sch == nil {
		t.Fatal("no schedule after create")
	}
	act := sch.opts.Action.(*client.ScheduleWorkflowAction)
	if sch.opts.Spec.CronExpressions[0] != "0 3 * * *" || sch.opts.Spec.TimeZoneName != "Europe/Berlin" ||
		sch.opts.Overlap != enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE || sch.paused ||
		act.Workflow != workflows.RunWorkflowName || act.ID != "run-nightly" || act.TaskQueue != workflows.TaskQueue ||
		act.Args[0] != (workflows.RunInput{SuiteID: "nightly", TriggeredBy: "schedule suite-nightly"}) {
		t.Fatalf("schedule = %+v, action %+v", sch.opts, act)
	}
	if v.ScheduleStatus == nil || v.ScheduleStatus.ID != id || v.ScheduleStatus.Paused || len(v.ScheduleStatus.NextRunTimes) != 1 {
		t.Fatalf("created suite's schedule status = %+v", v.ScheduleStatus)
	}

	// Pause, resume, trigger.
	h.do("POST", "/v1/suites/nightly/schedule/pause", nil).expect(t, 200).decode(t, reset(&v))
	if !v.ScheduleStatus.Paused || v.ScheduleStatus.Note != pauseNote || len(v.ScheduleStatus.NextRunTimes) != 0 {
		t.Fatalf("after pause: %+v", v.ScheduleStatus)
	}
	h.do("POST", "/v1/suites/nightly/schedule/resume", nil).expect(t, 200).decode(t, reset(&v))
	if v.ScheduleStatus.Paused {
		t.Fatalf("after resume: %+v", v.ScheduleStatus)
	}
	h.do("POST", "/v1/suites/nightly/schedule/trigger", nil).expect(t, 202).decode(t, reset(&v))
	if v.ScheduleStatus.NumActions != 1 || len(v.ScheduleStatus.RecentRuns) != 1 || fs.get(id).triggers != 1 {
		t.Fatalf("after trigger: %+v", v.ScheduleStatus)
	}

	// PUT updates it in place (an interval, paused by the document)...
	h.do("PUT", "/v1/suites/nightly", suiteJSON("", 2, `"schedule":{"interval":"6h","paused":true}`)).expect(t, 200).decode(t, reset(&v))
	sch = fs.get(id)
	if len(sch.opts.Spec.Intervals) != 1 || sch.opts.Spec.Intervals[0].Every != 6*time.Hour || len(sch.opts.Spec.CronExpressions) != 0 ||
		sch.opts.Overlap != enumspb.SCHEDULE_OVERLAP_POLICY_SKIP || !sch.paused || sch.triggers != 1 || !v.ScheduleStatus.Paused {
		t.Fatalf("updated schedule = %+v paused %v", sch.opts, sch.paused)
	}
	// ...deletes it when the document has none...
	h.do("PUT", "/v1/suites/nightly", suiteJSON("", 2, "")).expect(t, 200).decode(t, reset(&v))
	if fs.get(id) != nil || v.ScheduleStatus != nil {
		t.Fatalf("schedule kept after PUT without one: %+v", v.ScheduleStatus)
	}
	for _, op := range []string{"pause", "resume", "trigger"} {
		h.do("POST", "/v1/suites/nightly/schedule/"+op, nil).expectError(t, 409, "failed_precondition", "", "suite nightly has no schedule")
	}
	h.do("POST", "/v1/suites/ghost/schedule/pause", nil).expectError(t, 404, "not_found", "", "ghost")
	// ...and creates it again when the document has one.
	h.do("PUT", "/v1/suites/nightly", suiteJSON("", 2, `"schedule":{"cron":"@hourly"}`)).expect(t, 200)
	if sch = fs.get(id); sch == nil || sch.opts.Spec.CronExpressions[0] != "@hourly" {
		t.Fatalf("schedule after PUT with one: %+v", sch)
	}

	// GET works while Temporal cannot describe the schedule, and says so.
	fs.setFail(nil, errors.New("connection refused"))
	h.do("GET", "/v1/suites/nightly", nil).expect(t, 200).decode(t, reset(&v))
	if v.ScheduleStatus != nil || !strings.Contains(v.ScheduleError, "connection refused") {
		t.Fatalf("suite with Temporal down = %+v", v)
	}

	// A PUT whose schedule cannot be synced changes nothing.
	h.do("POST", "/v1/suites", suiteJSON("plain", 1, "")).expect(t, 201)
	fs.setFail(errors.New("connection refused"), nil)
	h.do("PUT", "/v1/suites/nightly", suiteJSON("", 1, `"schedule":{"cron":"@daily"}`)).expectError(t, 503, "unavailable", "", "connection refused")
	if su, err := h.store.GetSuite(context.Background(), "nightly"); err != nil || su.CaseCount != 2 {
		t.Fatalf("suite after a failed PUT: %+v, %v", su, err)
	}
	// A DELETE whose schedule cannot be deleted keeps the suite: no
	// schedule is left starting runs of a suite that is gone.
	h.do("DELETE", "/v1/suites/nightly", nil).expectError(t, 503, "unavailable", "", "")
	if _, err := h.store.GetSuite(context.Background(), "nightly"); err != nil {
		t.Fatalf("suite after a failed DELETE: %v", err)
	}
	// A suite without a schedule is deleted without Temporal.
	h.do("DELETE", "/v1/suites/plain", nil).expect(t, 204)
	h.noSuite(t, "plain")
	// A create whose schedule cannot be made leaves nothing behind.
	h.do("POST", "/v1/suites", suiteJSON("later", 1, `"schedule":{"cron":"@daily"}`)).expectError(t, 503, "unavailable", "", "")
	h.noSuite(t, "later")
	if fs.get(starter.ScheduleID("later")) != nil {
		t.Fatal("schedule of a failed create exists")
	}

	// DELETE deletes the schedule with the suite.
	fs.setFail(nil, nil)
	h.do("DELETE", "/v1/suites/nightly", nil).expect(t, 204)
	if fs.get(id) != nil {
		t.Fatal("schedule kept after DELETE")
	}
	h.noSuite(t, "nightly")
}
