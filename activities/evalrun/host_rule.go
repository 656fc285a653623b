package evalrun

import (
	"context"
	"fmt"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// mayRunOn refuses run the workspace ws when the run may not reach it: a
// host backend needs a run of a suite an admin last wrote (Run.ByAdmin),
// and so does a workspace of another tenant. Leased pool members were
// made before the run, possibly from an older template, so an eval run
// checks what it got, not only what it asked for.
func mayRunOn(run *wire.Run, ws *wire.Workspace) error {
	if run.ByAdmin {
		return nil
	}
	if wire.IsHostBackend(ws.Backend) {
		return errs.E(errs.Forbidden, "run %s: workspace %s is on host backend %s, and the run's suite was not written by an admin; only an admin's suites run on the Primer host",
			run.ID, ws.ID, ws.Backend)
	}
	if ws.TenantID != run.TenantID {
		return errs.E(errs.Forbidden, "run %s: workspace %s belongs to another tenant", run.ID, ws.ID)
	}
	return nil
}

// mayLeaseFor refuses run a lease from pool p of another tenant, or of a
// template on a host backend, unless its suite was an admin's: a pool id
// the suite names may have been deleted and made again by someone else.
func (a *Activities) mayLeaseFor(ctx context.Context, run *wire.Run, p *wire.Pool) error {
	if run.ByAdmin {
		return nil
	}
	if p.TenantID != run.TenantID {
		return errs.E(errs.Forbidden, "run %s: pool %s belongs to another tenant", run.ID, p.ID)
	}
	tmpl, err := a.Store.GetTemplate(ctx, p.TemplateID)
	if err != nil {
		return fmt.Errorf("run %s: pool %s: template: %w", run.ID, p.ID, err)
	}
	probe := &wire.Workspace{ID: "of pool " + p.ID, TenantID: run.TenantID, ProviderID: tmpl.ProviderID, ByAdmin: run.ByAdmin}
	kind, err := activities.HostKind(ctx, a.Workspaces, probe, tmpl)
	if err != nil {
		return err
	}
	if kind != "" {
		return errs.E(errs.Forbidden, "run %s: pool %s: template %s is on host backend %s, and the run's suite was not written by an admin; only an admin's suites run on the Primer host",
			run.ID, p.ID, tmpl.ID, kind)
	}
	return nil
}

// mayRunCase is mayRunOn for the ids a case attempt has. A workspace that
// is gone is left to the attempt, which says so.
func (a *Activities) mayRunCase(ctx context.Context, runID, wsID string) error {
	run, err := a.Store.GetRun(ctx, runID)
	if err != nil {
		return fmt.Errorf("run %s: %w", runID, err)
	}
	ws, err := a.Store.GetWorkspace(ctx, wsID)
	if errs.Is(err, errs.NotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("run %s: workspace %s: %w", runID, wsID, err)
	}
	return mayRunOn(run, ws)
}
