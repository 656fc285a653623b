package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/starter"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// backgroundTimeout bounds the work a request leaves behind after it has
// answered (waking a pool, recording a lease event).
const backgroundTimeout = 30 * time.Second

// Lease sources: the label of metrics.Leases and the "source" of a lease
// response.
const (
	LeaseWarm = "warm" // an idle workspace of the pool, running already
	LeaseCold = "cold" // a new workspace, because the pool had none idle
)

// checkPoolSpec validates the fields the API owns; the store checks again.
func checkPoolSpec(p wire.PoolSpec) error {
	if p.TemplateID == "" {
		return errs.Field("template_id", "template_id: required")
	}
	if p.Size < 0 || p.Size > wire.MaxPoolSize {
		return errs.Field("size", "size: %d is out of range: want 1 to %d (0 or absent: %d)",
			p.Size, wire.MaxPoolSize, wire.DefaultPoolSize)
	}
	_, err := parseTTL("lease_ttl", p.LeaseTTL)
	return err
}

// poolError gives a store error about a pool's template its API meaning:
// an unknown template is 404 naming the field template_id, as it is for
// workspaces, not a missing pool.
func poolError(err error, templateID string) error {
	if errs.Is(err, errs.NotFound) && errs.FieldOf(err) == "template_id" {
		return unknownRef("template_id", "template", templateID)
	}
	return err
}

// status counts the pool's workspaces.
func (s *server) poolStatus(ctx context.Context, poolID string) (wire.PoolStatus, error) {
	var st wire.PoolStatus
	ws, err := s.cfg.Store.ListWorkspaces(ctx, models.WorkspaceFilter{PoolID: poolID})
	if err != nil {
		return st, err
	}
	for _, w := range ws {
		switch {
		case w.PoolState == wire.PoolLeased:
			st.Leased++
		case w.PoolState == wire.PoolReturning:
			st.Returning++
		case w.PoolState != wire.PoolIdle:
		case w.Phase == wire.PhaseRunning:
			st.Idle++
		case w.Phase == wire.PhasePending:
			st.Starting++
		}
		// Idle members that failed or are terminating are on their way
		// out: the pool replaces them and they are not counted.
	}
	return st, nil
}

// view returns p with its live counts.
func (s *server) view(ctx context.Context, p *wire.Pool) (wire.PoolView, error) {
	st, err := s.poolStatus(ctx, p.ID)
	if err != nil {
		return wire.PoolView{}, err
	}
	return wire.PoolView{Pool: *p, Status: st}, nil
}

// background runs fn after the response, on a context that does not end
// with the request, bounded by backgroundTimeout. Tests wait for it with
// s.bg.Wait.
func (s *server) background(ctx context.Context, fn func(ctx context.Context)) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backgroundTimeout)
		defer cancel()
		fn(ctx)
	}()
}

// notifyPoolAsync wakes a pool's workflow without making the caller wait.
// A failure is only logged: the workflow looks at its pool every few
// seconds anyway, so a lost wake-up delays the refill, nothing more.
func (s *server) notifyPoolAsync(poolID string) {
	s.background(context.Background(), func(ctx context.Context) {
		if err := s.cfg.Starter.NotifyPool(ctx, poolID); err != nil {
			s.log.Warn("pool: wake workflow", "pool_id", poolID, "error", err.Error())
		}
	})
}

// notifyPool wakes a pool's workflow and waits for the signal to be
// accepted; failures are logged (see notifyPoolAsync).
func (s *server) notifyPool(ctx context.Context, poolID string) {
	if err := s.cfg.Starter.NotifyPool(ctx, poolID); err != nil {
		s.log.Warn("pool: wake workflow", "pool_id", poolID, "error", err.Error())
	}
}

func (s *server) createPool(c *gin.Context) {
	var spec wire.PoolSpec
	if err := s.decodeJSON(c, &spec, "", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := validID("id", spec.ID); err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	if err := s.checkPool(c, spec); err != nil {
		s.fail(c, err)
		return
	}
	// Who wrote it decides whether its refills may reach the host
	// (activities/host_rule.go).
	p := &wire.Pool{ID: spec.ID, TemplateID: spec.TemplateID, Size: spec.Size, LeaseTTL: spec.LeaseTTL,
		TenantID: callerTenant(c), AdminWritten: callerOf(c).admin(), SnapshotID: spec.SnapshotID}
	if err := s.cfg.Store.CreatePool(ctx, p); err != nil {
		s.fail(c, poolError(err, spec.TemplateID))
		return
	}
	if err := s.cfg.Starter.StartPool(ctx, p.ID); err != nil {
		// A pool without its workflow would never fill: take the row
		// back, on a context that outlives a canceled request.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := s.cfg.Store.DeletePool(cctx, p.ID); derr != nil && !errs.Is(derr, errs.NotFound) {
			s.log.Error("pool: remove row after failed start", "pool_id", p.ID, "error", derr.Error())
		}
		s.fail(c, err)
		return
	}
	s.log.Info("pool created", "pool_id", p.ID, "template_id", p.TemplateID, "size", p.Size)
	c.Header("Location", "/v1/pools/"+p.ID)
	c.JSON(http.StatusCreated, wire.PoolView{Pool: *p})
}

func (s *server) listPools(c *gin.Context) {
	ctx := c.Request.Context()
	ps, err := s.cfg.Store.ListPools(ctx, c.Query("template_id"), listTenant(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]wire.PoolView, 0, len(ps))
	for i := range ps {
		v, err := s.view(ctx, &ps[i])
		if err != nil {
			s.fail(c, err)
			return
		}
		out = append(out, v)
	}
	c.JSON(http.StatusOK, list(out))
}

func (s *server) getPool(c *gin.Context) {
	ctx := c.Request.Context()
	p, err := s.poolOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.view(ctx, p)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

func (s *server) updatePool(c *gin.Context) {
	id := c.Param("id")
	var spec wire.PoolSpec
	if err := s.decodeJSON(c, &spec, "", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := pathID(c, "id", &spec.ID); err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	if _, err := s.poolOf(c, id); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.checkPool(c, spec); err != nil {
		s.fail(c, err)
		return
	}
	p := &wire.Pool{ID: id, TemplateID: spec.TemplateID, Size: spec.Size, LeaseTTL: spec.LeaseTTL,
		AdminWritten: callerOf(c).admin(), SnapshotID: spec.SnapshotID}
	if err := s.cfg.Store.UpdatePool(ctx, p); err != nil {
		s.fail(c, poolError(err, spec.TemplateID))
		return
	}
	// The pool workflow grows, shrinks or rolls the pool over to the new
	// template on its next pass; wake it so that pass is now.
	s.notifyPool(ctx, id)
	s.log.Info("pool updated", "pool_id", p.ID, "template_id", p.TemplateID, "size", p.Size)
	v, err := s.view(ctx, p)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// deletePool removes the pool row and wakes its workflow, whose last pass
// deletes the idle members and leaves the leased ones to their lessees
// (detached from the pool). The answer is 202: that happens after it.
func (s *server) deletePool(c *gin.Context) {
	ctx := c.Request.Context()
	id := c.Param("id")
	p, err := s.poolOf(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.view(ctx, p)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cfg.Store.DeletePool(ctx, id); err != nil {
		s.fail(c, err)
		return
	}
	// The row is gone whatever happens next, so a failed wake-up is not an
	// error of this request: the workflow notices on its next periodic pass.
	s.notifyPool(ctx, id)
	s.log.Info("pool deleted", "pool_id", id)
	c.JSON(http.StatusAccepted, v)
}

// leasePool hands out a workspace of the pool: an idle running one when
// there is one (warm, 200), else a new plain workspace of the pool's
// template (cold, 201, still pending). This is the hot path: one UPDATE
// for a warm lease, and nothing else before the answer; waking the pool to
// refill and recording the event happen after it.
func (s *server) leasePool(c *gin.Context) {
	var spec wire.LeaseRequest
	if err := s.decodeJSON(c, &spec, "", true); err != nil {
		s.fail(c, err)
		return
	}
	if err := validLabels("labels", spec.Labels); err != nil {
		s.fail(c, err)
		return
	}
	leaseTTL, err := parseTTL("lease_ttl", spec.LeaseTTL)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	poolID := c.Param("id")
	// The pool must be the caller's, and one on the host needs an admin.
	p, err := s.poolOf(c, poolID)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.hostPool(c, p); err != nil {
		s.fail(c, err)
		return
	}
	w, err := s.cfg.Store.LeaseWorkspace(ctx, poolID)
	if err != nil {
		s.fail(c, err)
		return
	}
	if w != nil && wire.IsHostBackend(w.Backend) && !callerOf(c).admin() {
		// An idle member made before the template left the host: it goes
		// back to the pool (which replaces it), not to a member.
		if err := s.cfg.Store.SetPoolState(ctx, w.ID, wire.PoolLeased, wire.PoolIdle); err != nil {
			s.log.Warn("pool: give back a host member", "pool_id", poolID, "workspace_id", w.ID, "error", err.Error())
		}
		s.fail(c, errs.E(errs.Forbidden, "pool %s: workspace %s is on host backend %s, which runs code on the Primer host; only an admin may lease it", poolID, w.ID, w.Backend))
		return
	}
	source, status := LeaseWarm, http.StatusOK
	if w == nil {
		// A cold lease's workspace is the pool's tenant's, as its members are.
		w, err = s.cfg.Starter.CreateWorkspace(ctx, starter.CreateWorkspaceRequest{
			TemplateID: p.TemplateID, Labels: spec.Labels, LeaseTTL: s.leaseTTL(ctx, p, leaseTTL, poolID),
			TenantID: p.TenantID, ByAdmin: callerOf(c).admin(),
		})
		if err != nil {
			s.fail(c, err)
			return
		}
		source, status = LeaseCold, http.StatusCreated
		c.Header("Location", "/v1/workspaces/"+w.ID)
	}
	if source == LeaseWarm {
		// The lessee has the workspace now whatever happens: a lease
		// without deadlines beats a lease nobody got the answer of.
		if err := s.startLifetime(ctx, w, 0, s.leaseTTL(ctx, p, leaseTTL, poolID)); err != nil {
			s.log.Warn("pool: start lease deadlines", "pool_id", poolID, "workspace_id", w.ID, "error", err.Error())
		}
	}
	if source == LeaseWarm && len(spec.Labels) > 0 {
		if err := s.cfg.Store.SetWorkspaceLabels(ctx, w.ID, spec.Labels); err != nil {
			s.fail(c, err)
			return
		}
		w.Labels = spec.Labels
	}
	s.cfg.Metrics.Leases.WithLabelValues(source).Inc()
	wsID := w.ID
	s.background(ctx, func(ctx context.Context) {
		select {
		case <-time.After(s.leaseWake):
		case <-ctx.Done():
		}
		if err := s.cfg.Starter.NotifyPool(ctx, poolID); err != nil {
			s.log.Warn("pool: wake workflow after lease", "pool_id", poolID, "error", err.Error())
		}
		data, _ := json.Marshal(map[string]string{"pool_id": poolID, "source": source})
		if err := s.cfg.Store.AppendEvent(ctx, &wire.Event{WorkspaceID: wsID, Type: wire.EventLeased, Data: data}); err != nil {
			s.log.Warn("pool: record lease event", "pool_id", poolID, "workspace_id", wsID, "error", err.Error())
		}
	})
	s.log.Info("workspace leased", "pool_id", poolID, "workspace_id", wsID, "source", source)
	c.JSON(status, wire.Lease{Workspace: w, Source: source})
}

// returnWorkspace gives a leased pool workspace back: its pool state moves
// to returning, and its workflow resets it and puts it back in the pool
// (or replaces it).
func (s *server) returnWorkspace(c *gin.Context) {
	ctx := c.Request.Context()
	w, err := s.workspaceOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if w.PoolID == "" {
		s.fail(c, errs.E(errs.Precondition, "workspace %s: not in a pool; only a workspace leased from a pool can be returned (delete it instead)", w.ID))
		return
	}
	if w.PoolState != wire.PoolLeased {
		s.fail(c, errs.E(errs.Precondition, "workspace %s: pool state is %s, not leased; only a leased workspace can be returned", w.ID, w.PoolState))
		return
	}
	if err := s.cfg.Store.SetPoolState(ctx, w.ID, wire.PoolLeased, wire.PoolReturning); err != nil {
		if errs.Is(err, errs.Conflict) {
			// Returned (or detached) by someone else since the read.
			err = errs.E(errs.Precondition, "workspace %s: cannot return: %s", w.ID, err.Error())
		}
		s.fail(c, err)
		return
	}
	if err := s.cfg.Starter.SignalWorkspace(ctx, w, workflows.SignalReturn, workflows.ReturnSignal{}); err != nil {
		// Nothing will reset it: the lessee keeps it, as before the call.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if rerr := s.cfg.Store.SetPoolState(cctx, w.ID, wire.PoolReturning, wire.PoolLeased); rerr != nil {
			s.log.Error("workspace: roll back pool state after failed return", "workspace_id", w.ID, "error", rerr.Error())
		}
		s.fail(c, err)
		return
	}
	s.log.Info("workspace returned", "workspace_id", w.ID, "pool_id", w.PoolID)
	w.PoolState = wire.PoolReturning
	c.JSON(http.StatusAccepted, w)
}

// recoverReason is what a recovery asked for through the API records.
const recoverReason = "requested by user"

// recoverWorkspace asks an escalated or failed workspace's workflow to try
// a replacement now.
func (s *server) recoverWorkspace(c *gin.Context) {
	ctx := c.Request.Context()
	w, err := s.workspaceOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if w.Phase != wire.PhaseEscalated && w.Phase != wire.PhaseFailed {
		s.fail(c, errs.E(errs.Precondition, "workspace %s: is %s; only an escalated or failed workspace can be recovered", w.ID, w.Phase))
		return
	}
	if err := s.cfg.Starter.SignalWorkspace(ctx, w, workflows.SignalRecover, workflows.RecoverSignal{Reason: recoverReason}); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("workspace recovery requested", "workspace_id", w.ID, "phase", w.Phase)
	c.JSON(http.StatusAccepted, w)
}

// checkPool checks a pool document and that its template is the caller's
// (404 naming template_id otherwise, as for an unknown one), may be used by
// the caller (a host backend needs an admin) and can be pooled.
func (s *server) checkPool(c *gin.Context, spec wire.PoolSpec) error {
	if err := checkPoolSpec(spec); err != nil {
		return err
	}
	t, err := s.templateOf(c, spec.TemplateID)
	if err != nil {
		return asRef(err, "template_id", "template", spec.TemplateID)
	}
	if err := hostTemplate(c, t); err != nil {
		return err
	}
	if spec.SnapshotID != "" {
		// Members are made from it as they are needed, so it must be
		// ready now (a creating one could still fail).
		snap, err := s.snapshotForCreate(c, spec.SnapshotID)
		if err != nil {
			return err
		}
		if snap.Phase != wire.SnapshotReady {
			return errs.Field("snapshot_id", "snapshot_id: snapshot %s is %s; a pool fills only from a ready snapshot", snap.ID, snap.Phase)
		}
		if err := s.templateFitsSnapshot(c.Request.Context(), "snapshot_id", t, snap); err != nil {
			return err
		}
	}
	return s.poolableTemplate(c.Request.Context(), spec.TemplateID)
}

// poolableTemplate refuses pools on backends whose workspaces cannot be
// reset on return: a worktree workspace is a git checkout of the user's
// repository, and a reset empties the workspace.
func (s *server) poolableTemplate(ctx context.Context, templateID string) error {
	t, err := s.cfg.Store.GetTemplate(ctx, templateID)
	if err != nil {
		// Unknown templates get the store's error, naming the field.
		return nil
	}
	p, err := s.cfg.Store.GetProvider(ctx, t.ProviderID)
	if err != nil {
		return nil
	}
	if p.Provider == wire.BackendWorktree {
		return errs.Field("template_id", "template_id: template %s is on a worktree provider; warm pools need workspaces that can be reset (local, container)", templateID)
	}
	return nil
}
