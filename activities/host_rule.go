package activities

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// The host rule, where workspaces are made. The API refuses a member a
// template, pool, suite or workspace on a host backend (local, worktree),
// but a row can reach a workspace by other paths: written before the rule
// existed, moved since by a template update, named by a pool refill, a
// warm create, an eval run, a schedule, a recovery or a pool return. So
// every activity that makes a sandbox or runs a template's files and init
// in one checks the rows themselves, at that moment (mayMake): a host
// backend needs a template whose last write was an admin's
// (Template.AdminWritten) and a workspace made on an admin's authority
// (Workspace.ByAdmin); a template of another tenant needs the latter too.
// A refusal is Forbidden, which classify makes final: no retry, and
// nothing was made.

// mayMake refuses to make (or re-prepare) workspace ws's sandbox from
// tmpl when the host rule or the tenant wall forbids it.
func (a *Activities) mayMake(ctx context.Context, ws *wire.Workspace, tmpl *wire.Template) error {
	kind, err := a.hostKind(ctx, ws, tmpl)
	if err != nil {
		return err
	}
	if kind != "" {
		switch {
		case !tmpl.AdminWritten:
			return errs.E(errs.Forbidden, "workspace %s: template %s is on host backend %s and its last write was not an admin's; only an admin's template may run on the Primer host (an admin may save it again)",
				ws.ID, tmpl.ID, kind)
		case !ws.ByAdmin:
			return errs.E(errs.Forbidden, "workspace %s: template %s is on host backend %s and the workspace was not made by an admin (nor by an admin's pool or eval suite); only an admin may run workspaces on the Primer host",
				ws.ID, tmpl.ID, kind)
		}
	}
	if tmpl.TenantID != ws.TenantID && !ws.ByAdmin {
		return errs.E(errs.Forbidden, "workspace %s: template %s belongs to another tenant; only an admin may make workspaces of it", ws.ID, tmpl.ID)
	}
	return nil
}

// hostKind is the host backend ws would be made on from tmpl, or "": the
// workspace's recorded backend, the template document's kind, or the kind
// of either's provider (a template moved since the workspace was made
// names another provider). A provider that cannot be read is an error:
// the rule fails closed.
func (a *Activities) hostKind(ctx context.Context, ws *wire.Workspace, tmpl *wire.Template) (string, error) {
	if wire.IsHostBackend(ws.Backend) {
		return ws.Backend, nil
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(tmpl.Backend, &head) == nil && wire.IsHostBackend(head.Kind) {
		return head.Kind, nil
	}
	for _, id := range []string{ws.ProviderID, tmpl.ProviderID} {
		p, err := a.Store.GetProvider(ctx, id)
		if err != nil {
			return "", fmt.Errorf("workspace %s: provider %s: %w", ws.ID, id, err)
		}
		if wire.IsHostBackend(p.Provider) {
			return p.Provider, nil
		}
	}
	return "", nil
}

// mayMakeWorkspace is mayMake for a workspace row, reading its template.
func (a *Activities) mayMakeWorkspace(ctx context.Context, ws *wire.Workspace) error {
	tmpl, err := a.Store.GetTemplate(ctx, ws.TemplateID)
	if err != nil {
		return errs.Within("workspace "+ws.ID+": template", err)
	}
	return a.mayMake(ctx, ws, tmpl)
}

// fitLimits records the limits tmpl gives ws now as what it runs with,
// refused when they pass its tenant's quota (models.SetWorkspaceLimits):
// a template raised since the workspace was made does not get a provision
// or a replacement past the quota. The refusal is Invalid, so it is final:
// running again does not shrink the template.
func (a *Activities) fitLimits(ctx context.Context, ws *wire.Workspace, tmpl *wire.Template) error {
	cpu, mem := TemplateLimits(tmpl.Backend)
	err := a.Store.SetWorkspaceLimits(ctx, ws.ID, cpu, mem)
	switch {
	case err == nil:
		ws.CPUCores, ws.MemoryBytes = cpu, mem
		return nil
	case errs.Is(err, errs.Exhausted), errs.Is(err, errs.Invalid):
		return errs.E(errs.Invalid, "workspace %s: template %s: its limits now pass the tenant's quota: %s", ws.ID, tmpl.ID, err.Error())
	}
	return err
}
