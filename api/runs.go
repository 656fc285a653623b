package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/starter"
	"github.com/primerhq/primer/wire"
)

// defaultTriggeredBy is who made a run through the API when the request
// does not say.
const defaultTriggeredBy = "api"

// maxTriggeredBy bounds a run's triggered_by (the column's size).
const maxTriggeredBy = 200

// runStatuses are the statuses ?status= may ask for.
var runStatuses = map[string]bool{
	wire.RunPending: true, wire.RunRunning: true, wire.RunSucceeded: true,
	wire.RunCanceled: true, wire.RunFailed: true,
}

// runFinal reports whether a run has ended.
func runFinal(status string) bool {
	return status == wire.RunSucceeded || status == wire.RunCanceled || status == wire.RunFailed
}

// progress summarizes a run's results as they are now.
func (s *server) progress(ctx context.Context, runID string) (wire.Progress, error) {
	results, err := s.cfg.Store.ListCaseResults(ctx, runID, false)
	if err != nil {
		return wire.Progress{}, err
	}
	return eval.Summarize(results), nil
}

// runView returns r with its progress.
func (s *server) runView(ctx context.Context, r *wire.Run) (wire.RunView, error) {
	p, err := s.progress(ctx, r.ID)
	if err != nil {
		return wire.RunView{}, err
	}
	return wire.RunView{Run: *r, Progress: p}, nil
}

// createRun makes a run of a suite (its selected cases resolved and
// pending) and starts its workflow.
func (s *server) createRun(c *gin.Context) {
	var req wire.RunRequest
	if err := s.decodeJSON(c, &req, "", true); err != nil {
		s.fail(c, err)
		return
	}
	if err := validLabels("labels", req.Labels); err != nil {
		s.fail(c, err)
		return
	}
	if len(req.TriggeredBy) > maxTriggeredBy || !printable(req.TriggeredBy) {
		s.fail(c, errs.Field("triggered_by", "triggered_by: at most %d printable characters", maxTriggeredBy))
		return
	}
	if req.TriggeredBy == "" {
		req.TriggeredBy = defaultTriggeredBy
	}
	ctx := c.Request.Context()
	// Only a suite the caller sees; the run is the suite's tenant's. A
	// suite on the host runs only for an admin.
	su, err := s.suiteOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.hostSuite(c, su); err != nil {
		s.fail(c, err)
		return
	}
	run, err := s.cfg.Starter.CreateRun(ctx, starter.CreateRunRequest{
		SuiteID:     su.ID,
		Selection:   eval.Selection{Cases: req.Cases, Labels: req.Labels},
		Trigger:     wire.TriggerUser,
		TriggeredBy: req.TriggeredBy,
	})
	if err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("run created", "run_id", run.ID, "suite_id", run.SuiteID, "cases", run.Total, "triggered_by", req.TriggeredBy)
	v, err := s.runView(ctx, run)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Location", "/v1/runs/"+run.ID)
	c.JSON(http.StatusCreated, v)
}

// listRuns lists runs, newest first, by suite and status.
func (s *server) listRuns(c *gin.Context) {
	f := models.RunFilter{TenantID: listTenant(c), SuiteID: c.Query("suite_id"), Status: c.Query("status")}
	if f.Status != "" && !runStatuses[f.Status] {
		s.fail(c, errs.Field("status", "status: %q is not a run status (pending, running, succeeded, canceled, failed)", f.Status))
		return
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(c, errs.Field("limit", "limit: %q is not a non-negative integer", v))
			return
		}
		f.Limit = n
	}
	runs, err := s.cfg.Store.ListRuns(c.Request.Context(), f)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, list(runs))
}

func (s *server) getRun(c *gin.Context) {
	ctx := c.Request.Context()
	r, err := s.runOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.runView(ctx, r)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// cancelRun asks a run's workflow to stop; the answer is 202 with the run
// as it is now (the workflow cancels its cases and ends it canceled). A
// run that has ended is 409.
func (s *server) cancelRun(c *gin.Context) {
	ctx := c.Request.Context()
	id := c.Param("id")
	r, err := s.runOf(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	if runFinal(r.Status) {
		s.fail(c, errs.E(errs.Precondition, "run %s: already %s; only a pending or running run can be canceled", id, r.Status))
		return
	}
	if err := s.cfg.Starter.CancelRun(ctx, id); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("run cancel requested", "run_id", id, "suite_id", r.SuiteID)
	if r, err = s.cfg.Store.GetRun(ctx, id); err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.runView(ctx, r)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, v)
}
