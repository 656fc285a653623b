package models

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// CreateSuite inserts the suite and its cases (Ordinal 0..n-1 in order)
// in one transaction and sets CaseCount; Conflict if the id exists,
// NotFound (field template_id or pool_id) if the template or pool it
// names does not exist. Nothing is stored on error.
func (s *Store) CreateSuite(ctx context.Context, su *wire.Suite, cases []wire.SuiteCase) error {
	if su.ID == "" {
		return errs.Field("id", "suite: id is required")
	}
	if err := checkJSON("spec", "suite "+su.ID, su.Spec); err != nil {
		return err
	}
	if err := prepareCases(su, cases); err != nil {
		return err
	}
	su.CreatedAt, su.UpdatedAt = storedTime(su.CreatedAt), storedTime(su.UpdatedAt)
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockSuiteTargets(tx, su); err != nil {
			return err
		}
		if err := tx.Create(su).Error; err != nil {
			return err
		}
		return insertSuiteCases(tx, s.dialect, su.ID, cases)
	})
	return writeError(ctx, err, "suite", su.ID, "create")
}

// GetSuite returns the suite; NotFound if absent.
func (s *Store) GetSuite(ctx context.Context, id string) (*wire.Suite, error) {
	var su wire.Suite
	if err := s.r.WithContext(ctx).Take(&su, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "suite", id)
	}
	return &su, nil
}

// ListSuites returns suites ordered by id: every one when tenant is empty,
// else the tenant's.
func (s *Store) ListSuites(ctx context.Context, tenant string) ([]wire.Suite, error) {
	q := s.r.WithContext(ctx).Order("id")
	if tenant != "" {
		q = q.Where("tenant_id = ?", tenant)
	}
	sus := []wire.Suite{}
	if err := q.Find(&sus).Error; err != nil {
		return nil, dbError(ctx, err, "suites: list")
	}
	return sus, nil
}

// ListSuiteCases returns a suite's cases in order; NotFound if the suite
// does not exist.
func (s *Store) ListSuiteCases(ctx context.Context, suiteID string) ([]wire.SuiteCase, error) {
	db := s.r.WithContext(ctx)
	cases := []wire.SuiteCase{}
	if err := db.Where("suite_id = ?", suiteID).Order("ordinal").Find(&cases).Error; err != nil {
		return nil, dbError(ctx, err, "suite "+suiteID+": list cases")
	}
	if len(cases) > 0 {
		return cases, nil
	}
	// Only an empty answer needs telling apart. Not one transaction with
	// the read above: on SQLite that would take the write lock
	// (_txlock=immediate), and a suite deleted in between is gone anyway.
	if err := existsOr404(db, &wire.Suite{}, "suite", suiteID); err != nil {
		return nil, writeError(ctx, err, "suite", suiteID, "list cases")
	}
	return cases, nil
}

// UpdateSuite replaces an existing suite's fields and all its cases in one
// transaction, with the checks of CreateSuite; NotFound if absent. Runs
// already made keep their own copy of the cases. On success su holds the
// stored row.
func (s *Store) UpdateSuite(ctx context.Context, su *wire.Suite, cases []wire.SuiteCase) error {
	if err := checkJSON("spec", "suite "+su.ID, su.Spec); err != nil {
		return err
	}
	if err := prepareCases(su, cases); err != nil {
		return err
	}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, forUpdate, &wire.Suite{}, "suite", su.ID); err != nil {
			return err
		}
		if err := lockSuiteTargets(tx, su); err != nil {
			return err
		}
		err := tx.Model(&wire.Suite{}).Where("id = ?", su.ID).Updates(map[string]any{
			"description":   su.Description,
			"template_id":   su.TemplateID,
			"pool_id":       su.PoolID,
			"spec":          jsonColumn(su.Spec),
			"case_count":    su.CaseCount,
			"admin_written": su.AdminWritten,
			"updated_at":    tx.NowFunc(),
		}).Error
		if err != nil {
			return err
		}
		if err := tx.Where("suite_id = ?", su.ID).Delete(&wire.SuiteCase{}).Error; err != nil {
			return err
		}
		if err := insertSuiteCases(tx, s.dialect, su.ID, cases); err != nil {
			return err
		}
		return reload(tx, su, su.ID)
	})
	return writeError(ctx, err, "suite", su.ID, "update")
}

// DeleteSuite deletes the suite and its cases; NotFound if absent. Its
// runs and their results stay.
func (s *Store) DeleteSuite(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Delete(&wire.Suite{}, "id = ?", id)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return notFound("suite", id)
		}
		return tx.Where("suite_id = ?", id).Delete(&wire.SuiteCase{}).Error
	})
	return writeError(ctx, err, "suite", id, "delete")
}

// prepareCases numbers cases 0..n-1 for suite su and sets su.CaseCount.
func prepareCases(su *wire.Suite, cases []wire.SuiteCase) error {
	for i := range cases {
		c := &cases[i]
		if c.CaseID == "" {
			return errs.Field("cases", "suite %s: case %d: id is required", su.ID, i)
		}
		if err := checkJSON("cases", fmt.Sprintf("suite %s: case %s: spec", su.ID, c.CaseID), c.Spec); err != nil {
			return err
		}
		c.SuiteID, c.Ordinal = su.ID, i
	}
	su.CaseCount = len(cases)
	return nil
}

// insertSuiteCases inserts the prepared cases of suite id in batches; a
// case id given twice is Conflict naming it (the unique index
// idx_suite_cases_case is what enforces it).
func insertSuiteCases(tx *gorm.DB, dialect, id string, cases []wire.SuiteCase) error {
	if len(cases) == 0 {
		return nil
	}
	err := tx.CreateInBatches(cases, batchRows(tx, dialect, &wire.SuiteCase{})).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return errs.E(errs.Conflict, "suite %s: case %s: id given twice", id, firstDuplicate(cases, func(c wire.SuiteCase) string { return c.CaseID }))
	}
	return err
}

// lockSuiteTargets locks su's template and pool, those it names, against
// deletion for the rest of tx; NotFound (field template_id or pool_id) if
// one does not exist.
func lockSuiteTargets(tx *gorm.DB, su *wire.Suite) error {
	for _, t := range []struct {
		model       any
		kind, field string
		id          string
	}{
		{&wire.Template{}, "template", "template_id", su.TemplateID},
		{&wire.Pool{}, "pool", "pool_id", su.PoolID},
	} {
		if t.id == "" {
			continue
		}
		err := lockRow(tx, forShare, t.model, t.kind, t.id)
		if errs.Is(err, errs.NotFound) {
			return &errs.Error{Kind: errs.NotFound, Field: t.field,
				Msg: fmt.Sprintf("suite %s: %s %s: not found", su.ID, t.kind, t.id)}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
