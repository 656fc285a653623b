package api

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Redacted replaces every template env value in API responses: env values
// may be secrets (API keys) and never leave the server. Sending it back
// unchanged in a PUT keeps the stored value, so get-edit-put round trips work.
const Redacted = "(redacted)"

// template checks the spec against its provider and the provider's backend
// and returns the row it describes. old is the stored template on update,
// whose env values replace Redacted placeholders.
func (s *server) template(c *gin.Context, spec wire.TemplateSpec, old *wire.Template) (*wire.Template, error) {
	if spec.ProviderID == "" {
		return nil, errs.Field("spec.provider_id", "spec.provider_id: required")
	}
	// Its own tenant's provider or a shared one; any other is unknown.
	p, err := s.providerOf(c, spec.ProviderID)
	if err != nil {
		return nil, asRef(err, "spec.provider_id", "provider", spec.ProviderID)
	}
	// A member's template never lands on the host (templates_rules.go).
	if err := s.mayWriteTemplate(c, p, nil); err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(spec.Backend); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, errs.Field("spec.backend", "spec.backend: required (an object with a kind)")
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(spec.Backend, &head); err != nil {
		return nil, errs.Field("spec.backend", "spec.backend: must be an object with a string kind")
	}
	if head.Kind == "" {
		return nil, errs.Field("spec.backend.kind", "spec.backend.kind: required (%s, the type of provider %s)", p.Provider, p.ID)
	}
	if head.Kind != p.Provider {
		return nil, errs.Field("spec.backend.kind", "spec.backend.kind: %q does not match provider %s of type %s",
			head.Kind, p.ID, p.Provider)
	}
	doc, err := unredact(spec.Backend, old)
	if err != nil {
		return nil, err
	}
	if doc, err = unredactWebhook(doc, old); err != nil {
		return nil, err
	}
	b, err := s.cfg.Backends.For(p)
	if err != nil {
		return nil, err
	}
	if err := b.ValidateTemplate(doc); err != nil {
		return nil, err
	}
	tenant := callerTenant(c)
	if old != nil {
		tenant = old.TenantID
	}
	if err := s.checkModelGateway(c, doc, tenant); err != nil {
		return nil, err
	}
	if _, _, hook, ok := webhookOf(doc); ok {
		if err := s.cfg.Outbound.CheckURL(c.Request.Context(), "spec.backend.recovery.webhook_url", hook); err != nil {
			return nil, err
		}
	}
	// Who made this write decides whether the template may reach the host
	// (activities/host_rule.go).
	return &wire.Template{ID: spec.ID, ProviderID: p.ID, Description: spec.Description, Backend: doc,
		AdminWritten: callerOf(c).admin()}, nil
}

// unredact replaces Redacted env values in doc with old's values. A
// placeholder for a key old does not have is refused: storing it would put
// the literal placeholder into the sandbox's environment.
func unredact(doc json.RawMessage, old *wire.Template) (json.RawMessage, error) {
	m, env, ok := splitEnv(doc)
	if !ok {
		return doc, nil
	}
	var oldEnv map[string]string
	if old != nil {
		_, oldEnv, _ = splitEnv(old.Backend)
	}
	changed := false
	for k, v := range env {
		if v != Redacted {
			continue
		}
		ov, found := oldEnv[k]
		if !found {
			return nil, errs.Field("spec.backend.env."+k, "spec.backend.env.%s: %s is a placeholder, and the stored template has no value for it", k, Redacted)
		}
		env[k] = ov
		changed = true
	}
	if !changed {
		return doc, nil
	}
	return joinEnv(m, env)
}

// redact returns a copy of t whose backend env values and recovery
// webhook URL (which may carry a token) are Redacted.
func redact(t wire.Template) wire.Template {
	t.Backend = redactWebhook(t.Backend)
	m, env, ok := splitEnv(t.Backend)
	if !ok || len(env) == 0 {
		return t
	}
	for k := range env {
		env[k] = Redacted
	}
	doc, err := joinEnv(m, env)
	if err != nil {
		// Cannot happen for a document that just decoded; never fall back
		// to the clear values.
		doc = json.RawMessage(`{}`)
	}
	t.Backend = doc
	return t
}

// webhookOf decodes a backend document and its recovery section; ok is
// false when there is no recovery.webhook_url string.
func webhookOf(doc json.RawMessage) (m, rec map[string]json.RawMessage, url string, ok bool) {
	if json.Unmarshal(doc, &m) != nil || m == nil {
		return nil, nil, "", false
	}
	if json.Unmarshal(m["recovery"], &rec) != nil || rec == nil {
		return nil, nil, "", false
	}
	if json.Unmarshal(rec["webhook_url"], &url) != nil || url == "" {
		return nil, nil, "", false
	}
	return m, rec, url, true
}

// withWebhook returns doc with recovery.webhook_url set to url.
func withWebhook(m, rec map[string]json.RawMessage, url string) (json.RawMessage, error) {
	raw, err := json.Marshal(url)
	if err != nil {
		return nil, err
	}
	rec["webhook_url"] = raw
	if m["recovery"], err = json.Marshal(rec); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// redactWebhook replaces a recovery webhook URL with Redacted.
func redactWebhook(doc json.RawMessage) json.RawMessage {
	m, rec, _, ok := webhookOf(doc)
	if !ok {
		return doc
	}
	out, err := withWebhook(m, rec, Redacted)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return out
}

// unredactWebhook puts the stored webhook URL back where an update sends
// the Redacted placeholder.
func unredactWebhook(doc json.RawMessage, old *wire.Template) (json.RawMessage, error) {
	m, rec, url, ok := webhookOf(doc)
	if !ok || url != Redacted {
		return doc, nil
	}
	var stored string
	if old != nil {
		_, _, stored, _ = webhookOf(old.Backend)
	}
	if stored == "" {
		return nil, errs.Field("spec.backend.recovery.webhook_url", "spec.backend.recovery.webhook_url: %s is a placeholder, and the stored template has no webhook", Redacted)
	}
	return withWebhook(m, rec, stored)
}

// splitEnv decodes a backend document and its env map; ok is false when the
// document is not an object or has no env object of strings.
func splitEnv(doc json.RawMessage) (m map[string]json.RawMessage, env map[string]string, ok bool) {
	if err := json.Unmarshal(doc, &m); err != nil || m == nil {
		return nil, nil, false
	}
	raw, found := m["env"]
	if !found {
		return nil, nil, false
	}
	if err := json.Unmarshal(raw, &env); err != nil || env == nil {
		return nil, nil, false
	}
	return m, env, true
}

func joinEnv(m map[string]json.RawMessage, env map[string]string) (json.RawMessage, error) {
	raw, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	m["env"] = raw
	return json.Marshal(m)
}

func (s *server) createTemplate(c *gin.Context) {
	var spec wire.TemplateSpec
	if err := s.decodeJSON(c, &spec, "spec.", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := validID("spec.id", spec.ID); err != nil {
		s.fail(c, err)
		return
	}
	t, err := s.template(c, spec, nil)
	if err != nil {
		s.fail(c, err)
		return
	}
	t.TenantID = callerTenant(c)
	if err := s.templateFits(c.Request.Context(), t); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cfg.Store.CreateTemplate(c.Request.Context(), t); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("template created", "template_id", t.ID, "provider_id", t.ProviderID)
	c.Header("Location", "/v1/templates/"+t.ID)
	c.JSON(http.StatusCreated, redact(*t))
}

func (s *server) listTemplates(c *gin.Context) {
	ts, err := s.cfg.Store.ListTemplates(c.Request.Context(), c.Query("provider_id"), listTenant(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]wire.Template, len(ts))
	for i, t := range ts {
		out[i] = redact(t)
	}
	c.JSON(http.StatusOK, list(out))
}

func (s *server) getTemplate(c *gin.Context) {
	t, err := s.templateOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, redact(*t))
}

func (s *server) updateTemplate(c *gin.Context) {
	id := c.Param("id")
	var spec wire.TemplateSpec
	if err := s.decodeJSON(c, &spec, "spec.", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := pathID(c, "spec.id", &spec.ID); err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	old, err := s.templateOf(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.mayWriteTemplate(c, nil, old); err != nil {
		s.fail(c, err)
		return
	}
	t, err := s.template(c, spec, old)
	if err != nil {
		s.fail(c, err)
		return
	}
	// Its workspaces get the new limits when they are next provisioned or
	// replaced: refused now if that would pass their tenants' quotas.
	t.TenantID = old.TenantID
	if err := s.templateFits(ctx, t); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cfg.Store.UpdateTemplate(ctx, t); err != nil {
		s.fail(c, err)
		return
	}
	if t, err = s.cfg.Store.GetTemplate(ctx, id); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("template updated", "template_id", t.ID, "provider_id", t.ProviderID, "generation", t.Generation)
	// Pools on the template replace their idle workspaces, made from the
	// old generation, one at a time; wake them so that starts now.
	pools, err := s.cfg.Store.ListPools(ctx, id, "")
	if err != nil {
		s.log.Warn("template: list pools to notify", "template_id", id, "error", err.Error())
	}
	for _, p := range pools {
		s.notifyPool(ctx, p.ID)
	}
	c.JSON(http.StatusOK, redact(*t))
}

func (s *server) deleteTemplate(c *gin.Context) {
	id := c.Param("id")
	old, err := s.templateOf(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.mayWriteTemplate(c, nil, old); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cfg.Store.DeleteTemplate(c.Request.Context(), id); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("template deleted", "template_id", id)
	c.Status(http.StatusNoContent)
}
