package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
)

// Media types of a JSONL body or answer: one JSON value a line.
const (
	mediaNDJSON = "application/x-ndjson"
	mediaJSONL  = "application/jsonl"
)

// isJSONL reports whether the request's body is JSONL.
func isJSONL(c *gin.Context) bool {
	mt, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	return mt == mediaNDJSON || mt == mediaJSONL || mt == "application/x-jsonlines"
}

// readSuite reads a suite document from the body: a JSON SuiteSpec with
// its cases, or JSONL (the spec on the first line, then one case a line),
// at most maxSuiteBytes either way. It checks the document (eval's rules,
// fields named spec.*) and that its template or pool exists.
func (s *server) readSuite(c *gin.Context) (*eval.SuiteSpec, error) {
	limit := s.maxSuiteBytes
	var spec *eval.SuiteSpec
	if isJSONL(c) {
		if c.Request.ContentLength > limit {
			return nil, errs.E(errs.TooLarge, "request body: %d bytes is over the limit of %d", c.Request.ContentLength, limit)
		}
		sp, err := eval.ReadJSONL(c.Request.Body, limit)
		if err != nil {
			if k := errs.KindOf(err); k != errs.TooLarge && k != errs.Invalid {
				err = errs.E(errs.Invalid, "request body: %w", err)
			}
			return nil, err
		}
		spec = sp
	} else {
		spec = &eval.SuiteSpec{}
		if err := s.decodeJSONLimit(c, spec, "spec.", false, limit); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

// checkSuite validates a suite document, that its webhook's host passes
// the outbound policy, and that the template or pool it runs on is the
// caller's (404 naming the field otherwise, as for an unknown one) and may
// be used by the caller (a host backend needs an admin).
func (s *server) checkSuite(c *gin.Context, spec *eval.SuiteSpec) error {
	if err := spec.Check(); err != nil {
		return err
	}
	if spec.WebhookURL != "" {
		if err := s.cfg.Outbound.CheckURL(c.Request.Context(), "spec.webhook_url", spec.WebhookURL); err != nil {
			return err
		}
	}
	if spec.TemplateID != "" {
		t, err := s.templateOf(c, spec.TemplateID)
		if err != nil {
			return asRef(err, "spec.template_id", "template", spec.TemplateID)
		}
		if err := hostTemplate(c, t); err != nil {
			return err
		}
	}
	if spec.PoolID != "" {
		p, err := s.poolOf(c, spec.PoolID)
		if err != nil {
			return asRef(err, "spec.pool_id", "pool", spec.PoolID)
		}
		if err := s.hostPool(c, p); err != nil {
			return err
		}
	}
	return nil
}

// hostSuite refuses a caller that is not an admin runs of a suite whose
// template or pool is on a host backend (it may have been made by an
// admin, or moved there since).
func (s *server) hostSuite(c *gin.Context, su *wire.Suite) error {
	if callerOf(c).admin() {
		return nil
	}
	if su.TemplateID != "" {
		t, err := s.cfg.Store.GetTemplate(c.Request.Context(), su.TemplateID)
		if err != nil {
			return err
		}
		return hostTemplate(c, t)
	}
	if su.PoolID != "" {
		p, err := s.cfg.Store.GetPool(c.Request.Context(), su.PoolID)
		if err != nil {
			return err
		}
		return s.hostPool(c, p)
	}
	return nil
}

// suiteError gives a store error about a suite's template or pool its API
// meaning: bad input naming the document's field (it may have gone between
// the check and the write).
func suiteError(err error, spec *eval.SuiteSpec) error {
	if !errs.Is(err, errs.NotFound) {
		return err
	}
	switch errs.FieldOf(err) {
	case "template_id":
		return unknownRef("spec.template_id", "template", spec.TemplateID)
	case "pool_id":
		return unknownRef("spec.pool_id", "pool", spec.PoolID)
	}
	return err
}

// suiteRows splits a checked document into the suite's row (its spec
// without the cases) and one row per case.
func suiteRows(spec *eval.SuiteSpec) (*wire.Suite, []wire.SuiteCase, error) {
	head := *spec
	head.Cases = nil
	raw, err := json.Marshal(head)
	if err != nil {
		return nil, nil, errs.E(errs.Other, "suite %s: encode spec: %w", spec.ID, err)
	}
	su := &wire.Suite{ID: spec.ID, Description: spec.Description, TemplateID: spec.TemplateID, PoolID: spec.PoolID, Spec: raw}
	rows := make([]wire.SuiteCase, len(spec.Cases))
	for i, cs := range spec.Cases {
		b, err := json.Marshal(cs)
		if err != nil {
			return nil, nil, errs.E(errs.Other, "suite %s: case %s: encode: %w", spec.ID, cs.ID, err)
		}
		rows[i] = wire.SuiteCase{SuiteID: spec.ID, Ordinal: i, CaseID: cs.ID, Labels: cs.Labels, Spec: b}
	}
	return su, rows, nil
}

// storedSpec decodes a suite row's spec (without cases).
func storedSpec(su *wire.Suite) (*eval.SuiteSpec, error) {
	var spec eval.SuiteSpec
	if len(su.Spec) > 0 {
		if err := json.Unmarshal(su.Spec, &spec); err != nil {
			return nil, errs.E(errs.Other, "suite %s: decode stored spec: %w", su.ID, err)
		}
	}
	return &spec, nil
}

// suiteView returns su with its schedule's live state when it has one.
func (s *server) suiteView(ctx context.Context, su *wire.Suite) (wire.SuiteView, error) {
	v := wire.SuiteView{Suite: redactSuite(*su)}
	spec, err := storedSpec(su)
	if err != nil {
		return v, err
	}
	if spec.Schedule == nil {
		return v, nil
	}
	st, err := s.cfg.Starter.DescribeSchedule(ctx, su.ID)
	if err != nil {
		// The suite is readable without Temporal; say what is missing.
		v.ScheduleError = err.Error()
		return v, nil
	}
	v.ScheduleStatus = st
	return v, nil
}

// cleanup runs fn on a context that outlives a canceled request, bounded by
// cleanupTimeout, for undoing half-done work.
func cleanup(ctx context.Context, fn func(ctx context.Context)) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	fn(cctx)
}

// createSuite stores a suite with its cases and, when it has a schedule,
// creates its Temporal Schedule; a schedule that cannot be made takes the
// suite back, so nothing is half-created.
func (s *server) createSuite(c *gin.Context) {
	ctx := c.Request.Context()
	spec, err := s.readSuite(c)
	if err == nil {
		err = s.unredactSuite(ctx, spec, nil)
	}
	if err == nil {
		err = s.checkSuite(c, spec)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	su, rows, err := suiteRows(spec)
	if err != nil {
		s.fail(c, err)
		return
	}
	su.TenantID = callerTenant(c)
	// Who wrote it decides whether its runs may reach the host
	// (activities/host_rule.go).
	su.AdminWritten = callerOf(c).admin()
	if err := s.cfg.Store.CreateSuite(ctx, su, rows); err != nil {
		s.fail(c, suiteError(err, spec))
		return
	}
	if spec.Schedule != nil {
		if err := s.cfg.Starter.SyncSchedule(ctx, su.ID, spec.Schedule); err != nil {
			cleanup(ctx, func(ctx context.Context) {
				if derr := s.cfg.Store.DeleteSuite(ctx, su.ID); derr != nil && !errs.Is(derr, errs.NotFound) {
					s.log.Error("suite: remove row after failed schedule", "suite_id", su.ID, "error", derr.Error())
				}
			})
			s.fail(c, err)
			return
		}
	}
	s.log.Info("suite created", "suite_id", su.ID, "cases", len(rows), "template_id", su.TemplateID,
		"pool_id", su.PoolID, "scheduled", spec.Schedule != nil)
	c.Header("Location", "/v1/suites/"+su.ID)
	s.respondSuite(c, su.ID, http.StatusCreated)
}

func (s *server) listSuites(c *gin.Context) {
	sus, err := s.cfg.Store.ListSuites(c.Request.Context(), listTenant(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	for i := range sus {
		sus[i] = redactSuite(sus[i])
	}
	c.JSON(http.StatusOK, list(sus))
}

func (s *server) getSuite(c *gin.Context) {
	s.respondSuite(c, c.Param("id"), http.StatusOK)
}

// respondSuite answers with the stored suite id as the API shows it.
func (s *server) respondSuite(c *gin.Context, id string, status int) {
	su, err := s.suiteOf(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.writeSuite(c, su, status)
}

// writeSuite answers with su as the API shows it.
func (s *server) writeSuite(c *gin.Context, su *wire.Suite, status int) {
	v, err := s.suiteView(c.Request.Context(), su)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(status, v)
}

// suiteCases lists a suite's cases as the documents they were given as:
// {"items":[case...]}, or with ?format=jsonl (or Accept: application/x-ndjson)
// one case a line, which `create --cases` reads back.
func (s *server) suiteCases(c *gin.Context) {
	ctx := c.Request.Context()
	format, err := answerFormat(c, formatJSON, formatJSONL)
	if err != nil {
		s.fail(c, err)
		return
	}
	su, err := s.suiteOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	rows, err := s.cfg.Store.ListSuiteCases(ctx, su.ID)
	if err != nil {
		s.fail(c, err)
		return
	}
	if format == formatJSON {
		out := make([]json.RawMessage, len(rows))
		for i := range rows {
			out[i] = redactCase(rows[i].Spec)
		}
		c.JSON(http.StatusOK, list(out))
		return
	}
	c.Status(http.StatusOK)
	c.Header("Content-Type", mediaNDJSON)
	w := bufio.NewWriter(c.Writer)
	for i := range rows {
		var line bytes.Buffer
		if err := json.Compact(&line, redactCase(rows[i].Spec)); err != nil {
			s.log.Warn("suite: cases: stored case is not JSON", "suite_id", rows[i].SuiteID, "case_id", rows[i].CaseID)
			return
		}
		line.WriteByte('\n')
		if _, err := w.Write(line.Bytes()); err != nil {
			return // the client left
		}
	}
	_ = w.Flush()
}

// updateSuite replaces a suite's spec and cases and makes its schedule
// match the new document: created, updated or deleted. The schedule is
// synced first; if the store then refuses the suite, the schedule is put
// back as the old document had it.
func (s *server) updateSuite(c *gin.Context) {
	ctx := c.Request.Context()
	id := c.Param("id")
	spec, err := s.readSuite(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := pathID(c, "spec.id", &spec.ID); err != nil {
		s.fail(c, err)
		return
	}
	old, err := s.suiteOf(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.unredactSuite(ctx, spec, old); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.checkSuite(c, spec); err != nil {
		s.fail(c, err)
		return
	}
	oldSpec, err := storedSpec(old)
	if err != nil {
		s.fail(c, err)
		return
	}
	su, rows, err := suiteRows(spec)
	if err != nil {
		s.fail(c, err)
		return
	}
	su.AdminWritten = callerOf(c).admin()
	if err := s.cfg.Starter.SyncSchedule(ctx, id, spec.Schedule); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cfg.Store.UpdateSuite(ctx, su, rows); err != nil {
		cleanup(ctx, func(ctx context.Context) {
			if serr := s.cfg.Starter.SyncSchedule(ctx, id, oldSpec.Schedule); serr != nil {
				s.log.Error("suite: restore schedule after failed update", "suite_id", id, "error", serr.Error())
			}
		})
		s.fail(c, suiteError(err, spec))
		return
	}
	s.log.Info("suite updated", "suite_id", id, "cases", len(rows), "scheduled", spec.Schedule != nil)
	s.respondSuite(c, id, http.StatusOK)
}

// deleteSuite deletes the suite's schedule, then the suite and its cases.
// Its runs and their results stay. When Temporal cannot delete the
// schedule the suite is kept (503), so no schedule is left starting runs of
// a suite that is gone.
func (s *server) deleteSuite(c *gin.Context) {
	ctx := c.Request.Context()
	id := c.Param("id")
	su, err := s.suiteOf(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	spec, err := storedSpec(su)
	if err != nil {
		s.fail(c, err)
		return
	}
	// Always, not only when the document has a schedule: one left behind
	// by an earlier failure goes too. Only a suite whose document has a
	// schedule needs Temporal to be deleted, though.
	if err := s.cfg.Starter.DeleteSchedule(ctx, id); err != nil {
		if spec.Schedule != nil {
			s.fail(c, err)
			return
		}
		s.log.Warn("suite: delete a leftover schedule", "suite_id", id, "error", err.Error())
	}
	if err := s.cfg.Store.DeleteSuite(ctx, id); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("suite deleted", "suite_id", id)
	c.Status(http.StatusNoContent)
}

// Notes of schedules paused or resumed through the API.
const (
	pauseNote  = "paused through the API"
	resumeNote = "resumed through the API"
)

// scheduleOp acts on a suite's schedule: pause, resume or trigger. A suite
// without a schedule is 409 failed_precondition.
func (s *server) scheduleOp(op string) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx := c.Request.Context()
		su, err := s.suiteOf(c, c.Param("id"))
		if err != nil {
			s.fail(c, err)
			return
		}
		if op == "trigger" {
			// A triggered run makes workspaces as the caller would.
			if err := s.hostSuite(c, su); err != nil {
				s.fail(c, err)
				return
			}
		}
		spec, err := storedSpec(su)
		if err != nil {
			s.fail(c, err)
			return
		}
		if spec.Schedule == nil {
			s.fail(c, errs.E(errs.Precondition, "suite %s has no schedule", su.ID))
			return
		}
		status := http.StatusOK
		switch op {
		case "pause":
			err = s.cfg.Starter.PauseSchedule(ctx, su.ID, pauseNote)
		case "resume":
			err = s.cfg.Starter.ResumeSchedule(ctx, su.ID, resumeNote)
		default:
			err = s.cfg.Starter.TriggerSchedule(ctx, su.ID)
			status = http.StatusAccepted
		}
		if err != nil {
			s.fail(c, err)
			return
		}
		s.writeSuite(c, su, status)
	}
}
