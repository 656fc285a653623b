package models

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// TestEvalStore runs the suite, run and case result behaviours of the
// Store on every dialect, each case on a fresh database.
func TestEvalStore(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			for _, tc := range evalCases {
				t.Run(tc.name, func(t *testing.T) {
					tc.run(t, t.Context(), d.open(t))
				})
			}
		})
	}
}

var evalCases = []storeCase{
	{"create suites", testCreateSuites},
	{"update suite", testUpdateSuite},
	{"delete suite", testDeleteSuite},
	{"10000 cases", testManyCases},
	{"create runs", testCreateRuns},
	{"list runs", testListRuns},
	{"case lifecycle", testCaseLifecycle},
	{"finish case race", testFinishCaseRace},
	{"cancel and count cases", testCancelCountCases},
	{"set run status", testSetRunStatus},
	{"set run status race", testSetRunStatusRace},
}

// newSuiteCases returns n cases c00000, c00001, ... labelled by parity.
func newSuiteCases(n int) []wire.SuiteCase {
	cases := make([]wire.SuiteCase, n)
	for i := range cases {
		id := fmt.Sprintf("c%05d", i)
		cases[i] = wire.SuiteCase{
			CaseID: id,
			Labels: map[string]string{"parity": []string{"even", "odd"}[i%2]},
			Spec:   json.RawMessage(fmt.Sprintf(`{"id":%q,"command":{"args":["true"]}}`, id)),
		}
	}
	return cases
}

// newResults returns n pending results of cases c00000, ... at ordinals 0..n-1.
func newResults(n int) []wire.CaseResult {
	rs := make([]wire.CaseResult, n)
	for i := range rs {
		id := fmt.Sprintf("c%05d", i)
		rs[i] = wire.CaseResult{Ordinal: i, CaseID: id, Spec: json.RawMessage(fmt.Sprintf(`{"id":%q}`, id))}
	}
	return rs
}

// countRows counts the rows of model matching where.
func countRows(t *testing.T, s *Store, model any, where string, args ...any) int {
	t.Helper()
	var n int64
	must(t, s.w.Model(model).Where(where, args...).Count(&n).Error)
	return int(n)
}

// caseIDs lists the case ids of cases in order.
func caseIDs(cases []wire.SuiteCase) []string {
	return idsOf(cases, func(c wire.SuiteCase) string { return c.CaseID })
}

// wantCases fails unless suite id stores exactly want, in order, numbered 0..n-1.
func wantCases(t *testing.T, ctx context.Context, s *Store, id string, want []string) {
	t.Helper()
	got, err := s.ListSuiteCases(ctx, id)
	must(t, err)
	if !slices.Equal(caseIDs(got), want) {
		t.Errorf("suite %s cases = %v, want %v", id, caseIDs(got), want)
	}
	for i, c := range got {
		if c.Ordinal != i || c.SuiteID != id {
			t.Errorf("suite %s case %d: ordinal %d suite %q", id, i, c.Ordinal, c.SuiteID)
			break
		}
	}
	if n := countRows(t, s, &wire.SuiteCase{}, "suite_id = ?", id); n != len(want) {
		t.Errorf("suite %s: %d case rows, want %d", id, n, len(want))
	}
}

func testCreateSuites(t *testing.T, ctx context.Context, s *Store) {
	poolFixture(t, ctx, s)
	dup := newSuiteCases(3)
	dup[2].CaseID = dup[0].CaseID
	for _, tc := range []struct {
		name  string
		suite wire.Suite
		cases []wire.SuiteCase
		kind  errs.Kind // 0: success
		field string
		msg   string
	}{
		{name: "on template", suite: wire.Suite{ID: "s-t", TemplateID: "t", Description: "d", Spec: json.RawMessage(`{"concurrency":4}`)}, cases: newSuiteCases(3)},
		{name: "on pool", suite: wire.Suite{ID: "s-p", PoolID: "pool-1"}, cases: newSuiteCases(2)},
		{name: "no cases", suite: wire.Suite{ID: "s-empty", TemplateID: "t"}},
		{name: "no id", suite: wire.Suite{TemplateID: "t"}, cases: newSuiteCases(1), kind: errs.Invalid, field: "id"},
		{name: "bad spec", suite: wire.Suite{ID: "x", TemplateID: "t", Spec: json.RawMessage(`{`)}, kind: errs.Invalid, field: "spec"},
		{name: "unknown template", suite: wire.Suite{ID: "x", TemplateID: "ghost"}, cases: newSuiteCases(1), kind: errs.NotFound, field: "template_id", msg: "suite x: template ghost: not found"},
		{name: "unknown pool", suite: wire.Suite{ID: "x", PoolID: "ghost"}, cases: newSuiteCases(1), kind: errs.NotFound, field: "pool_id", msg: "suite x: pool ghost: not found"},
		{name: "duplicate id", suite: wire.Suite{ID: "s-t", PoolID: "pool-1"}, cases: newSuiteCases(5), kind: errs.Conflict, msg: "suite s-t: already exists"},
		{name: "duplicate case id", suite: wire.Suite{ID: "x", TemplateID: "t"}, cases: dup, kind: errs.Conflict, msg: "case c00000: id given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			su := tc.suite
			err := s.CreateSuite(ctx, &su, tc.cases)
			if tc.kind != 0 {
				wantErr(t, err, tc.kind, tc.msg)
				if got := errs.FieldOf(err); got != tc.field {
					t.Errorf("field of %q = %q, want %q", err, got, tc.field)
				}
				return
			}
			must(t, err)
			got, err := s.GetSuite(ctx, su.ID)
			must(t, err)
			if got.CaseCount != len(tc.cases) || got.TemplateID != tc.suite.TemplateID || got.PoolID != tc.suite.PoolID ||
				got.Description != tc.suite.Description || got.CreatedAt.IsZero() || got.UpdatedAt.IsZero() {
				t.Errorf("GetSuite = %+v, want %d cases, template %q, pool %q and timestamps", got, len(tc.cases), tc.suite.TemplateID, tc.suite.PoolID)
			}
			if len(tc.suite.Spec) > 0 {
				jsonEq(t, got.Spec, string(tc.suite.Spec))
			}
			wantCases(t, ctx, s, su.ID, caseIDs(tc.cases))
		})
	}

	// Nothing of the failed creates is stored: no suite x, no stray cases,
	// and s-t keeps its own three.
	if _, err := s.GetSuite(ctx, "x"); !errs.Is(err, errs.NotFound) {
		t.Errorf("GetSuite(x) after failed creates: %v, want NotFound", err)
	}
	if n := countRows(t, s, &wire.SuiteCase{}, "suite_id IN ?", []string{"x", ""}); n != 0 {
		t.Errorf("%d case rows of failed creates stored", n)
	}
	wantCases(t, ctx, s, "s-t", []string{"c00000", "c00001", "c00002"})
	if got, err := s.GetSuite(ctx, "s-t"); err != nil || got.TemplateID != "t" || got.CaseCount != 3 {
		t.Errorf("s-t after duplicate create = %+v, %v; want it unchanged", got, err)
	}

	cases, err := s.ListSuiteCases(ctx, "s-t")
	must(t, err)
	if cases[1].Labels["parity"] != "odd" {
		t.Errorf("case 1 labels = %v, want parity odd", cases[1].Labels)
	}
	jsonEq(t, cases[2].Spec, `{"id":"c00002","command":{"args":["true"]}}`)

	sus, err := s.ListSuites(ctx, "")
	must(t, err)
	if got := idsOf(sus, func(s wire.Suite) string { return s.ID }); !slices.Equal(got, []string{"s-empty", "s-p", "s-t"}) {
		t.Errorf("ListSuites = %v", got)
	}
	if got, err := s.ListSuiteCases(ctx, "s-empty"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("ListSuiteCases(s-empty) = %v, %v; want empty, nil", got, err)
	}
	_, err = s.ListSuiteCases(ctx, "ghost")
	wantErr(t, err, errs.NotFound, "suite ghost: not found")
	_, err = s.GetSuite(ctx, "ghost")
	wantErr(t, err, errs.NotFound, "suite ghost: not found")
}

func testUpdateSuite(t *testing.T, ctx context.Context, s *Store) {
	poolFixture(t, ctx, s)
	su := &wire.Suite{ID: "s", TemplateID: "t", Description: "first"}
	must(t, s.CreateSuite(ctx, su, newSuiteCases(4)))
	created := su.CreatedAt

	dup := newSuiteCases(2)
	dup[1].CaseID = dup[0].CaseID
	for _, tc := range []struct {
		name  string
		suite wire.Suite
		cases []wire.SuiteCase
		kind  errs.Kind
		field string
		msg   string
	}{
		{name: "unknown suite", suite: wire.Suite{ID: "ghost", TemplateID: "t"}, kind: errs.NotFound, msg: "suite ghost: not found"},
		{name: "unknown pool", suite: wire.Suite{ID: "s", PoolID: "ghost"}, cases: newSuiteCases(1), kind: errs.NotFound, field: "pool_id", msg: "pool ghost: not found"},
		{name: "unknown template", suite: wire.Suite{ID: "s", TemplateID: "ghost"}, cases: newSuiteCases(1), kind: errs.NotFound, field: "template_id"},
		{name: "duplicate case id", suite: wire.Suite{ID: "s", PoolID: "pool-1"}, cases: dup, kind: errs.Conflict, msg: "case c00000: id given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.suite
			err := s.UpdateSuite(ctx, &u, tc.cases)
			wantErr(t, err, tc.kind, tc.msg)
			if got := errs.FieldOf(err); got != tc.field {
				t.Errorf("field of %q = %q, want %q", err, got, tc.field)
			}
			// A failed update changes nothing.
			got, err := s.GetSuite(ctx, "s")
			must(t, err)
			if got.Description != "first" || got.TemplateID != "t" || got.PoolID != "" || got.CaseCount != 4 {
				t.Errorf("suite after failed update = %+v", got)
			}
			wantCases(t, ctx, s, "s", []string{"c00000", "c00001", "c00002", "c00003"})
		})
	}

	cases := newSuiteCases(3)
	cases[0], cases[2] = cases[2], cases[0]
	cases = append(cases, wire.SuiteCase{CaseID: "new", Spec: json.RawMessage(`{}`)})
	u := &wire.Suite{ID: "s", PoolID: "pool-1", Description: "second", Spec: json.RawMessage(`{"concurrency":2}`)}
	must(t, s.UpdateSuite(ctx, u, cases))
	if u.Description != "second" || u.CaseCount != 4 || !u.CreatedAt.Equal(created) || !u.UpdatedAt.After(created) {
		t.Errorf("UpdateSuite left %+v; want the stored row, created %v", u, created)
	}
	got, err := s.GetSuite(ctx, "s")
	must(t, err)
	if got.TemplateID != "" || got.PoolID != "pool-1" || got.CaseCount != 4 {
		t.Errorf("GetSuite after update = %+v", got)
	}
	jsonEq(t, got.Spec, `{"concurrency":2}`)
	wantCases(t, ctx, s, "s", []string{"c00002", "c00001", "c00000", "new"})
}

func testDeleteSuite(t *testing.T, ctx context.Context, s *Store) {
	poolFixture(t, ctx, s)
	must(t, s.CreateSuite(ctx, &wire.Suite{ID: "s", TemplateID: "t"}, newSuiteCases(5)))
	must(t, s.CreateSuite(ctx, &wire.Suite{ID: "other", TemplateID: "t"}, newSuiteCases(2)))
	must(t, s.CreateRun(ctx, &wire.Run{ID: "r", SuiteID: "s"}, newResults(5)))

	must(t, s.DeleteSuite(ctx, "s"))
	if _, err := s.GetSuite(ctx, "s"); !errs.Is(err, errs.NotFound) {
		t.Errorf("GetSuite after delete: %v, want NotFound", err)
	}
	if _, err := s.ListSuiteCases(ctx, "s"); !errs.Is(err, errs.NotFound) {
		t.Errorf("ListSuiteCases after delete: %v, want NotFound", err)
	}
	if n := countRows(t, s, &wire.SuiteCase{}, "suite_id = ?", "s"); n != 0 {
		t.Errorf("%d cases of the deleted suite left", n)
	}
	wantCases(t, ctx, s, "other", []string{"c00000", "c00001"})
	// The run and its results stay.
	if r, err := s.GetRun(ctx, "r"); err != nil || r.Total != 5 {
		t.Errorf("GetRun after suite delete = %+v, %v", r, err)
	}
	if rs, err := s.ListCaseResults(ctx, "r", false); err != nil || len(rs) != 5 {
		t.Errorf("ListCaseResults after suite delete: %d, %v", len(rs), err)
	}
	wantErr(t, s.DeleteSuite(ctx, "s"), errs.NotFound, "suite s: not found")
}

// testManyCases stores a suite of 10,000 cases and a run of them, and
// checks both go in batches: a row-at-a-time insert would take 10,000
// statements.
func testManyCases(t *testing.T, ctx context.Context, s *Store) {
	const n = 10000
	poolFixture(t, ctx, s)
	inserts := map[string]int{}
	var mu sync.Mutex
	must(t, s.w.Callback().Create().After("gorm:create").Register("test:count_inserts", func(db *gorm.DB) {
		mu.Lock()
		defer mu.Unlock()
		inserts[db.Statement.Table]++
	}))
	wantInserts := map[string]int{}
	for table, model := range map[string]any{"suite_cases": &wire.SuiteCase{}, "case_results": &wire.CaseResult{}} {
		rows := batchRows(s.w, s.Dialect(), model)
		if rows < 50 {
			t.Errorf("%s: %d rows per INSERT; want batches of at least 50", table, rows)
		}
		wantInserts[table] = (n + rows - 1) / rows
	}

	start := time.Now()
	must(t, s.CreateSuite(ctx, &wire.Suite{ID: "big", TemplateID: "t"}, newSuiteCases(n)))
	suiteTook := time.Since(start)

	start = time.Now()
	must(t, s.CreateRun(ctx, &wire.Run{ID: "big-1", SuiteID: "big"}, newResults(n)))
	runTook := time.Since(start)
	t.Logf("%s: 10,000 suite cases in %v, 10,000 case results in %v", s.Dialect(), suiteTook, runTook)

	mu.Lock()
	for table, want := range wantInserts {
		if inserts[table] != want {
			t.Errorf("%d INSERTs into %s, want %d (inserts: %v)", inserts[table], table, want, inserts)
		}
	}
	mu.Unlock()
	// Far above what batches take even on a busy machine.
	for what, took := range map[string]time.Duration{"suite": suiteTook, "run": runTook} {
		if took > time.Minute {
			t.Errorf("creating the %s of 10,000 cases took %v", what, took)
		}
	}

	su, err := s.GetSuite(ctx, "big")
	must(t, err)
	if su.CaseCount != n {
		t.Errorf("CaseCount = %d, want %d", su.CaseCount, n)
	}
	cases, err := s.ListSuiteCases(ctx, "big")
	must(t, err)
	if len(cases) != n {
		t.Fatalf("ListSuiteCases: %d cases, want %d", len(cases), n)
	}
	for i, c := range cases {
		if c.Ordinal != i || c.CaseID != fmt.Sprintf("c%05d", i) {
			t.Fatalf("case %d = ordinal %d id %s", i, c.Ordinal, c.CaseID)
		}
	}

	counts, err := s.CountCases(ctx, "big-1")
	must(t, err)
	if counts != (RunCounts{Total: n, Pending: n}) {
		t.Errorf("CountCases = %+v, want %d pending", counts, n)
	}
	rs, err := s.ListCaseResults(ctx, "big-1", false)
	must(t, err)
	if len(rs) != n || rs[n-1].CaseID != fmt.Sprintf("c%05d", n-1) {
		t.Errorf("ListCaseResults: %d results", len(rs))
	}
}

func testCreateRuns(t *testing.T, ctx context.Context, s *Store) {
	poolFixture(t, ctx, s)
	must(t, s.CreateSuite(ctx, &wire.Suite{ID: "s", TemplateID: "t"}, newSuiteCases(3)))

	results := newResults(3)
	results[1].Labels = map[string]string{"parity": "odd"}
	results[2].Status = wire.CaseDone // ignored: a new run's cases are pending
	r := &wire.Run{ID: "r1", SuiteID: "s", Trigger: wire.TriggerUser, TriggeredBy: "alice",
		Spec: json.RawMessage(`{"concurrency":2}`), Selection: json.RawMessage(`{"labels":{"parity":"odd"}}`)}
	must(t, s.CreateRun(ctx, r, results))
	if r.Total != 3 || r.Status != wire.RunPending || r.WorkflowID != "r1" {
		t.Errorf("CreateRun left %+v; want total 3, pending, workflow r1", r)
	}
	got, err := s.GetRun(ctx, "r1")
	must(t, err)
	if got.Total != 3 || got.Status != wire.RunPending || got.Trigger != wire.TriggerUser || got.TriggeredBy != "alice" ||
		got.CreatedAt.IsZero() || got.StartedAt != nil || got.EndedAt != nil {
		t.Errorf("GetRun = %+v", got)
	}
	jsonEq(t, got.Spec, `{"concurrency":2}`)
	jsonEq(t, got.Selection, `{"labels":{"parity":"odd"}}`)

	rs, err := s.ListCaseResults(ctx, "r1", true)
	must(t, err)
	for i, c := range rs {
		if c.RunID != "r1" || c.Ordinal != i || c.Status != wire.CasePending || c.Verdict != "" {
			t.Errorf("result %d = %+v, want pending of r1", i, c)
		}
		jsonEq(t, c.Spec, fmt.Sprintf(`{"id":"c%05d"}`, i))
	}
	if rs[1].Labels["parity"] != "odd" {
		t.Errorf("result 1 labels = %v", rs[1].Labels)
	}
	// Without spec the column is not read at all.
	rs, err = s.ListCaseResults(ctx, "r1", false)
	must(t, err)
	if len(rs) != 3 || rs[0].Spec != nil || rs[0].CaseID != "c00000" || rs[1].Labels["parity"] != "odd" {
		t.Errorf("ListCaseResults(no spec) = %+v", rs)
	}

	dupOrdinal := newResults(3)
	dupOrdinal[2].Ordinal = 0
	for _, tc := range []struct {
		name    string
		run     wire.Run
		results []wire.CaseResult
		kind    errs.Kind
		field   string
		msg     string
	}{
		{name: "duplicate id", run: wire.Run{ID: "r1", SuiteID: "s"}, results: newResults(5), kind: errs.Conflict, msg: "run r1: already exists"},
		{name: "duplicate ordinal", run: wire.Run{ID: "r2", SuiteID: "s"}, results: dupOrdinal, kind: errs.Conflict, msg: "case ordinal 0: given twice"},
		{name: "no id", run: wire.Run{SuiteID: "s"}, kind: errs.Invalid, field: "id"},
		{name: "no suite", run: wire.Run{ID: "r2"}, kind: errs.Invalid, field: "suite_id"},
		{name: "bad status", run: wire.Run{ID: "r2", SuiteID: "s", Status: "bogus"}, kind: errs.Invalid, field: "status"},
		{name: "bad selection", run: wire.Run{ID: "r2", SuiteID: "s", Selection: json.RawMessage(`[`)}, kind: errs.Invalid, field: "selection"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := tc.run
			err := s.CreateRun(ctx, &run, tc.results)
			wantErr(t, err, tc.kind, tc.msg)
			if got := errs.FieldOf(err); got != tc.field {
				t.Errorf("field of %q = %q, want %q", err, got, tc.field)
			}
		})
	}
	// Nothing of the failed creates is stored.
	if _, err := s.GetRun(ctx, "r2"); !errs.Is(err, errs.NotFound) {
		t.Errorf("GetRun(r2) after failed creates: %v, want NotFound", err)
	}
	if n := countRows(t, s, &wire.CaseResult{}, "1 = 1"); n != 3 {
		t.Errorf("%d case results stored, want r1's 3", n)
	}
	if got, err := s.GetRun(ctx, "r1"); err != nil || got.Total != 3 {
		t.Errorf("r1 after duplicate create = %+v, %v", got, err)
	}

	// A run of no cases is a run; an unknown run is NotFound.
	must(t, s.CreateRun(ctx, &wire.Run{ID: "r-empty", SuiteID: "s"}, nil))
	if rs, err := s.ListCaseResults(ctx, "r-empty", false); err != nil || rs == nil || len(rs) != 0 {
		t.Errorf("ListCaseResults(r-empty) = %v, %v; want empty, nil", rs, err)
	}
	_, err = s.ListCaseResults(ctx, "ghost", false)
	wantErr(t, err, errs.NotFound, "run ghost: not found")
	_, err = s.GetRun(ctx, "ghost")
	wantErr(t, err, errs.NotFound, "run ghost: not found")
}

func testListRuns(t *testing.T, ctx context.Context, s *Store) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, r := range []wire.Run{
		{ID: "a1", SuiteID: "a", CreatedAt: base},
		{ID: "a2", SuiteID: "a", CreatedAt: base.Add(time.Minute), Status: wire.RunRunning},
		{ID: "b1", SuiteID: "b", CreatedAt: base.Add(30 * time.Second)},
		{ID: "a3", SuiteID: "a", CreatedAt: base.Add(time.Minute)}, // same time as a2: id breaks the tie
		{ID: "b2", SuiteID: "b", CreatedAt: base.Add(2 * time.Minute), Status: wire.RunRunning},
	} {
		must(t, s.CreateRun(ctx, &r, nil))
	}
	for _, tc := range []struct {
		name string
		f    RunFilter
		want []string
	}{
		{"all", RunFilter{}, []string{"b2", "a3", "a2", "b1", "a1"}},
		{"suite", RunFilter{SuiteID: "a"}, []string{"a3", "a2", "a1"}},
		{"status", RunFilter{Status: wire.RunRunning}, []string{"b2", "a2"}},
		{"suite and status", RunFilter{SuiteID: "a", Status: wire.RunPending}, []string{"a3", "a1"}},
		{"limit", RunFilter{Limit: 2}, []string{"b2", "a3"}},
		{"none", RunFilter{SuiteID: "ghost"}, []string{}},
	} {
		rs, err := s.ListRuns(ctx, tc.f)
		must(t, err)
		if got := idsOf(rs, func(r wire.Run) string { return r.ID }); !slices.Equal(got, tc.want) {
			t.Errorf("%s: ListRuns(%+v) = %v, want %v", tc.name, tc.f, got, tc.want)
		}
	}
	if got, err := s.GetRun(ctx, "a1"); err != nil || !got.CreatedAt.Equal(base) {
		t.Errorf("GetRun(a1) created %v, %v; want %v", got.CreatedAt, err, base)
	}
}

func testCaseLifecycle(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateRun(ctx, &wire.Run{ID: "r", SuiteID: "s"}, newResults(3)))
	t1 := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	t2 := t1.Add(time.Minute)

	must(t, s.StartCase(ctx, "r", 0, t1))
	// A retried start (a second attempt) keeps the first start time.
	must(t, s.StartCase(ctx, "r", 0, t2))
	c, err := s.GetCaseResult(ctx, "r", 0)
	must(t, err)
	if c.Status != wire.CaseRunning || c.StartedAt == nil || !c.StartedAt.Equal(storedTime(t1)) {
		t.Errorf("after StartCase: status %s started %v, want running at %v", c.Status, c.StartedAt, storedTime(t1))
	}

	attempts := `[{"attempt":1,"workspace_id":"ws-1","verdict":"error","reason":"lost"}]`
	must(t, s.SetCaseAttempts(ctx, "r", 0, []byte(attempts)))
	c, err = s.GetCaseResult(ctx, "r", 0)
	must(t, err)
	jsonEq(t, c.Attempts, attempts)

	exit, score := 1, 0.75
	ended := t2.Add(time.Second)
	fin := &wire.CaseResult{
		RunID: "r", Ordinal: 0, Verdict: "fail", Reason: "exit code 1, want 0",
		ExitCode: &exit, DurationMS: 1500, CommandMS: 1200, Stdout: "out", Stderr: "err",
		Score: &score, Metrics: map[string]float64{"acc": 0.5},
		Artifacts: json.RawMessage(`[{"path":"a.txt","size":3}]`),
		Attempts:  json.RawMessage(`[{"attempt":1},{"attempt":2}]`),
		EndedAt:   &ended,
	}
	must(t, s.FinishCase(ctx, fin))
	if fin.Status != wire.CaseDone {
		t.Errorf("FinishCase left status %q", fin.Status)
	}
	c, err = s.GetCaseResult(ctx, "r", 0)
	must(t, err)
	if c.Status != wire.CaseDone || c.Verdict != "fail" || c.Reason != fin.Reason || c.ExitCode == nil || *c.ExitCode != 1 ||
		c.DurationMS != 1500 || c.CommandMS != 1200 || c.Stdout != "out" || c.Stderr != "err" ||
		c.Score == nil || *c.Score != 0.75 || c.Metrics["acc"] != 0.5 || c.EndedAt == nil || !c.EndedAt.Equal(storedTime(ended)) ||
		c.StartedAt == nil || !c.StartedAt.Equal(storedTime(t1)) || c.CaseID != "c00000" {
		t.Errorf("GetCaseResult after finish = %+v", c)
	}
	jsonEq(t, c.Artifacts, `[{"path":"a.txt","size":3}]`)
	jsonEq(t, c.Attempts, `[{"attempt":1},{"attempt":2}]`)
	jsonEq(t, c.Spec, `{"id":"c00000"}`)

	// A case finished without starting (nothing to run) is final too; no
	// exit code, score or metrics stay NULL, and EndedAt defaults to now.
	before := time.Now().Add(-time.Second)
	must(t, s.FinishCase(ctx, &wire.CaseResult{RunID: "r", Ordinal: 1, Verdict: "error", Reason: "workspace lost"}))
	c, err = s.GetCaseResult(ctx, "r", 1)
	must(t, err)
	if c.Verdict != "error" || c.ExitCode != nil || c.Score != nil || c.Metrics != nil || c.Attempts != nil ||
		c.EndedAt == nil || c.EndedAt.Before(before) {
		t.Errorf("case 1 after finish = %+v", c)
	}

	for _, tc := range []struct {
		name string
		err  error
		kind errs.Kind
		msg  string
	}{
		{"finish twice", s.FinishCase(ctx, &wire.CaseResult{RunID: "r", Ordinal: 0, Verdict: "pass"}), errs.Conflict, "run r: case 0: already done"},
		{"start done", s.StartCase(ctx, "r", 0, t2), errs.Conflict, "already done"},
		{"attempts of done", s.SetCaseAttempts(ctx, "r", 1, []byte(`[]`)), errs.Conflict, "already done"},
		{"start unknown", s.StartCase(ctx, "r", 9, t1), errs.NotFound, "run r: case 9: not found"},
		{"finish unknown", s.FinishCase(ctx, &wire.CaseResult{RunID: "ghost", Ordinal: 0, Verdict: "pass"}), errs.NotFound, "run ghost: case 0: not found"},
		{"attempts of unknown", s.SetCaseAttempts(ctx, "r", 9, []byte(`[]`)), errs.NotFound, "not found"},
		{"bad verdict", s.FinishCase(ctx, &wire.CaseResult{RunID: "r", Ordinal: 2, Verdict: "maybe"}), errs.Invalid, "verdict"},
		{"bad attempts", s.SetCaseAttempts(ctx, "r", 2, []byte(`{`)), errs.Invalid, "attempts"},
	} {
		wantErr(t, tc.err, tc.kind, tc.msg)
	}
	_, err = s.GetCaseResult(ctx, "r", 9)
	wantErr(t, err, errs.NotFound, "run r: case 9: not found")

	// The failed writes changed nothing.
	c, err = s.GetCaseResult(ctx, "r", 0)
	must(t, err)
	if c.Verdict != "fail" || !c.StartedAt.Equal(storedTime(t1)) {
		t.Errorf("case 0 after refused writes = %+v", c)
	}
	c, err = s.GetCaseResult(ctx, "r", 2)
	must(t, err)
	if c.Status != wire.CasePending || c.Verdict != "" {
		t.Errorf("case 2 after refused finish = %+v", c)
	}
}

// testFinishCaseRace has two workers finish the same case at once, many
// times: exactly one wins and its result is the one stored. A third
// contender cancels the run's cases at the same moment.
func testFinishCaseRace(t *testing.T, ctx context.Context, s *Store) {
	const n = 20
	must(t, s.CreateRun(ctx, &wire.Run{ID: "r", SuiteID: "s"}, newResults(n)))
	for i := range n {
		must(t, s.StartCase(ctx, "r", i, time.Now()))
	}
	verdicts := []string{"pass", "fail"}
	for i := range n {
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errsC = make([]error, len(verdicts))
		)
		for w, v := range verdicts {
			wg.Go(func() {
				<-start
				errsC[w] = s.FinishCase(ctx, &wire.CaseResult{RunID: "r", Ordinal: i, Verdict: v, Reason: fmt.Sprintf("worker %d", w)})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for w, err := range errsC {
			switch {
			case err == nil && winner < 0:
				winner = w
			case err == nil:
				t.Errorf("case %d: both workers finished it", i)
			case !errs.Is(err, errs.Conflict):
				t.Errorf("case %d: worker %d: %v, want nil or Conflict", i, w, err)
			}
		}
		if winner < 0 {
			t.Errorf("case %d: no worker finished it: %v", i, errsC)
			continue
		}
		c, err := s.GetCaseResult(ctx, "r", i)
		must(t, err)
		if c.Status != wire.CaseDone || c.Verdict != verdicts[winner] || c.Reason != fmt.Sprintf("worker %d", winner) {
			t.Errorf("case %d stored %s %s %q, want the winner's (worker %d)", i, c.Status, c.Verdict, c.Reason, winner)
		}
	}

	// FinishCase racing CancelCases: each case ends exactly one way.
	must(t, s.CreateRun(ctx, &wire.Run{ID: "r2", SuiteID: "s"}, newResults(n)))
	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		finished = make([]error, n)
		canceled int
		cancErr  error
	)
	for i := range n {
		wg.Go(func() {
			<-start
			finished[i] = s.FinishCase(ctx, &wire.CaseResult{RunID: "r2", Ordinal: i, Verdict: "pass"})
		})
	}
	wg.Go(func() {
		<-start
		canceled, cancErr = s.CancelCases(ctx, "r2")
	})
	close(start)
	wg.Wait()
	must(t, cancErr)
	done := 0
	for i, err := range finished {
		c, gerr := s.GetCaseResult(ctx, "r2", i)
		must(t, gerr)
		switch {
		case err == nil && c.Status == wire.CaseDone:
			done++
		case errs.Is(err, errs.Conflict) && c.Status == wire.CaseCanceled:
		default:
			t.Errorf("case %d: FinishCase %v but status %s", i, err, c.Status)
		}
	}
	if done+canceled != n {
		t.Errorf("%d finished + %d canceled, want %d", done, canceled, n)
	}
}

func testCancelCountCases(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateRun(ctx, &wire.Run{ID: "r", SuiteID: "s"}, newResults(7)))
	must(t, s.CreateRun(ctx, &wire.Run{ID: "other", SuiteID: "s"}, newResults(2)))
	// 0 pending, 1 running, 2 and 3 pass, 4 fail, 5 error, 6 running.
	for _, i := range []int{1, 2, 3, 4, 5, 6} {
		must(t, s.StartCase(ctx, "r", i, time.Now()))
	}
	for i, v := range map[int]string{2: "pass", 3: "pass", 4: "fail", 5: "error"} {
		must(t, s.FinishCase(ctx, &wire.CaseResult{RunID: "r", Ordinal: i, Verdict: v}))
	}
	for _, step := range []struct {
		name string
		do   func() (int, error)
		n    int
		want RunCounts
	}{
		{"before cancel", nil, 0, RunCounts{Total: 7, Pending: 1, Running: 2, Pass: 2, Fail: 1, Error: 1}},
		{"cancel", func() (int, error) { return s.CancelCases(ctx, "r") }, 3, RunCounts{Total: 7, Pass: 2, Fail: 1, Error: 1, Canceled: 3}},
		{"cancel again", func() (int, error) { return s.CancelCases(ctx, "r") }, 0, RunCounts{Total: 7, Pass: 2, Fail: 1, Error: 1, Canceled: 3}},
		{"cancel unknown run", func() (int, error) { return s.CancelCases(ctx, "ghost") }, 0, RunCounts{Total: 7, Pass: 2, Fail: 1, Error: 1, Canceled: 3}},
	} {
		if step.do != nil {
			n, err := step.do()
			must(t, err)
			if n != step.n {
				t.Errorf("%s: canceled %d, want %d", step.name, n, step.n)
			}
		}
		got, err := s.CountCases(ctx, "r")
		must(t, err)
		if got != step.want {
			t.Errorf("%s: CountCases = %+v, want %+v", step.name, got, step.want)
		}
	}
	// A canceled case gets no result afterwards; the finished ones keep theirs.
	wantErr(t, s.FinishCase(ctx, &wire.CaseResult{RunID: "r", Ordinal: 0, Verdict: "pass"}), errs.Conflict, "already canceled")
	wantErr(t, s.StartCase(ctx, "r", 6, time.Now()), errs.Conflict, "already canceled")
	if c, err := s.GetCaseResult(ctx, "r", 4); err != nil || c.Status != wire.CaseDone || c.Verdict != "fail" {
		t.Errorf("case 4 after cancel = %+v, %v", c, err)
	}
	if c, err := s.GetCaseResult(ctx, "r", 1); err != nil || c.Status != wire.CaseCanceled || c.EndedAt == nil {
		t.Errorf("case 1 after cancel = %+v, %v; want canceled with an end time", c, err)
	}
	// Other runs are untouched.
	if got, err := s.CountCases(ctx, "other"); err != nil || got != (RunCounts{Total: 2, Pending: 2}) {
		t.Errorf("CountCases(other) = %+v, %v", got, err)
	}
	if got, err := s.CountCases(ctx, "ghost"); err != nil || got != (RunCounts{}) {
		t.Errorf("CountCases(ghost) = %+v, %v; want zero", got, err)
	}
}

func testSetRunStatus(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateRun(ctx, &wire.Run{ID: "r", SuiteID: "s"}, nil))
	var firstStart time.Time
	for _, st := range []struct {
		name, status, reason string
		kind                 errs.Kind // 0: nil
		msg                  string
		wantStatus           string
		wantReason           string
		started, ended       bool
	}{
		{name: "still pending", status: wire.RunPending, reason: "queued", wantStatus: wire.RunPending, wantReason: "queued"},
		{name: "running", status: wire.RunRunning, wantStatus: wire.RunRunning, started: true},
		{name: "running again", status: wire.RunRunning, reason: "resumed", wantStatus: wire.RunRunning, wantReason: "resumed", started: true},
		{name: "unknown status", status: "done", kind: errs.Invalid, msg: `unknown status "done"`, wantStatus: wire.RunRunning, wantReason: "resumed", started: true},
		{name: "succeeded", status: wire.RunSucceeded, reason: "all cases final", wantStatus: wire.RunSucceeded, wantReason: "all cases final", started: true, ended: true},
		{name: "succeeded again", status: wire.RunSucceeded, reason: "retry", wantStatus: wire.RunSucceeded, wantReason: "all cases final", started: true, ended: true},
		{name: "canceled after", status: wire.RunCanceled, kind: errs.Conflict, msg: "run r: already succeeded", wantStatus: wire.RunSucceeded, wantReason: "all cases final", started: true, ended: true},
		{name: "running after", status: wire.RunRunning, kind: errs.Conflict, msg: "already succeeded", wantStatus: wire.RunSucceeded, wantReason: "all cases final", started: true, ended: true},
	} {
		err := s.SetRunStatus(ctx, "r", st.status, st.reason)
		if st.kind == 0 {
			if err != nil {
				t.Errorf("%s: SetRunStatus: %v", st.name, err)
			}
		} else {
			wantErr(t, err, st.kind, st.msg)
		}
		r, err := s.GetRun(ctx, "r")
		must(t, err)
		if r.Status != st.wantStatus || r.Reason != st.wantReason || (r.StartedAt != nil) != st.started || (r.EndedAt != nil) != st.ended {
			t.Errorf("%s: run = status %s reason %q started %v ended %v", st.name, r.Status, r.Reason, r.StartedAt, r.EndedAt)
			continue
		}
		if r.StartedAt != nil {
			if firstStart.IsZero() {
				firstStart = *r.StartedAt
			} else if !r.StartedAt.Equal(firstStart) {
				t.Errorf("%s: StartedAt moved from %v to %v", st.name, firstStart, *r.StartedAt)
			}
		}
		if r.EndedAt != nil && r.EndedAt.Before(firstStart) {
			t.Errorf("%s: ended %v before it started %v", st.name, *r.EndedAt, firstStart)
		}
	}

	// Each final status from pending, and failing a run that never ran.
	for _, final := range []string{wire.RunSucceeded, wire.RunCanceled, wire.RunFailed} {
		id := "r-" + final
		must(t, s.CreateRun(ctx, &wire.Run{ID: id, SuiteID: "s"}, nil))
		must(t, s.SetRunStatus(ctx, id, final, "why"))
		r, err := s.GetRun(ctx, id)
		must(t, err)
		if r.Status != final || r.StartedAt != nil || r.EndedAt == nil {
			t.Errorf("%s: run = %+v, want %s, ended, never started", id, r, final)
		}
		wantErr(t, s.SetRunStatus(ctx, id, wire.RunPending, ""), errs.Conflict, "already "+final)
	}
	wantErr(t, s.SetRunStatus(ctx, "ghost", wire.RunRunning, ""), errs.NotFound, "run ghost: not found")
}

// testSetRunStatusRace ends a run two ways at once: one wins, the other
// sees Conflict naming the winner's status.
func testSetRunStatusRace(t *testing.T, ctx context.Context, s *Store) {
	for i := range 10 {
		id := fmt.Sprintf("r%d", i)
		must(t, s.CreateRun(ctx, &wire.Run{ID: id, SuiteID: "s"}, nil))
		must(t, s.SetRunStatus(ctx, id, wire.RunRunning, ""))
		statuses := []string{wire.RunSucceeded, wire.RunCanceled}
		got := make([]error, len(statuses))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w, st := range statuses {
			wg.Go(func() {
				<-start
				got[w] = s.SetRunStatus(ctx, id, st, "")
			})
		}
		close(start)
		wg.Wait()
		r, err := s.GetRun(ctx, id)
		must(t, err)
		wins := 0
		for w, err := range got {
			switch {
			case err == nil:
				wins++
				if r.Status != statuses[w] {
					t.Errorf("%s: %s won but the run is %s", id, statuses[w], r.Status)
				}
			case errs.Is(err, errs.Conflict):
				wantErr(t, err, errs.Conflict, "already "+r.Status)
			default:
				t.Errorf("%s: SetRunStatus(%s): %v", id, statuses[w], err)
			}
		}
		if wins != 1 {
			t.Errorf("%s: %d winners (%v), want 1", id, wins, got)
		}
	}
}
