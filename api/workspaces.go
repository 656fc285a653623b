package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/sessiontool"
	"github.com/primerhq/primer/starter"
	"github.com/primerhq/primer/wire"
)

// cleanupTimeout bounds the store calls that undo a half-done request after
// the request's own context may be gone.
const cleanupTimeout = 10 * time.Second

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

// validEnv checks a workspace's own env: variable names as exec's, values
// without NUL (the messages name the variable, never its value).
func validEnv(env map[string]string) error {
	if len(env) > 256 {
		return errs.Field("env", "env: at most 256 variables, got %d", len(env))
	}
	_, err := sessiontool.ExecOptions(env, "", "", sessiontool.Limits{DefaultExecTimeout: DefaultExecTimeout, MaxExecTimeout: MaxExecTimeout})
	return err
}

// withWorkspaceEnv is the env an exec or a process of w runs with: w's own
// env, and the request's over it.
func withWorkspaceEnv(w *wire.Workspace, env map[string]string) map[string]string {
	if len(w.Env) == 0 {
		return env
	}
	out := make(map[string]string, len(w.Env)+len(env))
	for k, v := range w.Env {
		out[k] = v
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

func (s *server) createWorkspace(c *gin.Context) {
	var spec wire.CreateWorkspaceRequest
	if err := s.decodeJSON(c, &spec, "", false); err != nil {
		s.fail(c, err)
		return
	}
	// A workspace from a snapshot may leave the template to the snapshot.
	var snap *wire.Snapshot
	if spec.SnapshotID != "" {
		got, err := s.snapshotForCreate(c, spec.SnapshotID)
		if err != nil {
			s.fail(c, err)
			return
		}
		snap = got
		if spec.TemplateID == "" {
			spec.TemplateID = snap.TemplateID
		}
	}
	if spec.TemplateID == "" {
		s.fail(c, errs.Field("template_id", "template_id: required"))
		return
	}
	if err := validLabels("labels", spec.Labels); err != nil {
		s.fail(c, err)
		return
	}
	if err := validEnv(spec.Env); err != nil {
		s.fail(c, err)
		return
	}
	ttl, err := parseTTL("ttl", spec.TTL)
	if err != nil {
		s.fail(c, err)
		return
	}
	// The template must be the caller's (404 naming the field, as for an
	// unknown one), and one on the host needs an admin.
	t, err := s.templateOf(c, spec.TemplateID)
	if err != nil {
		s.fail(c, asRef(err, "template_id", "template", spec.TemplateID))
		return
	}
	if err := hostTemplate(c, t); err != nil {
		s.fail(c, err)
		return
	}
	if err := checkTTL(t, ttl); err != nil {
		s.fail(c, err)
		return
	}
	if snap != nil {
		if err := s.templateFitsSnapshot(c.Request.Context(), "template_id", t, snap); err != nil {
			s.fail(c, err)
			return
		}
	}
	if spec.Egress != "" && spec.Egress != backend.EgressDenyAll {
		s.fail(c, backend.CheckEgress("egress", spec.Egress, ""))
		return
	}
	switch spec.ExpireAction {
	case "", wire.ExpireActionDelete:
		spec.ExpireAction = ""
	case wire.ExpireActionPause:
	default:
		s.fail(c, errs.Field("expire_action", "expire_action: %q is not one of %q, %q", spec.ExpireAction, wire.ExpireActionPause, wire.ExpireActionDelete))
		return
	}
	tenant := callerTenant(c)
	// Warm first: an idle member of a pool of the template (see takeWarm),
	// unless this workspace narrows its egress: a member was made with the
	// template's network, so only a template that closes it already fits.
	// A workspace from a snapshot is warm only from a pool filled from
	// that snapshot: other members hold the template's clean state.
	var w *wire.Workspace
	if spec.Egress == "" || backend.EgressOf(t.Backend) == backend.EgressDenyAll {
		w, err = s.takeWarm(c.Request.Context(), tenant, spec.TemplateID, spec.SnapshotID, spec.Labels)
		if err != nil {
			s.fail(c, err)
			return
		}
	}
	source := CreateWarm
	if w != nil {
		// Its life starts now: an idle pool member has no deadlines.
		if err := s.startLifetime(c.Request.Context(), w, ttl, 0); err != nil {
			s.fail(c, err)
			return
		}
		if len(spec.Env) > 0 {
			if err := s.cfg.Store.SetWorkspaceEnv(c.Request.Context(), w.ID, spec.Env); err != nil {
				s.fail(c, err)
				return
			}
			w.Env = spec.Env
		}
		if spec.Egress != "" {
			if err := s.cfg.Store.SetWorkspaceEgress(c.Request.Context(), w.ID, spec.Egress); err != nil {
				s.fail(c, err)
				return
			}
			w.Egress = spec.Egress
		}
		if spec.ExpireAction != "" {
			if err := s.cfg.Store.SetWorkspaceExpireAction(c.Request.Context(), w.ID, spec.ExpireAction); err != nil {
				s.fail(c, err)
				return
			}
			w.ExpireAction = spec.ExpireAction
		}
	}
	if w == nil {
		// The Starter resolves the template (400, field template_id, when it
		// does not exist), stores the row and starts its workflow; when the
		// workflow cannot be started it removes the row again (503).
		source = CreateCold
		w, err = s.cfg.Starter.CreateWorkspace(c.Request.Context(),
			starter.CreateWorkspaceRequest{TemplateID: spec.TemplateID, Labels: spec.Labels, Env: spec.Env, Egress: spec.Egress, TTL: ttl, TenantID: tenant,
				ExpireAction: spec.ExpireAction,
				ByAdmin:      callerOf(c).admin(), SnapshotID: spec.SnapshotID})
		if err != nil {
			s.fail(c, err)
			return
		}
	}
	c.Header("Location", "/v1/workspaces/"+w.ID)
	c.JSON(http.StatusCreated, wire.Created{Workspace: w, Source: source})
}

// phases are the values the phase filter accepts.
var phases = map[string]bool{
	wire.PhasePending: true, wire.PhaseRunning: true, wire.PhaseFailed: true,
	wire.PhaseEscalated: true, wire.PhaseTerminating: true, wire.PhasePaused: true,
}

func (s *server) listWorkspaces(c *gin.Context) {
	f := models.WorkspaceFilter{
		TenantID:   listTenant(c),
		TemplateID: c.Query("template_id"),
		ProviderID: c.Query("provider_id"),
		Backend:    c.Query("backend"),
		Phase:      c.Query("phase"),
		PoolID:     c.Query("pool_id"),
		PoolState:  c.Query("pool_state"),
	}
	if f.Phase != "" && !phases[f.Phase] {
		s.fail(c, errs.Field("phase", "phase: %q is not one of pending, running, paused, failed, escalated, terminating", f.Phase))
		return
	}
	switch f.PoolState {
	case "", wire.PoolIdle, wire.PoolLeased, wire.PoolReturning:
	default:
		s.fail(c, errs.Field("pool_state", "pool_state: %q is not one of idle, leased, returning", f.PoolState))
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
	w, err := s.workspaceOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, w)
}

// deleteWorkspace asks the workspace's workflow to destroy it. The
// Starter signals with start, so a workflow that is gone (a crashed worker,
// a terminated run) gets a fresh run that sees the delete and destroys
// what is left.
func (s *server) deleteWorkspace(c *gin.Context) {
	ctx := c.Request.Context()
	w, err := s.workspaceOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	const reason = "deleted by user"
	if err := s.cfg.Starter.DeleteWorkspace(ctx, w, reason); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("workspace delete requested", "workspace_id", w.ID)
	if w.PoolID != "" && w.PoolState == wire.PoolIdle {
		// An idle member going away leaves its pool short: let the pool
		// replace it now rather than at its next periodic pass.
		s.notifyPoolAsync(w.PoolID)
	}
	// The workflow owns the phase and records the change; the response
	// shows where the workspace is headed.
	if w.Phase != wire.PhaseTerminating {
		w.Phase = wire.PhaseTerminating
		w.Reason = reason
	}
	c.JSON(http.StatusAccepted, w)
}
