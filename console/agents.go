package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// agentsView is the Agents page: the tenant's agents and model providers.
type agentsView struct {
	Agents    []wire.Agent
	Providers []llmProviderRow
}

// llmProviderRow is a model provider as the console shows it. It never
// holds the key: only whether one is stored, or the worker variable that
// holds it.
type llmProviderRow struct {
	ID, Kind, BaseURL, KeyEnv string
	HasKey                    bool
}

func viewLLMProvider(p wire.LLMProviderView) llmProviderRow {
	return llmProviderRow{ID: p.ID, Kind: p.Kind, BaseURL: p.BaseURL, KeyEnv: p.APIKeyEnv, HasKey: p.APIKey != ""}
}

// agents lists the tenant's agents and model providers; an API without
// /v1/agents (an older server behind the console's client) shows none.
func (c *Console) agents(w http.ResponseWriter, r *http.Request, s *session) {
	var v agentsView
	var err error
	if v.Agents, err = s.api.ListAgents(r.Context()); err != nil && !errs.Is(err, errs.NotFound) {
		c.fail(w, r, s, err)
		return
	}
	ps, err := s.api.ListLLMProviders(r.Context())
	if err != nil && !errs.Is(err, errs.NotFound) {
		c.fail(w, r, s, err)
		return
	}
	for _, p := range ps {
		v.Providers = append(v.Providers, viewLLMProvider(p))
	}
	c.render(w, r, s, 0, "agents", page{Title: "Agents", Section: "agents", Data: v})
}

func (c *Console) agent(w http.ResponseWriter, r *http.Request, s *session) {
	a, err := s.api.GetAgent(r.Context(), r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, 0, "agent", page{Title: "Agent " + a.ID, Section: "agents", Data: a})
}

// agentForm is the New agent page: the model providers to choose from and
// what was typed when the API refused it.
type agentForm struct {
	Providers []llmProviderRow
	Form      map[string]string
}

func (c *Console) newAgent(w http.ResponseWriter, r *http.Request, s *session) {
	c.agentForm(w, r, s, http.StatusOK, "", map[string]string{"max_turns": strconv.Itoa(wire.DefaultAgentMaxTurns), "timeout": wire.DefaultAgentTimeout})
}

func (c *Console) agentForm(w http.ResponseWriter, r *http.Request, s *session, status int, msg string, form map[string]string) {
	ps, err := s.api.ListLLMProviders(r.Context())
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := agentForm{Form: form}
	for _, p := range ps {
		v.Providers = append(v.Providers, viewLLMProvider(p))
	}
	c.render(w, r, s, status, "agent_new", page{Title: "New agent", Section: "agents", Error: msg, Data: v})
}

func (c *Console) createAgent(w http.ResponseWriter, r *http.Request, s *session) {
	spec, err := agentSpec(r)
	if err == nil {
		_, err = s.api.CreateAgent(r.Context(), spec)
	}
	if err != nil {
		form := map[string]string{}
		for k, v := range r.PostForm {
			if len(v) > 0 && k != "csrf" {
				form[k] = v[0]
			}
		}
		c.agentForm(w, r, s, statusOf(err), err.Error(), form)
		return
	}
	back(w, r, "/agents", "Agent "+spec.ID+" created.")
}

// agentSpec reads the New agent form: the system prompt one string a line,
// the tools separated by commas or spaces.
func agentSpec(r *http.Request) (wire.AgentSpec, error) {
	f := func(name string) string { return strings.TrimSpace(r.FormValue(name)) }
	spec := wire.AgentSpec{
		ID: f("id"), Description: f("description"), Timeout: f("timeout"),
		Model:        &wire.AgentModel{ProviderID: f("provider_id"), ModelName: f("model_name")},
		SystemPrompt: lines(r.FormValue("system_prompt")),
		Tools:        strings.FieldsFunc(f("tools"), func(c rune) bool { return c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t' }),
	}
	if v := f("max_turns"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return spec, fieldError("max_turns", "Max turns: %q is not a whole number", v)
		}
		spec.MaxTurns = n
	}
	if v := f("max_tokens"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return spec, fieldError("max_tokens", "Max tokens: %q is not a whole number", v)
		}
		spec.Model.MaxTokens = n
	}
	return spec, nil
}

func (c *Console) deleteAgent(w http.ResponseWriter, r *http.Request, s *session) {
	if err := s.api.DeleteAgent(r.Context(), r.PathValue("id")); err != nil {
		c.fail(w, r, s, err)
		return
	}
	back(w, r, "/agents", "Agent deleted.")
}

func (c *Console) newLLMProvider(w http.ResponseWriter, r *http.Request, s *session) {
	c.render(w, r, s, 0, "llm_provider_new", page{Title: "New model provider", Section: "agents",
		Data: map[string]string{"kind": wire.LLMOpenAI}})
}

// createLLMProvider creates a model provider. When the API refuses it the
// form comes back with what was typed, except the key.
func (c *Console) createLLMProvider(w http.ResponseWriter, r *http.Request, s *session) {
	f := func(name string) string { return strings.TrimSpace(r.FormValue(name)) }
	spec := wire.LLMProviderSpec{ID: f("id"), Kind: f("kind"), BaseURL: f("base_url"), APIKey: f("api_key"), APIKeyEnv: f("api_key_env")}
	if _, err := s.api.CreateLLMProvider(r.Context(), spec); err != nil {
		c.render(w, r, s, statusOf(err), "llm_provider_new", page{Title: "New model provider", Section: "agents", Error: err.Error(),
			Data: map[string]string{"id": spec.ID, "kind": spec.Kind, "base_url": spec.BaseURL, "api_key_env": spec.APIKeyEnv}})
		return
	}
	back(w, r, "/agents", "Model provider "+spec.ID+" created.")
}

func (c *Console) deleteLLMProvider(w http.ResponseWriter, r *http.Request, s *session) {
	if err := s.api.DeleteLLMProvider(r.Context(), r.PathValue("id")); err != nil {
		c.fail(w, r, s, err)
		return
	}
	back(w, r, "/agents", "Model provider deleted.")
}

// runAgent starts an agent's run on a new session of the workspace and
// opens the session's page, where the transcript follows the run.
func (c *Console) runAgent(w http.ResponseWriter, r *http.Request, s *session) {
	ses, err := s.api.CreateSession(r.Context(), wire.CreateSessionRequest{
		WorkspaceID:  r.PathValue("id"),
		Agent:        strings.TrimSpace(r.FormValue("agent")),
		Instructions: strings.TrimSpace(r.FormValue("instructions")),
	})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/sessions/"+url.PathEscape(ses.ID), http.StatusSeeOther)
}
