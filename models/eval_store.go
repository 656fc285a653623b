package models

import (
	"context"
	"time"

	"github.com/primerhq/primer/errs"
)

// CreateSuite inserts the suite and its cases (Ordinal 0..n-1 in order)
// in one transaction and sets CaseCount; Conflict if the id exists,
// NotFound (field template_id or pool_id) if the template or pool it
// names does not exist. Nothing is stored on error.
func (s *Store) CreateSuite(ctx context.Context, su *Suite, cases []SuiteCase) error {
	return errs.E(errs.Other, "suite %s: create: not implemented", su.ID)
}

// GetSuite returns the suite; NotFound if absent.
func (s *Store) GetSuite(ctx context.Context, id string) (*Suite, error) {
	return nil, errs.E(errs.Other, "suite %s: not implemented", id)
}

// ListSuites returns every suite ordered by id.
func (s *Store) ListSuites(ctx context.Context) ([]Suite, error) {
	return nil, errs.E(errs.Other, "suites: not implemented")
}

// ListSuiteCases returns a suite's cases in order; NotFound if the suite
// does not exist.
func (s *Store) ListSuiteCases(ctx context.Context, suiteID string) ([]SuiteCase, error) {
	return nil, errs.E(errs.Other, "suite %s: not implemented", suiteID)
}

// UpdateSuite replaces an existing suite's fields and all its cases in one
// transaction, with the checks of CreateSuite; NotFound if absent. Runs
// already made keep their own copy of the cases.
func (s *Store) UpdateSuite(ctx context.Context, su *Suite, cases []SuiteCase) error {
	return errs.E(errs.Other, "suite %s: update: not implemented", su.ID)
}

// DeleteSuite deletes the suite and its cases; NotFound if absent. Its
// runs and their results stay.
func (s *Store) DeleteSuite(ctx context.Context, id string) error {
	return errs.E(errs.Other, "suite %s: delete: not implemented", id)
}

// CreateRun inserts the run and its pending case results (in batches) in
// one transaction; Conflict if the run id exists. Total is set to
// len(results).
func (s *Store) CreateRun(ctx context.Context, r *Run, results []CaseResult) error {
	return errs.E(errs.Other, "run %s: create: not implemented", r.ID)
}

// GetRun returns the run; NotFound if absent.
func (s *Store) GetRun(ctx context.Context, id string) (*Run, error) {
	return nil, errs.E(errs.Other, "run %s: not implemented", id)
}

// ListRuns returns runs matching f, newest first.
func (s *Store) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	return nil, errs.E(errs.Other, "runs: not implemented")
}

// SetRunStatus moves a run to status with reason. Moving to running sets
// StartedAt once; moving to a final status (succeeded, canceled, failed)
// sets EndedAt. A run already in a final status is not changed: Conflict
// naming its status. NotFound if absent.
func (s *Store) SetRunStatus(ctx context.Context, id, status, reason string) error {
	return errs.E(errs.Other, "run %s: not implemented", id)
}

// GetCaseResult returns one case of a run; NotFound if absent.
func (s *Store) GetCaseResult(ctx context.Context, runID string, ordinal int) (*CaseResult, error) {
	return nil, errs.E(errs.Other, "run %s: not implemented", runID)
}

// ListCaseResults returns a run's cases in ordinal order, the Spec column
// included only when withSpec.
func (s *Store) ListCaseResults(ctx context.Context, runID string, withSpec bool) ([]CaseResult, error) {
	return nil, errs.E(errs.Other, "run %s: not implemented", runID)
}

// StartCase marks a pending or running case running and sets StartedAt
// the first time. Conflict if the case is done or canceled (a retried
// activity must not run a finished case again).
func (s *Store) StartCase(ctx context.Context, runID string, ordinal int, at time.Time) error {
	return errs.E(errs.Other, "run %s: not implemented", runID)
}

// FinishCase stores r's outcome fields (Verdict, Reason, ExitCode,
// DurationMS, CommandMS, Stdout, Stderr, Score, Metrics, Artifacts,
// Attempts, EndedAt) and Status done, only if the case is not done or
// canceled yet; Conflict otherwise, so a case has exactly one final
// result.
func (s *Store) FinishCase(ctx context.Context, r *CaseResult) error {
	return errs.E(errs.Other, "run %s: not implemented", r.RunID)
}

// SetCaseAttempts stores the attempts so far of a case that is not final.
func (s *Store) SetCaseAttempts(ctx context.Context, runID string, ordinal int, attempts []byte) error {
	return errs.E(errs.Other, "run %s: not implemented", runID)
}

// CancelCases marks every case of the run that is pending or running
// canceled and returns how many.
func (s *Store) CancelCases(ctx context.Context, runID string) (int, error) {
	return 0, errs.E(errs.Other, "run %s: not implemented", runID)
}

// CountCases counts a run's cases by status and verdict with one query.
func (s *Store) CountCases(ctx context.Context, runID string) (RunCounts, error) {
	return RunCounts{}, errs.E(errs.Other, "run %s: not implemented", runID)
}
