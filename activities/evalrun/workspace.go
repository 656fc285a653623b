package evalrun

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// acquireMargin is added to a template's start timeout to bound the wait
// for an acquired workspace to run.
const acquireMargin = 30 * time.Second

// AcquireWorkspaceInput asks for a workspace for one slot of a run.
type AcquireWorkspaceInput struct {
	RunID string
	Slot  int
}

// AcquireWorkspaceOutput is the running workspace the slot holds now.
type AcquireWorkspaceOutput struct {
	WorkspaceID string
	// Warm is true for a workspace leased from the suite's pool.
	Warm bool
}

// AcquireWorkspace gets a running workspace for a slot of a run: a warm
// lease from the suite's pool (or, when the pool has none idle, a plain
// workspace of the pool's template, deleted at release), or a new
// workspace of the suite's template. It is labelled with the run and slot
// (LabelRun, LabelSlot), and a retry reuses the workspace an earlier
// attempt labelled. It waits (heartbeating) for the workspace to run,
// within the template's start timeout; one that fails to start is
// deleted and the error is retryable.
func (a *Activities) AcquireWorkspace(ctx context.Context, in AcquireWorkspaceInput) (AcquireWorkspaceOutput, error) {
	defer activities.KeepAlive(ctx)()
	out, err := a.acquireWorkspace(ctx, in)
	if err != nil {
		return AcquireWorkspaceOutput{}, activities.Classify(err)
	}
	return out, nil
}

func (a *Activities) acquireWorkspace(ctx context.Context, in AcquireWorkspaceInput) (AcquireWorkspaceOutput, error) {
	if a.Lifecycle == nil {
		return AcquireWorkspaceOutput{}, errs.E(errs.Invalid, "run %s: acquire: no lifecycle configured", in.RunID)
	}
	run, err := a.Store.GetRun(ctx, in.RunID)
	if err != nil {
		return AcquireWorkspaceOutput{}, fmt.Errorf("run %s: acquire: %w", in.RunID, err)
	}
	ss, err := runSpec(run)
	if err != nil {
		return AcquireWorkspaceOutput{}, err
	}
	ws, err := a.heldWorkspace(ctx, run.ID, in.Slot)
	if err != nil {
		return AcquireWorkspaceOutput{}, err
	}
	labels := map[string]string{LabelRun: run.ID, LabelSlot: strconv.Itoa(in.Slot)}
	if ws == nil {
		// From here to the labels being stored the workspace must not be
		// lost to a cancellation: it would be held by nobody.
		nctx := context.WithoutCancel(ctx)
		switch {
		case ss.PoolID != "":
			pool, err := a.Store.GetPool(nctx, ss.PoolID)
			if err != nil {
				return AcquireWorkspaceOutput{}, fmt.Errorf("run %s: acquire: pool %s: %w", run.ID, ss.PoolID, err)
			}
			if err := a.mayLeaseFor(nctx, run, pool); err != nil {
				return AcquireWorkspaceOutput{}, err
			}
			// The run's labels are set by the lease itself: a workspace it
			// leased always says so, and FinishRun finds it.
			ws, err = a.Store.LeaseWorkspaceLabelled(nctx, ss.PoolID, labels)
			if err != nil {
				return AcquireWorkspaceOutput{}, fmt.Errorf("run %s: acquire: pool %s: %w", run.ID, ss.PoolID, err)
			}
			if ws != nil {
				if err := a.Lifecycle.NotifyPool(nctx, ss.PoolID); err != nil {
					a.logger().Warn("notify pool after lease", "run_id", run.ID, "pool_id", ss.PoolID, "error", err)
				}
				break
			}
			p, err := a.Store.GetPool(nctx, ss.PoolID)
			if err != nil {
				return AcquireWorkspaceOutput{}, fmt.Errorf("run %s: acquire: pool %s: %w", run.ID, ss.PoolID, err)
			}
			ws, err = a.Lifecycle.CreateWorkspace(nctx, activities.CreateWorkspaceRequest{TenantID: run.TenantID, TemplateID: p.TemplateID, Labels: labels, ByAdmin: run.ByAdmin})
			if err != nil {
				return AcquireWorkspaceOutput{}, fmt.Errorf("run %s: acquire: pool %s: create a cold workspace: %w", run.ID, ss.PoolID, err)
			}
		default:
			ws, err = a.Lifecycle.CreateWorkspace(nctx, activities.CreateWorkspaceRequest{TenantID: run.TenantID, TemplateID: ss.TemplateID, Labels: labels, ByAdmin: run.ByAdmin})
			if err != nil {
				return AcquireWorkspaceOutput{}, fmt.Errorf("run %s: acquire: %w", run.ID, err)
			}
		}
		a.logger().Info("run acquired a workspace", "run_id", run.ID, "slot", in.Slot, "workspace_id", ws.ID,
			"warm", ws.PoolID != "")
	}
	if err := a.awaitRunning(ctx, run.ID, ws); err != nil {
		return AcquireWorkspaceOutput{}, err
	}
	return AcquireWorkspaceOutput{WorkspaceID: ws.ID, Warm: ws.PoolID != ""}, nil
}

// heldWorkspace returns the workspace an earlier attempt acquired for the
// slot, if one is still usable; one that failed is released on the way.
func (a *Activities) heldWorkspace(ctx context.Context, runID string, slot int) (*wire.Workspace, error) {
	held, err := a.runWorkspaces(ctx, runID, slot)
	if err != nil {
		return nil, err
	}
	for i := range held {
		ws := &held[i]
		switch ws.Phase {
		case wire.PhasePending, wire.PhaseRunning:
			return ws, nil
		default:
			if _, err := a.release(ctx, runID, ws, true); err != nil {
				return nil, err
			}
		}
	}
	return nil, nil
}

// awaitRunning polls the workspace until it runs, within its template's
// start timeout and a margin. One that fails, escalates or goes away is
// released and the error is retryable: the next attempt gets another.
func (a *Activities) awaitRunning(ctx context.Context, runID string, ws *wire.Workspace) error {
	if ws.Phase == wire.PhaseRunning {
		return nil
	}
	limit := acquireMargin
	if common, err := activities.TemplateCommon(ctx, a.Store, ws.TemplateID); err == nil {
		limit += common.Policy().StartTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	delay := 50 * time.Millisecond
	for {
		cur, err := a.Store.GetWorkspace(wctx, ws.ID)
		switch {
		case errs.Is(err, errs.NotFound):
			return errs.E(errs.Unavailable, "run %s: acquire: workspace %s went away before it ran", runID, ws.ID)
		case err == nil && cur.Phase == wire.PhaseRunning:
			return nil
		case err == nil && cur.Phase != wire.PhasePending:
			if _, rerr := a.release(ctx, runID, cur, true); rerr != nil {
				a.logger().Warn("release a workspace that did not start", "run_id", runID, "workspace_id", ws.ID, "error", rerr)
			}
			return errs.E(errs.Unavailable, "run %s: acquire: workspace %s did not start: %s: %s", runID, ws.ID, cur.Phase, cur.Reason)
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if cur, err := a.Store.GetWorkspace(ctx, ws.ID); err == nil {
				if _, rerr := a.release(ctx, runID, cur, true); rerr != nil {
					a.logger().Warn("release a workspace that did not start", "run_id", runID, "workspace_id", ws.ID, "error", rerr)
				}
			}
			return errs.E(errs.Unavailable, "run %s: acquire: workspace %s did not run within %s", runID, ws.ID, limit)
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// runWorkspaces lists the workspaces labelled with the run (and slot, when
// slot >= 0) that are not already being deleted. Labels are not indexed:
// it reads every workspace, which a run does once per slot and at its end.
func (a *Activities) runWorkspaces(ctx context.Context, runID string, slot int) ([]wire.Workspace, error) {
	all, err := a.Store.ListWorkspaces(ctx, models.WorkspaceFilter{})
	if err != nil {
		return nil, fmt.Errorf("run %s: list workspaces: %w", runID, err)
	}
	var out []wire.Workspace
	for _, ws := range all {
		if ws.Labels[LabelRun] != runID || ws.Phase == wire.PhaseTerminating {
			continue
		}
		if slot >= 0 && ws.Labels[LabelSlot] != strconv.Itoa(slot) {
			continue
		}
		out = append(out, ws)
	}
	// Oldest first, so a slot's earlier workspace is found first.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// ReleaseWorkspaceInput gives a run's workspace up.
type ReleaseWorkspaceInput struct {
	RunID       string
	WorkspaceID string
	// Broken deletes a leased pool workspace (its pool replaces it)
	// instead of returning it.
	Broken bool
}

// ReleaseWorkspaceOutput says what became of the workspace.
type ReleaseWorkspaceOutput struct {
	Released bool
}

// ReleaseWorkspace gives a workspace of a run up: a leased pool workspace
// goes back to its pool (which resets it) without the run's labels, or is
// deleted when Broken; any other workspace (a template suite's, a cold
// lease) is deleted. It is idempotent: a workspace gone, being deleted, or
// no longer the run's is left alone.
func (a *Activities) ReleaseWorkspace(ctx context.Context, in ReleaseWorkspaceInput) (ReleaseWorkspaceOutput, error) {
	ws, err := a.Store.GetWorkspace(ctx, in.WorkspaceID)
	if errs.Is(err, errs.NotFound) {
		return ReleaseWorkspaceOutput{}, nil
	}
	if err != nil {
		return ReleaseWorkspaceOutput{}, activities.Classify(fmt.Errorf("run %s: release workspace %s: %w", in.RunID, in.WorkspaceID, err))
	}
	released, err := a.release(ctx, in.RunID, ws, in.Broken)
	if err != nil {
		return ReleaseWorkspaceOutput{}, activities.Classify(err)
	}
	return ReleaseWorkspaceOutput{Released: released}, nil
}

// release gives up one workspace of the run; released is false when there
// was nothing to do.
func (a *Activities) release(ctx context.Context, runID string, ws *wire.Workspace, broken bool) (released bool, err error) {
	if a.Lifecycle == nil {
		return false, errs.E(errs.Invalid, "run %s: release: no lifecycle configured", runID)
	}
	ours := ws.Labels[LabelRun] == runID
	inPool := ws.PoolID != "" && (ws.PoolState == wire.PoolLeased || ws.PoolState == wire.PoolReturning)
	switch {
	case ws.Phase == wire.PhaseTerminating:
		return false, nil
	case inPool && ws.PoolState == wire.PoolReturning:
		// An earlier attempt began the return; a return signal more is
		// harmless, a missing one would leave it returning for good.
		if !ours && ws.Labels[LabelRun] != "" {
			return false, nil
		}
	case !ours:
		return false, nil
	}
	if !inPool || broken || ws.Phase != wire.PhaseRunning {
		reason := fmt.Sprintf("eval run %s: done with it", runID)
		if broken {
			reason = fmt.Sprintf("eval run %s: broken while running a case", runID)
		}
		// The delete is a signal: the workspace turns terminating a moment
		// later. Until then it must not be found as the slot's workspace
		// (an acquire would take the broken one back), so the slot label
		// goes first; the run label stays, so the run's finish still finds
		// it should the delete not go through.
		if _, held := ws.Labels[LabelSlot]; ours && held {
			labels := maps.Clone(ws.Labels)
			delete(labels, LabelSlot)
			if err := a.Store.SetWorkspaceLabels(ctx, ws.ID, labels); err != nil {
				return false, fmt.Errorf("run %s: release workspace %s: labels: %w", runID, ws.ID, err)
			}
		}
		if err := a.Lifecycle.DeleteWorkspace(ctx, ws, reason); err != nil {
			return false, fmt.Errorf("run %s: release workspace %s: delete: %w", runID, ws.ID, err)
		}
		a.logger().Info("run released a workspace", "run_id", runID, "workspace_id", ws.ID, "deleted", true, "broken", broken)
		return true, nil
	}
	if ws.PoolState == wire.PoolLeased {
		err := a.Store.SetPoolState(ctx, ws.ID, wire.PoolLeased, wire.PoolReturning)
		if errs.Is(err, errs.Conflict) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("run %s: release workspace %s: %w", runID, ws.ID, err)
		}
	}
	// Returning: nobody can lease it now, so the labels can go safely.
	if ours {
		labels := maps.Clone(ws.Labels)
		delete(labels, LabelRun)
		delete(labels, LabelSlot)
		if err := a.Store.SetWorkspaceLabels(ctx, ws.ID, labels); err != nil {
			return false, fmt.Errorf("run %s: release workspace %s: labels: %w", runID, ws.ID, err)
		}
	}
	if err := a.Lifecycle.ReturnWorkspace(ctx, ws); err != nil {
		return false, fmt.Errorf("run %s: release workspace %s: return: %w", runID, ws.ID, err)
	}
	a.logger().Info("run released a workspace", "run_id", runID, "workspace_id", ws.ID, "returned", true)
	return true, nil
}
