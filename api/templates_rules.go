package api

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Who may write a template, and with what limits. The activities check the
// host rule and the quota again wherever a workspace is made
// (activities/host_rule.go); these are the early, clear refusals.

// mayWriteTemplate refuses a caller that is not an admin a template write
// whose effect lands on the Primer host: the reserved default template
// (any change), a template stored on a host backend (any change or
// delete), or one that the write puts on a host backend (provider p, nil
// for a delete). old is the stored template, nil on create.
func (s *server) mayWriteTemplate(c *gin.Context, p *wire.Provider, old *wire.Template) error {
	if callerOf(c).admin() {
		return nil
	}
	if old != nil && old.ID == wire.DefaultTemplateID {
		return errs.E(errs.Forbidden, "template %s: reserved (it runs on the Primer host); only an admin may change it", old.ID)
	}
	if old != nil {
		kind, err := s.templateHostKind(c.Request.Context(), old)
		if err != nil {
			return err
		}
		if kind != "" {
			return errs.E(errs.Forbidden, "template %s: on host backend %s, which runs code on the Primer host; only an admin may change it", old.ID, kind)
		}
	}
	if p != nil && wire.IsHostBackend(p.Provider) {
		return &errs.Error{Kind: errs.Forbidden, Field: "spec.provider_id",
			Msg: "spec.provider_id: provider " + p.ID + " is of host backend " + p.Provider + ", which runs code on the Primer host; only an admin may put a template on it"}
	}
	return nil
}

// templateHostKind is the host backend t is on (its document's kind or its
// provider's type), or "".
func (s *server) templateHostKind(ctx context.Context, t *wire.Template) (string, error) {
	if kind := templateKind(t); wire.IsHostBackend(kind) {
		return kind, nil
	}
	p, err := s.cfg.Store.GetProvider(ctx, t.ProviderID)
	if errs.Is(err, errs.NotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if wire.IsHostBackend(p.Provider) {
		return p.Provider, nil
	}
	return "", nil
}

// templateFits refuses limits in t that would put a tenant holding
// workspaces of it over its quota once they run with them (a provision or
// replacement reads the template as it is then), or that one workspace of
// it could not have in t's tenant. The error names the document's field.
func (s *server) templateFits(ctx context.Context, t *wire.Template) error {
	cpu, mem := activities.TemplateLimits(t.Backend)
	err := s.cfg.Store.CheckTemplateLimits(ctx, t.ID, t.TenantID, cpu, mem)
	if err == nil || (!errs.Is(err, errs.Exhausted) && !errs.Is(err, errs.Invalid)) {
		return err
	}
	field := limitField(t.Backend, strings.Contains(err.Error(), "max_memory_bytes"))
	return &errs.Error{Kind: errs.KindOf(err), Field: field, Msg: field + ": " + err.Error()}
}

// limitField is the field of a backend document that holds its CPU (or,
// with memory, its memory) limit: each backend names it its own way.
func limitField(doc json.RawMessage, memory bool) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(doc, &m)
	names := []string{"cpu_cores", "cpu_limit", "cpu"}
	if memory {
		names = []string{"memory_bytes", "memory_limit", "memory"}
	}
	for _, n := range names {
		if _, ok := m[n]; ok {
			return "spec.backend." + n
		}
	}
	return "spec.backend." + names[0]
}

// hostWorkspace refuses a caller that is not an admin the inside of a
// workspace on a host backend (exec, files, processes, an agent run): an
// admin's workspace of its tenant is visible to the tenant's members, but
// whatever runs in it runs on the Primer host.
func hostWorkspace(c *gin.Context, w *wire.Workspace) error {
	if wire.IsHostBackend(w.Backend) && !callerOf(c).admin() {
		return errs.E(errs.Forbidden, "workspace %s: on host backend %s, which runs code on the Primer host; only an admin may reach into it", w.ID, w.Backend)
	}
	return nil
}
