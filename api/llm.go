package api

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

func llmProviderOut(p wire.LLMProvider) wire.LLMProviderView {
	v := wire.LLMProviderView{LLMProvider: p}
	if p.APIKey != "" {
		v.APIKey = Redacted
	}
	v.LLMProvider.APIKey = ""
	return v
}

var llmKinds = []string{wire.LLMOpenAI, wire.LLMAnthropic}

// envName is what an environment variable name looks like.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// llmProvider checks spec and returns the row it describes. old is the
// stored provider on update, whose key replaces a Redacted placeholder
// while the base URL stays the same: a key goes only to the endpoint it
// was given for, so an update that moves base_url must send the key again
// (as backend.RestoreSecrets has it for workspace providers). Who may set
// api_key_env is the access tags' rule (adminOnly).
func llmProvider(spec wire.LLMProviderSpec, old *wire.LLMProvider) (*wire.LLMProvider, error) {
	if !slices.Contains(llmKinds, spec.Kind) {
		if spec.Kind == "" {
			return nil, errs.Field("spec.kind", "spec.kind: required (%s)", strings.Join(llmKinds, " or "))
		}
		return nil, errs.Field("spec.kind", "spec.kind: %q is not a model provider kind (%s)", spec.Kind, strings.Join(llmKinds, " or "))
	}
	if err := checkBaseURL(spec.BaseURL); err != nil {
		return nil, err
	}
	base := strings.TrimRight(spec.BaseURL, "/")
	switch {
	case spec.APIKey != "" && spec.APIKeyEnv != "":
		return nil, errs.Field("spec.api_key", "spec.api_key: give the key or spec.api_key_env, not both")
	case spec.APIKey == "" && spec.APIKeyEnv == "":
		return nil, errs.Field("spec.api_key", "spec.api_key: required, or spec.api_key_env (an environment variable of the worker holding the key)")
	case spec.APIKeyEnv != "" && !envName.MatchString(spec.APIKeyEnv):
		return nil, errs.Field("spec.api_key_env", "spec.api_key_env: %q is not an environment variable name", spec.APIKeyEnv)
	case spec.APIKey == Redacted:
		if old == nil || old.APIKey == "" {
			return nil, errs.Field("spec.api_key", "spec.api_key: %s is a placeholder, and the stored provider has no key", Redacted)
		}
		if old.BaseURL != base {
			return nil, errs.Field("spec.api_key", "spec.api_key: %s keeps the stored value only while the endpoint stays; spec.base_url changed, so send the value again", Redacted)
		}
		spec.APIKey = old.APIKey
	}
	return &wire.LLMProvider{ID: spec.ID, Kind: spec.Kind, BaseURL: base,
		APIKey: spec.APIKey, APIKeyEnv: spec.APIKeyEnv}, nil
}

// checkBaseURL wants an absolute http or https URL without credentials
// (the key has fields of its own) or a query.
func checkBaseURL(raw string) error {
	const field = "spec.base_url"
	if raw == "" {
		return errs.Field(field, "%s: required (e.g. https://api.openai.com/v1)", field)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return errs.Field(field, "%s: not a URL", field)
	case u.Scheme != "http" && u.Scheme != "https":
		return errs.Field(field, "%s: must be an http or https URL", field)
	case u.Host == "":
		return errs.Field(field, "%s: has no host", field)
	case u.User != nil:
		return errs.Field(field, "%s: must not hold credentials; give the key in spec.api_key or spec.api_key_env", field)
	case u.RawQuery != "" || u.Fragment != "":
		return errs.Field(field, "%s: must not have a query or fragment", field)
	}
	return nil
}

// llmProviderOf returns the model provider id if the caller may see it.
func (s *server) llmProviderOf(c *gin.Context, id string) (*wire.LLMProvider, error) {
	return scoped(c, "llm provider", id, s.cfg.Store.GetLLMProvider, func(p *wire.LLMProvider) string { return p.TenantID })
}

// agentOf returns the agent id if the caller may see it.
func (s *server) agentOf(c *gin.Context, id string) (*wire.Agent, error) {
	return scoped(c, "agent", id, s.cfg.Store.GetAgent, func(a *wire.Agent) string { return a.TenantID })
}

func (s *server) createLLMProvider(c *gin.Context) {
	var spec wire.LLMProviderSpec
	if err := s.decodeJSON(c, &spec, "spec.", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := validID("spec.id", spec.ID); err != nil {
		s.fail(c, err)
		return
	}
	if err := adminOnly(c, &spec, "spec"); err != nil {
		s.fail(c, err)
		return
	}
	p, err := llmProvider(spec, nil)
	if err == nil {
		err = s.cfg.Outbound.CheckURL(c.Request.Context(), "spec.base_url", p.BaseURL)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	p.TenantID = callerTenant(c)
	if err := s.cfg.Store.CreateLLMProvider(c.Request.Context(), p); err != nil {
		s.fail(c, err)
		return
	}
	auditResource(c, "llm-providers/"+p.ID)
	s.log.Info("llm provider created", "llm_provider_id", p.ID, "kind", p.Kind)
	c.Header("Location", "/v1/llm-providers/"+p.ID)
	c.JSON(http.StatusCreated, llmProviderOut(*p))
}

func (s *server) listLLMProviders(c *gin.Context) {
	ps, err := s.cfg.Store.ListLLMProviders(c.Request.Context(), listTenant(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]wire.LLMProviderView, len(ps))
	for i, p := range ps {
		out[i] = llmProviderOut(p)
	}
	c.JSON(http.StatusOK, list(out))
}

func (s *server) getLLMProvider(c *gin.Context) {
	p, err := s.llmProviderOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, llmProviderOut(*p))
}

func (s *server) updateLLMProvider(c *gin.Context) {
	id := c.Param("id")
	var spec wire.LLMProviderSpec
	if err := s.decodeJSON(c, &spec, "spec.", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := pathID(c, "spec.id", &spec.ID); err != nil {
		s.fail(c, err)
		return
	}
	old, err := s.llmProviderOf(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := adminOnly(c, &spec, "spec"); err != nil {
		s.fail(c, err)
		return
	}
	p, err := llmProvider(spec, old)
	if err == nil {
		err = s.cfg.Outbound.CheckURL(c.Request.Context(), "spec.base_url", p.BaseURL)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cfg.Store.UpdateLLMProvider(c.Request.Context(), p); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("llm provider updated", "llm_provider_id", p.ID, "kind", p.Kind)
	c.JSON(http.StatusOK, llmProviderOut(*p))
}

func (s *server) deleteLLMProvider(c *gin.Context) {
	id := c.Param("id")
	if _, err := s.llmProviderOf(c, id); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cfg.Store.DeleteLLMProvider(c.Request.Context(), id); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("llm provider deleted", "llm_provider_id", id)
	c.Status(http.StatusNoContent)
}

// agentTools are the tools an agent may list besides the implicit
// workspace tools; none yet.
var agentTools = map[string]bool{}

// agent checks spec and returns the row it describes, an agent of tenant;
// the provider must be one the caller may see, and of the agent's own
// tenant (an admin sees every tenant's, but an agent of one tenant never
// calls with another tenant's key).
func (s *server) agent(c *gin.Context, spec wire.AgentSpec, tenant string) (*wire.Agent, error) {
	a, err := agentRow(spec)
	if err != nil {
		return nil, err
	}
	if p, err := s.llmProviderOf(c, a.Model.ProviderID); err != nil {
		return nil, asRef(err, "spec.model.provider_id", "llm provider", a.Model.ProviderID)
	} else if p.TenantID != tenant {
		return nil, &errs.Error{Kind: errs.Forbidden, Field: "spec.model.provider_id", Msg: fmt.Sprintf(
			"spec.model.provider_id: llm provider %s belongs to tenant %s, not to the agent's tenant %s", p.ID, p.TenantID, tenant)}
	}
	return a, nil
}

// agentRow checks spec on its own (everything but whether its provider
// exists) and returns the row it describes, defaults filled in.
func agentRow(spec wire.AgentSpec) (*wire.Agent, error) {
	m := spec.Model
	switch {
	case m == nil:
		return nil, errs.Field("spec.model", "spec.model: required (provider_id and model_name)")
	case m.ProviderID == "":
		return nil, errs.Field("spec.model.provider_id", "spec.model.provider_id: required (the id of an llm_provider)")
	case m.ModelName == "":
		return nil, errs.Field("spec.model.model_name", "spec.model.model_name: required")
	case m.Temperature != nil && (*m.Temperature < 0 || *m.Temperature > 2):
		return nil, errs.Field("spec.model.temperature", "spec.model.temperature: %v is not between 0 and 2", *m.Temperature)
	case m.TopP != nil && (*m.TopP < 0 || *m.TopP > 1):
		return nil, errs.Field("spec.model.top_p", "spec.model.top_p: %v is not between 0 and 1", *m.TopP)
	case m.MaxTokens < 0:
		return nil, errs.Field("spec.model.max_tokens", "spec.model.max_tokens: %d is negative", m.MaxTokens)
	case spec.MaxTurns < 0:
		return nil, errs.Field("spec.max_turns", "spec.max_turns: %d is negative (0 or absent: %d)", spec.MaxTurns, wire.DefaultAgentMaxTurns)
	}
	seen := map[string]bool{}
	for i, name := range spec.Tools {
		field := fmt.Sprintf("spec.tools[%d]", i)
		switch {
		case slices.Contains(wire.ImplicitTools, name):
			return nil, errs.Field(field, "%s: %s: workspace__write, workspace__exec and workspace__read are implicit on a workspace-bound session; remove them from tools", field, name)
		case seen[name]:
			return nil, errs.Field(field, "%s: %q is listed twice", field, name)
		case !agentTools[name]:
			return nil, errs.Field(field, "%s: unknown tool %q (the workspace tools are implicit; there are no others yet)", field, name)
		}
		seen[name] = true
	}
	timeout := spec.Timeout
	if timeout == "" {
		timeout = wire.DefaultAgentTimeout
	}
	if d, err := time.ParseDuration(timeout); err != nil || d <= 0 {
		return nil, errs.Field("spec.timeout", "spec.timeout: %q is not a positive Go duration (e.g. 30m, 2h)", spec.Timeout)
	}
	maxTurns := spec.MaxTurns
	if maxTurns == 0 {
		maxTurns = wire.DefaultAgentMaxTurns
	}
	return &wire.Agent{ID: spec.ID, Description: spec.Description, Model: *m, SystemPrompt: spec.SystemPrompt,
		Tools: spec.Tools, MaxTurns: maxTurns, Timeout: timeout}, nil
}

func (s *server) createAgent(c *gin.Context) {
	var spec wire.AgentSpec
	if err := s.decodeJSON(c, &spec, "spec.", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := validID("spec.id", spec.ID); err != nil {
		s.fail(c, err)
		return
	}
	a, err := s.agent(c, spec, callerTenant(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	a.TenantID = callerTenant(c)
	if err := s.cfg.Store.CreateAgent(c.Request.Context(), a); err != nil {
		s.fail(c, err)
		return
	}
	auditResource(c, "agents/"+a.ID)
	s.log.Info("agent created", "agent_id", a.ID, "llm_provider_id", a.Model.ProviderID)
	c.Header("Location", "/v1/agents/"+a.ID)
	c.JSON(http.StatusCreated, a)
}

func (s *server) listAgents(c *gin.Context) {
	as, err := s.cfg.Store.ListAgents(c.Request.Context(), listTenant(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, list(as))
}

func (s *server) getAgent(c *gin.Context) {
	a, err := s.agentOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, a)
}

func (s *server) updateAgent(c *gin.Context) {
	id := c.Param("id")
	var spec wire.AgentSpec
	if err := s.decodeJSON(c, &spec, "spec.", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := pathID(c, "spec.id", &spec.ID); err != nil {
		s.fail(c, err)
		return
	}
	old, err := s.agentOf(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	a, err := s.agent(c, spec, old.TenantID)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cfg.Store.UpdateAgent(c.Request.Context(), a); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("agent updated", "agent_id", a.ID, "llm_provider_id", a.Model.ProviderID)
	c.JSON(http.StatusOK, a)
}

func (s *server) deleteAgent(c *gin.Context) {
	id := c.Param("id")
	if _, err := s.agentOf(c, id); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cfg.Store.DeleteAgent(c.Request.Context(), id); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("agent deleted", "agent_id", id)
	c.Status(http.StatusNoContent)
}
