package evalrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// Labels an eval run puts on the workspaces it holds, so that whatever
// happens between acquiring one and the workflow recording it, the run
// finds and releases it at the end.
const (
	// LabelRun is the id of the run holding the workspace.
	LabelRun = "primer.run"
	// LabelSlot is the run's slot (0, 1, ...) the workspace serves.
	LabelSlot = "primer.slot"
)

// CreateRunSpec is a run of a suite to store.
type CreateRunSpec struct {
	RunID       string
	SuiteID     string
	Selection   eval.Selection
	Trigger     string // models.TriggerUser or models.TriggerSchedule
	TriggeredBy string
}

// CreateRun stores a pending run of a suite with one pending case result
// per selected case, each resolved with the suite's defaults (Ordinal is
// the case's index in the run, 0..n-1). The API (through
// starter.Starter.CreateRun) and the first activity of a scheduled run
// share it, so every run belongs to its suite's tenant. NotFound if the
// suite does not exist; Invalid (field cases)
// for a selection naming unknown cases or picking none.
func CreateRun(ctx context.Context, store *models.Store, spec CreateRunSpec) (*wire.Run, error) {
	su, err := store.GetSuite(ctx, spec.SuiteID)
	if err != nil {
		return nil, fmt.Errorf("run %s: suite: %w", spec.RunID, err)
	}
	rows, err := store.ListSuiteCases(ctx, su.ID)
	if err != nil {
		return nil, fmt.Errorf("run %s: suite %s: cases: %w", spec.RunID, su.ID, err)
	}
	var ss eval.SuiteSpec
	if len(su.Spec) > 0 {
		if err := json.Unmarshal(su.Spec, &ss); err != nil {
			return nil, errs.E(errs.Other, "run %s: suite %s: decode spec: %w", spec.RunID, su.ID, err)
		}
	}
	cases := make([]eval.Case, len(rows))
	for i, row := range rows {
		if err := json.Unmarshal(row.Spec, &cases[i]); err != nil {
			return nil, errs.E(errs.Other, "run %s: suite %s: case %s: decode: %w", spec.RunID, su.ID, row.CaseID, err)
		}
	}
	picked, err := eval.Select(cases, spec.Selection)
	if err != nil {
		return nil, fmt.Errorf("run %s: suite %s: %w", spec.RunID, su.ID, err)
	}
	if len(picked) == 0 {
		return nil, errs.Field("cases", "run %s: suite %s: the selection picks no case", spec.RunID, su.ID)
	}
	results := make([]wire.CaseResult, 0, len(picked))
	for i, idx := range picked {
		c := ss.Resolve(cases[idx])
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, errs.E(errs.Other, "run %s: case %s: encode: %w", spec.RunID, c.ID, err)
		}
		results = append(results, wire.CaseResult{
			RunID:   spec.RunID,
			Ordinal: i,
			CaseID:  c.ID,
			Labels:  c.Labels,
			Spec:    raw,
			Status:  wire.CasePending,
		})
	}
	sel, err := json.Marshal(spec.Selection)
	if err != nil {
		return nil, errs.E(errs.Other, "run %s: encode selection: %w", spec.RunID, err)
	}
	run := &wire.Run{
		ID: spec.RunID,
		// A run is its suite's, whoever triggered it (a user, an admin of
		// another tenant, the schedule): its workspaces count against the
		// suite's tenant.
		TenantID:    su.TenantID,
		ByAdmin:     su.AdminWritten,
		SuiteID:     su.ID,
		Status:      wire.RunPending,
		Trigger:     spec.Trigger,
		TriggeredBy: spec.TriggeredBy,
		Spec:        su.Spec,
		Selection:   sel,
		Total:       len(results),
		WorkflowID:  spec.RunID,
	}
	if err := store.CreateRun(ctx, run, results); err != nil {
		return nil, fmt.Errorf("run %s: create: %w", spec.RunID, err)
	}
	return run, nil
}

// PrepareRunInput names the run to begin. A run its suite's schedule
// started has no RunID: its row is made from the suite with WorkflowID as
// the run's id.
type PrepareRunInput struct {
	RunID       string
	SuiteID     string
	TriggeredBy string
	WorkflowID  string
}

// PrepareRunOutput is what the run's workflow needs to dispatch its cases:
// counts and bounds, never a case's spec.
type PrepareRunOutput struct {
	RunID       string
	Total       int
	Concurrency int
	Retries     int
	PoolID      string
	TemplateID  string
	// CaseTimeout is the longest timeout of the run's cases; StartTimeout
	// the start timeout of the template its workspaces are made from.
	CaseTimeout  time.Duration
	StartTimeout time.Duration
	// Final is the run's status when it was already final (canceled
	// before its workflow began): there is nothing to run.
	Final string
}

// PrepareRun makes the run's row when a schedule started it, reads what
// the workflow needs, and marks the run running. It is idempotent.
func (a *Activities) PrepareRun(ctx context.Context, in PrepareRunInput) (PrepareRunOutput, error) {
	out, err := a.prepareRun(ctx, in)
	if err != nil {
		return PrepareRunOutput{}, activities.Classify(err)
	}
	return out, nil
}

func (a *Activities) prepareRun(ctx context.Context, in PrepareRunInput) (PrepareRunOutput, error) {
	id := in.RunID
	if id == "" {
		id = in.WorkflowID
	}
	run, err := a.Store.GetRun(ctx, id)
	if errs.Is(err, errs.NotFound) && in.RunID == "" {
		run, err = CreateRun(ctx, a.Store, CreateRunSpec{RunID: id, SuiteID: in.SuiteID,
			Trigger: wire.TriggerSchedule, TriggeredBy: in.TriggeredBy})
		if errs.Is(err, errs.Conflict) {
			// An earlier attempt made it and its answer was lost.
			run, err = a.Store.GetRun(ctx, id)
		}
	}
	if err != nil {
		return PrepareRunOutput{}, fmt.Errorf("run %s: prepare: %w", id, err)
	}
	ss, err := runSpec(run)
	if err != nil {
		return PrepareRunOutput{}, err
	}
	out := PrepareRunOutput{
		RunID:        run.ID,
		Total:        run.Total,
		Concurrency:  ss.Concurrency,
		Retries:      eval.DefaultRetries,
		PoolID:       ss.PoolID,
		TemplateID:   ss.TemplateID,
		CaseTimeout:  eval.DefaultTimeout,
		StartTimeout: backend.DefaultStartTimeout,
	}
	if out.Concurrency <= 0 {
		out.Concurrency = eval.DefaultConcurrency
	}
	if ss.Retries != nil {
		out.Retries = *ss.Retries
	}
	results, err := a.Store.ListCaseResults(ctx, run.ID, true)
	if err != nil {
		return PrepareRunOutput{}, fmt.Errorf("run %s: prepare: cases: %w", run.ID, err)
	}
	out.CaseTimeout = 0
	for _, r := range results {
		var c eval.Case
		if err := json.Unmarshal(r.Spec, &c); err != nil {
			return PrepareRunOutput{}, errs.E(errs.Other, "run %s: case %s: decode: %w", run.ID, r.CaseID, err)
		}
		out.CaseTimeout = max(out.CaseTimeout, caseTimeout(c))
	}
	if tmplID, err := a.runTemplate(ctx, ss); err == nil {
		if common, err := activities.TemplateCommon(ctx, a.Store, tmplID); err == nil {
			out.StartTimeout = common.Policy().StartTimeout
		}
	}
	// A template or pool that is gone is found by the first acquire, which
	// fails the run with the reason.
	switch err := a.Store.SetRunStatus(ctx, run.ID, wire.RunRunning, ""); {
	case errs.Is(err, errs.Conflict):
		cur, gerr := a.Store.GetRun(ctx, run.ID)
		if gerr != nil {
			return PrepareRunOutput{}, fmt.Errorf("run %s: prepare: %w", run.ID, gerr)
		}
		out.Final = cur.Status
	case err != nil:
		return PrepareRunOutput{}, fmt.Errorf("run %s: prepare: set running: %w", run.ID, err)
	}
	a.logger().Info("run started", "run_id", run.ID, "suite_id", run.SuiteID, "total", out.Total,
		"concurrency", out.Concurrency, "pool_id", out.PoolID, "template_id", out.TemplateID)
	return out, nil
}

// runSpec decodes the suite spec a run was made with.
func runSpec(run *wire.Run) (eval.SuiteSpec, error) {
	var ss eval.SuiteSpec
	if len(run.Spec) == 0 {
		return ss, nil
	}
	if err := json.Unmarshal(run.Spec, &ss); err != nil {
		return ss, errs.E(errs.Other, "run %s: decode suite spec: %w", run.ID, err)
	}
	return ss, nil
}

// runTemplate is the template a run's workspaces are made from: the
// suite's, or its pool's.
func (a *Activities) runTemplate(ctx context.Context, ss eval.SuiteSpec) (string, error) {
	if ss.PoolID == "" {
		return ss.TemplateID, nil
	}
	p, err := a.Store.GetPool(ctx, ss.PoolID)
	if err != nil {
		return "", err
	}
	return p.TemplateID, nil
}

// caseTimeout is the time a resolved case's setup and command may take.
func caseTimeout(c eval.Case) time.Duration {
	if d := c.Timeout.D(); d > 0 {
		return d
	}
	return eval.DefaultTimeout
}

// FailCaseInput is an attempt of a case that never reached RunCase's end:
// no workspace could be had, or RunCase itself failed.
type FailCaseInput struct {
	RunID       string
	Ordinal     int
	Attempt     int
	WorkspaceID string
	Reason      string
	// Final finishes the case with verdict error; otherwise the attempt
	// is only added to its list.
	Final bool
}

// FailCaseOutput is the case's verdict once final (the stored one when
// another attempt finished it first).
type FailCaseOutput struct {
	Verdict string
}

// FailCase records an infrastructure attempt of a case, and when Final,
// finishes the case with verdict error, so no case of a run is lost.
func (a *Activities) FailCase(ctx context.Context, in FailCaseInput) (FailCaseOutput, error) {
	now := time.Now().UTC()
	cr, err := a.Store.GetCaseResult(ctx, in.RunID, in.Ordinal)
	if err != nil {
		return FailCaseOutput{}, activities.Classify(fmt.Errorf("run %s: case %d: %w", in.RunID, in.Ordinal, err))
	}
	if cr.Status == wire.CaseDone || cr.Status == wire.CaseCanceled {
		return FailCaseOutput{Verdict: cr.Verdict}, nil
	}
	att := eval.Attempt{Attempt: in.Attempt, WorkspaceID: in.WorkspaceID, Verdict: eval.VerdictError,
		Reason: in.Reason, StartedAt: now, EndedAt: now}
	verdict, err := a.recordAttempt(ctx, cr, att, in.Final, func(r *wire.CaseResult) {
		r.Verdict, r.Reason = eval.VerdictError, in.Reason
	})
	if err != nil {
		return FailCaseOutput{}, activities.Classify(err)
	}
	return FailCaseOutput{Verdict: verdict}, nil
}

// recordAttempt adds att to the case's attempts (replacing an earlier
// record of the same attempt number, which a retried activity may have
// left). Unless final it stores them on the pending case; when final it
// finishes the case with the fields fill sets. A case another attempt
// finished first keeps its result: its verdict is returned.
func (a *Activities) recordAttempt(ctx context.Context, cr *wire.CaseResult, att eval.Attempt, final bool, fill func(*wire.CaseResult)) (string, error) {
	var attempts []eval.Attempt
	if len(cr.Attempts) > 0 && string(cr.Attempts) != "null" {
		if err := json.Unmarshal(cr.Attempts, &attempts); err != nil {
			return "", errs.E(errs.Other, "run %s: case %s: decode attempts: %w", cr.RunID, cr.CaseID, err)
		}
	}
	kept := attempts[:0]
	for _, x := range attempts {
		if x.Attempt != att.Attempt {
			kept = append(kept, x)
		}
	}
	attempts = append(kept, att)
	raw, err := json.Marshal(attempts)
	if err != nil {
		return "", errs.E(errs.Other, "run %s: case %s: encode attempts: %w", cr.RunID, cr.CaseID, err)
	}
	if !final {
		if err := a.Store.SetCaseAttempts(ctx, cr.RunID, cr.Ordinal, raw); err != nil {
			return "", fmt.Errorf("run %s: case %s: store attempts: %w", cr.RunID, cr.CaseID, err)
		}
		return att.Verdict, nil
	}
	res := &wire.CaseResult{RunID: cr.RunID, Ordinal: cr.Ordinal, CaseID: cr.CaseID, Attempts: raw}
	end := att.EndedAt
	res.EndedAt = &end
	fill(res)
	err = a.Store.FinishCase(ctx, res)
	if errs.Is(err, errs.Conflict) {
		// Another attempt (a retry of this activity after a lost answer)
		// finished it: a case has exactly one final result.
		cur, gerr := a.Store.GetCaseResult(ctx, cr.RunID, cr.Ordinal)
		if gerr != nil {
			return "", fmt.Errorf("run %s: case %s: %w", cr.RunID, cr.CaseID, gerr)
		}
		return cur.Verdict, nil
	}
	if err != nil {
		return "", fmt.Errorf("run %s: case %s: finish: %w", cr.RunID, cr.CaseID, err)
	}
	return res.Verdict, nil
}

// FinishRunInput ends a run with a final status.
type FinishRunInput struct {
	RunID  string
	Status string // models.RunSucceeded, RunCanceled or RunFailed
	Reason string
}

// FinishRunOutput is the run's final status and counts.
type FinishRunOutput struct {
	Status   string
	Total    int
	Pass     int
	Fail     int
	Error    int
	Canceled int
	// Released counts the workspaces released by this call.
	Released int
}

// FinishRun ends a run: it releases every workspace still labelled with
// the run (so a crash between acquiring one and recording it leaks
// nothing), cancels the cases not final, sets the final status and POSTs
// the suite's webhook (best effort). It is idempotent: a run already final
// keeps its status.
func (a *Activities) FinishRun(ctx context.Context, in FinishRunInput) (FinishRunOutput, error) {
	defer activities.KeepAlive(ctx)()
	out, err := a.finishRun(ctx, in)
	if err != nil {
		return FinishRunOutput{}, activities.Classify(err)
	}
	return out, nil
}

func (a *Activities) finishRun(ctx context.Context, in FinishRunInput) (FinishRunOutput, error) {
	run, err := a.Store.GetRun(ctx, in.RunID)
	if err != nil {
		return FinishRunOutput{}, fmt.Errorf("run %s: finish: %w", in.RunID, err)
	}
	held, err := a.runWorkspaces(ctx, run.ID, -1)
	if err != nil {
		return FinishRunOutput{}, err
	}
	out := FinishRunOutput{Status: in.Status}
	var errList []error
	for i := range held {
		released, err := a.release(ctx, run.ID, &held[i], false)
		if err != nil {
			errList = append(errList, err)
		}
		if released {
			out.Released++
		}
	}
	if err := errors.Join(errList...); err != nil {
		return FinishRunOutput{}, fmt.Errorf("run %s: finish: release workspaces: %w", run.ID, err)
	}
	if in.Status != wire.RunSucceeded {
		if _, err := a.Store.CancelCases(ctx, run.ID); err != nil {
			return FinishRunOutput{}, fmt.Errorf("run %s: finish: cancel cases: %w", run.ID, err)
		}
	}
	moved := true
	switch err := a.Store.SetRunStatus(ctx, run.ID, in.Status, in.Reason); {
	case errs.Is(err, errs.Conflict):
		moved = false
	case err != nil:
		return FinishRunOutput{}, fmt.Errorf("run %s: finish: set status: %w", run.ID, err)
	}
	if cur, err := a.Store.GetRun(ctx, run.ID); err == nil {
		run = cur
		out.Status = cur.Status
	}
	n, err := a.Store.CountCases(ctx, run.ID)
	if err != nil {
		return FinishRunOutput{}, fmt.Errorf("run %s: finish: count cases: %w", run.ID, err)
	}
	out.Total, out.Pass, out.Fail, out.Error, out.Canceled = n.Total, n.Pass, n.Fail, n.Error, n.Canceled
	if moved {
		a.logger().Info("run finished", "run_id", run.ID, "suite_id", run.SuiteID, "status", out.Status,
			"pass", out.Pass, "fail", out.Fail, "error", out.Error, "canceled", out.Canceled, "released", out.Released)
		a.notifyRun(ctx, run, out)
	}
	return out, nil
}
