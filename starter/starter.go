// Package starter is the Temporal client side of Primer's workflows: it
// creates workspaces and runs (a row, then the workflow that owns it),
// signals, cancels and adopts them, and keeps each suite's schedule in step
// with its document. The API and the pool activities share one Starter, so a
// workspace is made the same way whoever asks. It sits between api/ and
// workflows/: workflows/ holds only the deterministic workflow code and the
// options their starts use.
package starter

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// cleanupTimeout bounds the store calls that undo a half-done create after
// the caller's own context may be gone.
const cleanupTimeout = 10 * time.Second

// Starter starts and signals Primer's workflows through a Temporal client.
// The API and the pool activities share it, so a workspace is created and
// deleted the same way whoever asks. It implements activities.Lifecycle.
type Starter struct {
	Temporal client.Client
	Store    *models.Store
	Logger   *slog.Logger
	// ProbeInterval is passed to every workspace workflow; zero lets the
	// workflow use its default.
	ProbeInterval time.Duration
	// PoolInterval is how often a pool workflow checks its pool without
	// being signalled; zero means DefaultPoolInterval.
	PoolInterval time.Duration
}

var _ activities.Lifecycle = (*Starter)(nil)

func (s *Starter) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// WorkspaceInput is what every start of a workspace's workflow carries: ids
// and the template's policy, never the token or template env. t may be nil
// (the template is gone): the policy defaults then.
func (s *Starter) WorkspaceInput(w *wire.Workspace, t *wire.Template) workflows.WorkspaceInput {
	in := workflows.WorkspaceInput{
		WorkspaceID:   w.ID,
		TemplateID:    w.TemplateID,
		ProviderID:    w.ProviderID,
		Backend:       w.Backend,
		ProbeInterval: s.ProbeInterval,
		PoolID:        w.PoolID,
		TenantID:      workflows.TenantOf(w.TenantID),
	}
	if t != nil {
		var common backend.Common
		// The template was validated when stored; a document that does not
		// decode here gets the default policy rather than no workspace.
		_ = json.Unmarshal(t.Backend, &common)
		p := common.Policy()
		in.Policy = &p
	}
	return in
}

// CreateWorkspaceRequest is what a workspace is made from: the API's
// create and lease, a pool's refill and an eval run's cold start ask for
// one the same way. The activities own it (a pool's refill runs there);
// the API names it here, so it talks to the starter and never reaches
// into activities.
type CreateWorkspaceRequest = activities.CreateWorkspaceRequest

// CreateWorkspace stores a new workspace of a template and starts its
// workflow. If the workflow cannot be started the row is removed again, so
// no workspace sits in pending with nothing to move it. The workspace
// belongs to req.TenantID (empty: the default tenant) and carries the
// template's CPU and memory limits, which the tenant's quotas sum: the
// store refuses it (Exhausted) when a quota is full.
func (s *Starter) CreateWorkspace(ctx context.Context, req activities.CreateWorkspaceRequest) (*wire.Workspace, error) {
	t, err := s.Store.GetTemplate(ctx, req.TemplateID)
	if errs.Is(err, errs.NotFound) {
		return nil, errs.Field("template_id", "template_id: template %s not found", req.TemplateID)
	}
	if err != nil {
		return nil, err
	}
	p, err := s.Store.GetProvider(ctx, t.ProviderID)
	if err != nil {
		return nil, errs.E(errs.KindOf(err), "template %s: provider %s: %w", t.ID, t.ProviderID, err)
	}
	if err := backend.CheckEgress("egress", req.Egress, p.Provider); err != nil {
		return nil, err
	}
	id := models.NewID("ws")
	cpu, mem := templateLimits(t.Backend)
	w := &wire.Workspace{
		ID:           id,
		TenantID:     workflows.TenantOf(req.TenantID),
		CPUCores:     cpu,
		MemoryBytes:  mem,
		TemplateID:   t.ID,
		ProviderID:   p.ID,
		Backend:      p.Provider,
		Phase:        wire.PhasePending,
		Labels:       req.Labels,
		Env:          req.Env,
		Egress:       req.Egress,
		ExpireAction: req.ExpireAction,
		WorkflowID:   workflows.WorkflowID(id),
		PoolID:       req.PoolID,
		ByAdmin:      req.ByAdmin,
		SnapshotID:   req.SnapshotID,
	}
	if req.PoolID != "" {
		w.PoolState = wire.PoolIdle
	}
	if err := startLifetime(w, t, req, time.Now()); err != nil {
		return nil, err
	}
	if err := s.Store.CreateWorkspace(ctx, w); err != nil {
		return nil, err
	}
	in := s.WorkspaceInput(w, t)
	if _, err := s.Temporal.ExecuteWorkflow(ctx, workflows.StartOptions(in), workflows.WorkspaceWorkflowName, in); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := s.Store.DeleteWorkspace(cctx, id); derr != nil && !errs.Is(derr, errs.NotFound) {
			s.logger().Error("workspace: remove row after failed start", "workspace_id", id, "error", derr.Error())
		}
		return nil, errs.E(errs.Unavailable, "workspace %s: start workflow: %w", id, err)
	}
	s.logger().Info("workspace created", "workspace_id", id, "tenant_id", w.TenantID, "template_id", t.ID,
		"provider_id", p.ID, "backend", p.Provider, "pool_id", req.PoolID)
	return w, nil
}

// DeleteWorkspace asks the workspace's workflow to destroy it. Signal-with-
// start reaches a workflow that is gone too (a crashed worker, a terminated
// run): a fresh run starts, sees the delete signal, and destroys what is
// left.
func (s *Starter) DeleteWorkspace(ctx context.Context, w *wire.Workspace, reason string) error {
	return s.signalWithStart(ctx, w, workflows.SignalDelete, workflows.DeleteSignal{Reason: reason})
}

// SignalWorkspace sends signal with arg to the workspace's workflow,
// starting a run when none is open (the row exists, so the workspace is
// not destroyed and needs a workflow).
func (s *Starter) SignalWorkspace(ctx context.Context, w *wire.Workspace, signal string, arg any) error {
	return s.signalWithStart(ctx, w, signal, arg)
}

func (s *Starter) signalWithStart(ctx context.Context, w *wire.Workspace, signal string, arg any) error {
	var t *wire.Template
	if got, err := s.Store.GetTemplate(ctx, w.TemplateID); err == nil {
		t = got
	}
	in := s.WorkspaceInput(w, t)
	opts := workflows.StartOptions(in)
	// The row still exists, so whatever closed the previous run (a failure,
	// a termination by an operator) did not destroy the workspace: a new run
	// is needed, even though creates never reuse the id. It must not
	// provision again over a sandbox that may exist: it starts from the
	// row's state instead.
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
	in.State = resumedState(w)
	if _, err := s.Temporal.SignalWithStartWorkflow(ctx, w.WorkflowID, signal, arg, opts, workflows.WorkspaceWorkflowName, in); err != nil {
		return errs.E(errs.Unavailable, "workspace %s: signal %s: %w", w.ID, signal, err)
	}
	return nil
}

// resumedState is the state a new run starts from when the previous run of
// a workspace's workflow is gone: the row's phase and handle.
func resumedState(w *wire.Workspace) *workflows.WorkspaceState {
	st := &workflows.WorkspaceState{Phase: w.Phase, Reason: w.Reason}
	if st.Phase == "" {
		st.Phase = wire.PhasePending
	}
	var h backend.Handle
	if len(w.Handle) > 0 && string(w.Handle) != "null" && json.Unmarshal(w.Handle, &h) == nil && h.Backend != "" {
		st.Handle = &h
	}
	if st.Phase == wire.PhaseTerminating {
		st.DeleteReason = w.Reason
	}
	return st
}

// StartPool starts the workflow of a pool unless it runs already.
func (s *Starter) StartPool(ctx context.Context, poolID string) error {
	in := workflows.PoolInput{PoolID: poolID, Interval: s.PoolInterval}
	tenant, err := s.poolTenant(ctx, poolID)
	if err != nil {
		return err
	}
	if _, err := s.Temporal.ExecuteWorkflow(ctx, workflows.PoolStartOptions(poolID, tenant), workflows.PoolWorkflowName, in); err != nil {
		return errs.E(errs.Unavailable, "pool %s: start workflow: %w", poolID, err)
	}
	return nil
}

// NotifyPool wakes a pool's workflow (starting it if needed) to look at
// its pool now: a workspace was leased or returned, or the pool or its
// template changed.
func (s *Starter) NotifyPool(ctx context.Context, poolID string) error {
	in := workflows.PoolInput{PoolID: poolID, Interval: s.PoolInterval}
	tenant, err := s.poolTenant(ctx, poolID)
	if err != nil {
		return err
	}
	if _, err := s.Temporal.SignalWithStartWorkflow(ctx, workflows.PoolWorkflowID(poolID), workflows.SignalPoolChanged,
		workflows.PoolChanged{}, workflows.PoolStartOptions(poolID, tenant), workflows.PoolWorkflowName, in); err != nil {
		return errs.E(errs.Unavailable, "pool %s: signal: %w", poolID, err)
	}
	return nil
}

// poolTenant is the tenant of a pool, for its workflow's PrimerTenant. A
// pool that is gone (its workflow is woken to see that) keeps the
// default: a run started for it only removes what is left.
func (s *Starter) poolTenant(ctx context.Context, poolID string) (string, error) {
	p, err := s.Store.GetPool(ctx, poolID)
	switch {
	case errs.Is(err, errs.NotFound):
		return wire.DefaultTenantID, nil
	case err != nil:
		return "", fmt.Errorf("pool %s: start workflow: %w", poolID, err)
	}
	return workflows.TenantOf(p.TenantID), nil
}

// StartReconciler starts the reconciler workflow unless it runs already.
func (s *Starter) StartReconciler(ctx context.Context, in workflows.ReconcilerInput) error {
	opts := client.StartWorkflowOptions{
		ID:                       workflows.ReconcilerWorkflowID,
		TaskQueue:                workflows.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
	if _, err := s.Temporal.ExecuteWorkflow(ctx, opts, workflows.ReconcilerWorkflowName, in); err != nil {
		return errs.E(errs.Unavailable, "reconciler: start workflow: %w", err)
	}
	return nil
}

// ReturnWorkspace gives a leased pool workspace, whose pool state is
// already returning, back to its workflow: it is reset and goes back to
// its pool, or is replaced.
func (s *Starter) ReturnWorkspace(ctx context.Context, w *wire.Workspace) error {
	return s.SignalWorkspace(ctx, w, workflows.SignalReturn, workflows.ReturnSignal{})
}
