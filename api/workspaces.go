package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/workflows"
)

// cleanupTimeout bounds the store calls that undo a half-done request after
// the request's own context may be gone.
const cleanupTimeout = 10 * time.Second

// workspaceSpec is the body of POST /v1/workspaces.
type workspaceSpec struct {
	TemplateID string            `json:"template_id"`
	Labels     map[string]string `json:"labels"`
}

// validLabels keeps labels (and session metadata) small and printable: they are shown in tables and
// filtered on, not a place for data.
func validLabels(field string, labels map[string]string) error {
	if len(labels) > 64 {
		return errs.Field(field, "%s: at most 64 entries, got %d", field, len(labels))
	}
	for k, v := range labels {
		if k == "" || len(k) > 128 || !printable(k) {
			return errs.Field(field, "%s: key %q must be 1-128 printable characters", field, k)
		}
		if len(v) > 1024 || !printable(v) {
			return errs.Field(field+"."+k, "%s.%s: value must be at most 1024 printable characters", field, k)
		}
	}
	return nil
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// workflowInput is what every start of a workspace's workflow carries: ids
// only, never the token or template env.
func (s *server) workflowInput(w *models.Workspace) workflows.WorkspaceInput {
	return workflows.WorkspaceInput{
		WorkspaceID:   w.ID,
		TemplateID:    w.TemplateID,
		ProviderID:    w.ProviderID,
		Backend:       w.Backend,
		ProbeInterval: s.cfg.ProbeInterval,
	}
}

func (s *server) createWorkspace(c *gin.Context) {
	var spec workspaceSpec
	if err := s.decodeJSON(c, &spec, "", false); err != nil {
		s.fail(c, err)
		return
	}
	if spec.TemplateID == "" {
		s.fail(c, errs.Field("template_id", "template_id: required"))
		return
	}
	if err := validLabels("labels", spec.Labels); err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	t, err := s.cfg.Store.GetTemplate(ctx, spec.TemplateID)
	if errs.Is(err, errs.NotFound) {
		s.fail(c, errs.Field("template_id", "template_id: template %s not found", spec.TemplateID))
		return
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	p, err := s.cfg.Store.GetProvider(ctx, t.ProviderID)
	if err != nil {
		s.fail(c, errs.E(errs.KindOf(err), "template %s: provider %s: %w", t.ID, t.ProviderID, err))
		return
	}
	id := models.NewID("ws")
	w := &models.Workspace{
		ID:         id,
		TemplateID: t.ID,
		ProviderID: p.ID,
		Backend:    p.Provider,
		Phase:      models.PhasePending,
		Labels:     spec.Labels,
		WorkflowID: workflows.WorkflowID(id),
	}
	if err := s.cfg.Store.CreateWorkspace(ctx, w); err != nil {
		s.fail(c, err)
		return
	}
	in := s.workflowInput(w)
	if _, err := s.cfg.Temporal.ExecuteWorkflow(ctx, workflows.StartOptions(in), workflows.WorkspaceWorkflowName, in); err != nil {
		// Without its workflow the row would sit in pending forever: take
		// it back, on a context that outlives a canceled request.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := s.cfg.Store.DeleteWorkspace(cctx, id); derr != nil && !errs.Is(derr, errs.NotFound) {
			s.log.Error("workspace: remove row after failed start", "workspace_id", id, "error", derr.Error())
		}
		s.fail(c, errs.E(errs.Unavailable, "workspace %s: start workflow: %w", id, err))
		return
	}
	s.log.Info("workspace created", "workspace_id", id, "template_id", t.ID, "provider_id", p.ID, "backend", p.Provider)
	c.Header("Location", "/v1/workspaces/"+id)
	c.JSON(http.StatusCreated, w)
}

// phases are the values the phase filter accepts.
var phases = map[string]bool{
	models.PhasePending: true, models.PhaseRunning: true, models.PhaseFailed: true, models.PhaseTerminating: true,
}

func (s *server) listWorkspaces(c *gin.Context) {
	f := models.WorkspaceFilter{
		TemplateID: c.Query("template_id"),
		ProviderID: c.Query("provider_id"),
		Backend:    c.Query("backend"),
		Phase:      c.Query("phase"),
	}
	if f.Phase != "" && !phases[f.Phase] {
		s.fail(c, errs.Field("phase", "phase: %q is not one of pending, running, failed, terminating", f.Phase))
		return
	}
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			s.fail(c, errs.Field("limit", "limit: %q is not a non-negative integer", l))
			return
		}
		f.Limit = n
	}
	ws, err := s.cfg.Store.ListWorkspaces(c.Request.Context(), f)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, list(ws))
}

func (s *server) getWorkspace(c *gin.Context) {
	w, err := s.cfg.Store.GetWorkspace(c.Request.Context(), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, w)
}

// deleteWorkspace asks the workspace's workflow to destroy it. Signal-with-
// start reaches a workflow that is gone too (a crashed worker, a terminated
// run): a fresh run starts, sees the delete signal, and destroys what is left.
func (s *server) deleteWorkspace(c *gin.Context) {
	ctx := c.Request.Context()
	w, err := s.cfg.Store.GetWorkspace(ctx, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	in := s.workflowInput(w)
	opts := workflows.StartOptions(in)
	// The row still exists, so whatever closed the previous run (a failure,
	// a termination by an operator) did not destroy the workspace: a new run
	// is needed to do it, even though creates never reuse the id.
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
	_, err = s.cfg.Temporal.SignalWithStartWorkflow(ctx, w.WorkflowID, workflows.SignalDelete,
		workflows.DeleteSignal{Reason: "deleted by user"}, opts, workflows.WorkspaceWorkflowName, in)
	if err != nil {
		s.fail(c, errs.E(errs.Unavailable, "workspace %s: signal delete: %w", w.ID, err))
		return
	}
	s.log.Info("workspace delete requested", "workspace_id", w.ID)
	// The workflow owns the phase and records the change; the response
	// shows where the workspace is headed.
	if w.Phase != models.PhaseTerminating {
		w.Phase = models.PhaseTerminating
		w.Reason = "deleted by user"
	}
	c.JSON(http.StatusAccepted, w)
}
