package api

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Every handler loads the rows it acts on through the helpers below, never
// through s.cfg.Store.GetX directly: each returns the same NotFound as an
// unknown id when the row belongs to a tenant the caller may not see, so
// another tenant's resource never answers differently from a missing one
// (docs/API.md "Tenancy"). A new handler copies this pattern;
// TestTenancyRouteMatrix fails when one does not.

// hidden is the answer for a row of another tenant: word for word the
// store's answer for an unknown id.
func hidden(kind, id string) error {
	return errs.E(errs.NotFound, "%s %s: not found", kind, id)
}

// unknownRef is the answer for a document field that names a row that does
// not exist or that the caller may not see: 404 naming the field.
func unknownRef(field, kind, id string) error {
	return &errs.Error{Kind: errs.NotFound, Field: field, Msg: fmt.Sprintf("%s: %s %s not found", field, kind, id)}
}

// asRef turns a NotFound from one of the helpers below, for the row a
// document's field names, into unknownRef; other errors pass through.
func asRef(err error, field, kind, id string) error {
	if errs.Is(err, errs.NotFound) {
		return unknownRef(field, kind, id)
	}
	return err
}

// scoped loads the row id of kind with get and hides it unless the caller
// may see tenantOf(row).
func scoped[T any](c *gin.Context, kind, id string, get func(context.Context, string) (*T, error), tenantOf func(*T) string) (*T, error) {
	row, err := get(c.Request.Context(), id)
	if err != nil {
		return nil, err
	}
	if !visible(c, tenantOf(row)) {
		return nil, hidden(kind, id)
	}
	return row, nil
}

// callerTenant is the tenant a create by the caller makes its row in.
func callerTenant(c *gin.Context) string {
	if t := callerOf(c).TenantID; t != "" {
		return t
	}
	return wire.DefaultTenantID
}

// workspaceOf returns the workspace id if the caller may see it.
func (s *server) workspaceOf(c *gin.Context, id string) (*wire.Workspace, error) {
	return scoped(c, "workspace", id, s.cfg.Store.GetWorkspace, func(w *wire.Workspace) string { return w.TenantID })
}

// templateOf returns the template id if the caller may see it.
func (s *server) templateOf(c *gin.Context, id string) (*wire.Template, error) {
	return scoped(c, "template", id, s.cfg.Store.GetTemplate, func(t *wire.Template) string { return t.TenantID })
}

// poolOf returns the pool id if the caller may see it.
func (s *server) poolOf(c *gin.Context, id string) (*wire.Pool, error) {
	return scoped(c, "pool", id, s.cfg.Store.GetPool, func(p *wire.Pool) string { return p.TenantID })
}

// suiteOf returns the suite id if the caller may see it.
func (s *server) suiteOf(c *gin.Context, id string) (*wire.Suite, error) {
	return scoped(c, "suite", id, s.cfg.Store.GetSuite, func(su *wire.Suite) string { return su.TenantID })
}

// runOf returns the run id if the caller may see it.
func (s *server) runOf(c *gin.Context, id string) (*wire.Run, error) {
	return scoped(c, "run", id, s.cfg.Store.GetRun, func(r *wire.Run) string { return r.TenantID })
}

// sessionOf returns the session id if the caller may see it.
func (s *server) sessionOf(c *gin.Context, id string) (*wire.Session, error) {
	return scoped(c, "session", id, s.cfg.Store.GetSession, func(ses *wire.Session) string { return ses.TenantID })
}

// providerOf returns the provider id if the caller may see it: its own
// tenant's, or a shared one. The row is whole, for the server's use (a
// template on a shared provider is checked against its config); answer
// with providerView, which leaves out what the caller may not read.
func (s *server) providerOf(c *gin.Context, id string) (*wire.Provider, error) {
	p, err := s.cfg.Store.GetProvider(c.Request.Context(), id)
	if err != nil {
		return nil, err
	}
	if !visible(c, p.TenantID) && !p.Shared {
		return nil, hidden("provider", id)
	}
	return p, nil
}

// providerView is p as the caller may see it: a shared provider of
// another tenant without its config, which only its owner (and an admin)
// may read.
func providerView(c *gin.Context, p wire.Provider) wire.Provider {
	if !visible(c, p.TenantID) {
		p.Config = nil
	}
	return p
}

// ownProviderOf returns the provider id for a change: NotFound when the
// caller may not see it, Forbidden when it sees it only because another
// tenant shares it.
func (s *server) ownProviderOf(c *gin.Context, id string) (*wire.Provider, error) {
	p, err := s.cfg.Store.GetProvider(c.Request.Context(), id)
	if err != nil {
		return nil, err
	}
	if visible(c, p.TenantID) {
		return p, nil
	}
	if p.Shared {
		return nil, errs.E(errs.Forbidden, "provider %s: shared by another tenant; only its owner may change it", id)
	}
	return nil, hidden("provider", id)
}

// hostBackends run a workspace's code on the machine that runs Primer:
// only an admin may create workspaces on them, or providers of them.
var hostBackends = map[string]bool{wire.BackendLocal: true, wire.BackendWorktree: true}

// hostOnly refuses a caller that is not an admin a provider of a host
// backend kind.
func hostOnly(c *gin.Context, kind string) error {
	if hostBackends[kind] && !callerOf(c).admin() {
		return errs.E(errs.Forbidden, "backend %s runs code on the Primer host; only an admin may do this", kind)
	}
	return nil
}

// templateKind is the backend kind of t's document.
func templateKind(t *wire.Template) string {
	var head struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(t.Backend, &head)
	return head.Kind
}

// hostTemplate refuses a caller that is not an admin workspaces of t when
// t is on a host backend (local, worktree).
func hostTemplate(c *gin.Context, t *wire.Template) error {
	if callerOf(c).admin() {
		return nil
	}
	if kind := templateKind(t); hostBackends[kind] {
		return errs.E(errs.Forbidden, "template %s: backend %s runs code on the Primer host; only an admin may create workspaces on it", t.ID, kind)
	}
	return nil
}

// hostPool is hostTemplate for the template of pool p. An admin reads
// nothing.
func (s *server) hostPool(c *gin.Context, p *wire.Pool) error {
	if callerOf(c).admin() {
		return nil
	}
	t, err := s.cfg.Store.GetTemplate(c.Request.Context(), p.TemplateID)
	if err != nil {
		return err
	}
	if err := hostTemplate(c, t); err != nil {
		return errs.E(errs.Forbidden, "pool %s: %w", p.ID, err)
	}
	return nil
}
