package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Batched inserts: 10,000 cases take a few dozen INSERT statements
// instead of 10,000.
const (
	// insertBatch is how many case rows one INSERT carries on PostgreSQL,
	// where each statement is a round trip. A CaseResult row binds 19
	// parameters, far below PostgreSQL's 65535 per statement.
	insertBatch = 500
	// sqliteBatchParams bounds the parameters of one INSERT on SQLite
	// (itself allowing 32766). SQLite has no round trip to save, and the
	// driver matches each parameter to its argument by a linear scan, so
	// binding costs grow with the square of a statement's parameters:
	// 500 CaseResult rows per statement make 10,000 rows take seconds,
	// 50 rows a fraction of that.
	sqliteBatchParams = 1000
)

// Verdicts of a done case, as package eval names them (eval imports
// models, so the names cannot come from there).
const (
	verdictPass  = "pass"
	verdictFail  = "fail"
	verdictError = "error"
)

// finalRun are the run statuses SetRunStatus does not move away from.
var finalRun = map[string]bool{wire.RunSucceeded: true, wire.RunCanceled: true, wire.RunFailed: true}

// runStatuses are the statuses SetRunStatus accepts.
var runStatuses = map[string]bool{wire.RunPending: true, wire.RunRunning: true, wire.RunSucceeded: true, wire.RunCanceled: true, wire.RunFailed: true}

// finalCase are the case statuses after which a case is not written again.
var finalCase = []string{wire.CaseDone, wire.CaseCanceled}

// CreateRun inserts the run and its pending case results (in batches) in
// one transaction; Conflict if the run id exists. Total is set to
// len(results).
//
// Each result gets RunID r.ID and status pending; its Ordinal is kept as
// given and must be unique in the run (Conflict otherwise). An empty
// Status is pending and an empty WorkflowID is the run's id.
func (s *Store) CreateRun(ctx context.Context, r *wire.Run, results []wire.CaseResult) error {
	if r.ID == "" {
		return errs.Field("id", "run: id is required")
	}
	if r.SuiteID == "" {
		return errs.Field("suite_id", "run %s: suite_id is required", r.ID)
	}
	if r.Status == "" {
		r.Status = wire.RunPending
	}
	if !runStatuses[r.Status] {
		return errs.Field("status", "run %s: unknown status %q", r.ID, r.Status)
	}
	if r.WorkflowID == "" {
		r.WorkflowID = r.ID
	}
	for _, c := range []struct {
		field string
		raw   []byte
	}{{"spec", r.Spec}, {"selection", r.Selection}} {
		if err := checkJSON(c.field, "run "+r.ID, c.raw); err != nil {
			return err
		}
	}
	r.Total = len(results)
	r.CreatedAt = storedTime(r.CreatedAt)
	for i := range results {
		c := &results[i]
		c.RunID, c.Status = r.ID, wire.CasePending
		c.StartedAt, c.EndedAt = storedPtr(c.StartedAt), storedPtr(c.EndedAt)
		if err := checkJSON("spec", fmt.Sprintf("run %s: case %s", r.ID, c.CaseID), c.Spec); err != nil {
			return err
		}
	}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(r).Error; err != nil {
			return err
		}
		if len(results) == 0 {
			return nil
		}
		err := tx.CreateInBatches(results, batchRows(tx, s.dialect, &wire.CaseResult{})).Error
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return errs.E(errs.Conflict, "run %s: case ordinal %d: given twice", r.ID, firstDuplicate(results, func(c wire.CaseResult) int { return c.Ordinal }))
		}
		return err
	})
	return writeError(ctx, err, "run", r.ID, "create")
}

// GetRun returns the run; NotFound if absent.
func (s *Store) GetRun(ctx context.Context, id string) (*wire.Run, error) {
	var r wire.Run
	if err := s.r.WithContext(ctx).Take(&r, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "run", id)
	}
	return &r, nil
}

// ListRuns returns runs matching f, newest first.
func (s *Store) ListRuns(ctx context.Context, f RunFilter) ([]wire.Run, error) {
	q := s.r.WithContext(ctx).Order("created_at DESC").Order("id DESC")
	if f.TenantID != "" {
		q = q.Where("tenant_id = ?", f.TenantID)
	}
	if f.SuiteID != "" {
		q = q.Where("suite_id = ?", f.SuiteID)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.Limit > 0 {
		q = q.Limit(f.Limit)
	}
	rs := []wire.Run{}
	if err := q.Find(&rs).Error; err != nil {
		return nil, dbError(ctx, err, "runs: list")
	}
	return rs, nil
}

// SetRunStatus moves a run to status with reason. Moving to running sets
// StartedAt once; moving to a final status (succeeded, canceled, failed)
// sets EndedAt. A run already in a final status is not changed: Conflict
// naming its status. NotFound if absent.
//
// Setting the final status a run already has is a no-op (nil, the first
// reason kept), so a retried activity that ended the run succeeds.
// Invalid (field status) for a status that is not a run status.
func (s *Store) SetRunStatus(ctx context.Context, id, status, reason string) error {
	if !runStatuses[status] {
		return errs.Field("status", "run %s: unknown status %q", id, status)
	}
	db := s.w.WithContext(ctx)
	now := db.NowFunc()
	cols := map[string]any{"status": status, "reason": reason}
	switch {
	case status == wire.RunRunning:
		cols["started_at"] = gorm.Expr("COALESCE(started_at, ?)", now)
	case finalRun[status]:
		cols["ended_at"] = now
	}
	// One conditional statement: of two racing final moves exactly one
	// matches; the other sees the run final below.
	res := db.Model(&wire.Run{}).Where("id = ? AND status NOT IN ?", id, []string{wire.RunSucceeded, wire.RunCanceled, wire.RunFailed}).Updates(cols)
	if res.Error != nil {
		return writeError(ctx, res.Error, "run", id, "set status")
	}
	if res.RowsAffected > 0 {
		s.signal(ctx, runTopic(id))
		return nil
	}
	var states []string
	if err := db.Model(&wire.Run{}).Where("id = ?", id).Pluck("status", &states).Error; err != nil {
		return dbError(ctx, err, "run "+id+": set status")
	}
	switch {
	case len(states) == 0:
		return notFound("run", id)
	case states[0] == status:
		return nil
	}
	return errs.E(errs.Conflict, "run %s: already %s, cannot become %s", id, states[0], status)
}

// GetCaseResult returns one case of a run; NotFound if absent.
func (s *Store) GetCaseResult(ctx context.Context, runID string, ordinal int) (*wire.CaseResult, error) {
	var c wire.CaseResult
	err := s.r.WithContext(ctx).Take(&c, "run_id = ? AND ordinal = ?", runID, ordinal).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, caseNotFound(runID, ordinal)
	}
	if err != nil {
		return nil, dbError(ctx, err, fmt.Sprintf("run %s: case %d: get", runID, ordinal))
	}
	return &c, nil
}

// ListCaseResults returns a run's cases in ordinal order, the Spec column
// included only when withSpec. NotFound if the run does not exist.
func (s *Store) ListCaseResults(ctx context.Context, runID string, withSpec bool) ([]wire.CaseResult, error) {
	db := s.r.WithContext(ctx)
	q := db.Where("run_id = ?", runID).Order("ordinal")
	if !withSpec {
		// Specs carry the case files: the bulk of a run's bytes, not
		// needed by progress, reports or comparisons.
		q = q.Omit("spec")
	}
	results := []wire.CaseResult{}
	if err := q.Find(&results).Error; err != nil {
		return nil, dbError(ctx, err, "run "+runID+": list results")
	}
	if len(results) > 0 {
		return results, nil
	}
	if err := existsOr404(db, &wire.Run{}, "run", runID); err != nil {
		return nil, writeError(ctx, err, "run", runID, "list results")
	}
	return results, nil
}

// StartCase marks a pending or running case running and sets StartedAt
// the first time. Conflict if the case is done or canceled (a retried
// activity must not run a finished case again).
func (s *Store) StartCase(ctx context.Context, runID string, ordinal int, at time.Time) error {
	db := s.w.WithContext(ctx)
	if at.IsZero() {
		at = db.NowFunc()
	}
	return s.updateOpenCase(ctx, runID, ordinal, "start", map[string]any{
		"status":     wire.CaseRunning,
		"started_at": gorm.Expr("COALESCE(started_at, ?)", storedTime(at)),
	})
}

// FinishCase stores r's outcome fields (Verdict, Reason, ExitCode,
// DurationMS, CommandMS, Stdout, Stderr, Score, Metrics, Artifacts,
// Attempts, EndedAt) and Status done, only if the case is not done or
// canceled yet; Conflict otherwise, so a case has exactly one final
// result.
//
// A zero EndedAt is now; on success r.Status is done. NotFound if the
// case does not exist; Invalid (field verdict, artifacts or attempts)
// for a verdict that is not pass, fail or error or for bad JSON.
func (s *Store) FinishCase(ctx context.Context, r *wire.CaseResult) error {
	object := fmt.Sprintf("run %s: case %d", r.RunID, r.Ordinal)
	switch r.Verdict {
	case verdictPass, verdictFail, verdictError:
	default:
		return errs.Field("verdict", "%s: verdict %q: want %s, %s or %s", object, r.Verdict, verdictPass, verdictFail, verdictError)
	}
	for _, c := range []struct {
		field string
		raw   []byte
	}{{"artifacts", r.Artifacts}, {"attempts", r.Attempts}} {
		if err := checkJSON(c.field, object, c.raw); err != nil {
			return err
		}
	}
	metrics, err := jsonValue(r.Metrics)
	if err != nil {
		return errs.Field("metrics", "%s: metrics: %v", object, err)
	}
	ended := storedPtr(r.EndedAt)
	if ended == nil {
		now := s.w.NowFunc()
		ended = &now
	}
	err = s.updateOpenCase(ctx, r.RunID, r.Ordinal, "finish", map[string]any{
		"status":      wire.CaseDone,
		"verdict":     r.Verdict,
		"reason":      r.Reason,
		"exit_code":   r.ExitCode,
		"duration_ms": r.DurationMS,
		"command_ms":  r.CommandMS,
		"stdout":      r.Stdout,
		"stderr":      r.Stderr,
		"score":       r.Score,
		"metrics":     metrics,
		"artifacts":   jsonColumn(r.Artifacts),
		"attempts":    jsonColumn(r.Attempts),
		"ended_at":    *ended,
	})
	if err != nil {
		return err
	}
	r.Status, r.EndedAt = wire.CaseDone, ended
	return nil
}

// SetCaseAttempts stores the attempts so far of a case that is not final.
// Conflict if it is final, NotFound if absent.
func (s *Store) SetCaseAttempts(ctx context.Context, runID string, ordinal int, attempts []byte) error {
	if err := checkJSON("attempts", fmt.Sprintf("run %s: case %d", runID, ordinal), attempts); err != nil {
		return err
	}
	return s.updateOpenCase(ctx, runID, ordinal, "set attempts", map[string]any{"attempts": jsonColumn(attempts)})
}

// CancelCases marks every case of the run that is pending or running
// canceled and returns how many.
func (s *Store) CancelCases(ctx context.Context, runID string) (int, error) {
	db := s.w.WithContext(ctx)
	res := db.Model(&wire.CaseResult{}).Where("run_id = ? AND status IN ?", runID, []string{wire.CasePending, wire.CaseRunning}).
		Updates(map[string]any{"status": wire.CaseCanceled, "ended_at": db.NowFunc()})
	if res.Error != nil {
		return 0, dbError(ctx, res.Error, "run "+runID+": cancel cases")
	}
	if res.RowsAffected > 0 {
		s.signal(ctx, runTopic(runID))
	}
	return int(res.RowsAffected), nil
}

// CountCases counts a run's cases by status and verdict with one query.
// An unknown run has no cases: zero counts.
func (s *Store) CountCases(ctx context.Context, runID string) (RunCounts, error) {
	var rows []struct {
		Status  string
		Verdict string
		N       int
	}
	err := s.r.WithContext(ctx).Model(&wire.CaseResult{}).Select("status, verdict, COUNT(*) AS n").
		Where("run_id = ?", runID).Group("status, verdict").Scan(&rows).Error
	if err != nil {
		return RunCounts{}, dbError(ctx, err, "run "+runID+": count cases")
	}
	var c RunCounts
	for _, r := range rows {
		c.Total += r.N
		switch r.Status {
		case wire.CasePending:
			c.Pending += r.N
		case wire.CaseRunning:
			c.Running += r.N
		case wire.CaseCanceled:
			c.Canceled += r.N
		case wire.CaseDone:
			switch r.Verdict {
			case verdictPass:
				c.Pass += r.N
			case verdictFail:
				c.Fail += r.N
			default:
				// FinishCase admits only the three verdicts; anything
				// else is an infrastructure problem, not a test's.
				c.Error += r.N
			}
		}
	}
	return c, nil
}

// updateOpenCase sets cols on one case of a run only if it is neither done
// nor canceled, in one conditional statement: of two racing writers only
// one can move a case to a final status. NotFound if there is no such
// case, Conflict naming its status if it is final.
func (s *Store) updateOpenCase(ctx context.Context, runID string, ordinal int, action string, cols map[string]any) error {
	db := s.w.WithContext(ctx)
	what := fmt.Sprintf("run %s: case %d: %s", runID, ordinal, action)
	res := db.Model(&wire.CaseResult{}).Where("run_id = ? AND ordinal = ? AND status NOT IN ?", runID, ordinal, finalCase).Updates(cols)
	if res.Error != nil {
		return dbError(ctx, res.Error, what)
	}
	if res.RowsAffected > 0 {
		s.signal(ctx, runTopic(runID))
		return nil
	}
	var states []string
	if err := db.Model(&wire.CaseResult{}).Where("run_id = ? AND ordinal = ?", runID, ordinal).Pluck("status", &states).Error; err != nil {
		return dbError(ctx, err, what)
	}
	if len(states) == 0 {
		return caseNotFound(runID, ordinal)
	}
	return errs.E(errs.Conflict, "run %s: case %d: already %s", runID, ordinal, states[0])
}

// batchRows is how many rows of model one INSERT carries on dialect.
func batchRows(tx *gorm.DB, dialect string, model any) int {
	if dialect == DialectPostgres {
		return insertBatch
	}
	stmt := &gorm.Statement{DB: tx}
	// Parsed once per model and cached by GORM.
	if err := stmt.Parse(model); err != nil || len(stmt.Schema.DBNames) == 0 {
		return sqliteBatchParams / 20
	}
	return max(1, sqliteBatchParams/len(stmt.Schema.DBNames))
}

// existsOr404 returns NotFound unless model has a row with id.
func existsOr404(tx *gorm.DB, model any, kind, id string) error {
	var ids []string
	if err := tx.Model(model).Where("id = ?", id).Limit(1).Pluck("id", &ids).Error; err != nil {
		return err
	}
	if len(ids) == 0 {
		return notFound(kind, id)
	}
	return nil
}

// caseNotFound is the NotFound error for one case of a run.
func caseNotFound(runID string, ordinal int) error {
	return errs.E(errs.NotFound, "run %s: case %d: not found", runID, ordinal)
}

// firstDuplicate returns the first key of xs seen twice (the zero value if
// none: the duplicate was then against a row already stored).
func firstDuplicate[T any, K comparable](xs []T, key func(T) K) K {
	seen := make(map[K]bool, len(xs))
	for _, x := range xs {
		k := key(x)
		if seen[k] {
			return k
		}
		seen[k] = true
	}
	var zero K
	return zero
}

// jsonValue is v as a JSON column written by a map update, matching GORM's
// json serializer on create: NULL for a nil map or slice.
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil, err
	}
	return string(b), nil
}

// storedPtr is storedTime for an optional time.
func storedPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	st := storedTime(*t)
	return &st
}
