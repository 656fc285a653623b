package client

import (
	"context"
	"net/http"

	"github.com/primerhq/primer/wire"
)

// LLMProviderSpec is the body of POST and PUT /v1/llm-providers: the `spec`
// of a `kind: llm_provider` document. Give APIKey or APIKeyEnv (an
// environment variable of the worker), not both; APIKey "(redacted)" in a
// PUT keeps the stored key.
type LLMProviderSpec struct {
	ID        string `json:"id,omitempty"`
	Kind      string `json:"kind"`
	BaseURL   string `json:"base_url"`
	APIKey    string `json:"api_key,omitempty"`
	APIKeyEnv string `json:"api_key_env,omitempty"`
}

// LLMProvider is a model provider as the API answers it: APIKey is
// "(redacted)" when a key is stored, never the key.
type LLMProvider struct {
	wire.LLMProvider
	APIKey string `json:"api_key,omitempty"`
}

// AgentSpec is the body of POST and PUT /v1/agents: the `spec` of a
// `kind: agent` document.
type AgentSpec struct {
	ID           string          `json:"id,omitempty"`
	Description  string          `json:"description,omitempty"`
	Model        wire.AgentModel `json:"model"`
	SystemPrompt []string        `json:"system_prompt,omitempty"`
	Tools        []string        `json:"tools,omitempty"`
	MaxTurns     int             `json:"max_turns,omitempty"`
	Timeout      string          `json:"timeout,omitempty"`
}

// CreateLLMProvider creates a model provider.
func (c *Client) CreateLLMProvider(ctx context.Context, spec LLMProviderSpec) (*LLMProvider, error) {
	return doInto[LLMProvider](ctx, c, http.MethodPost, "/v1/llm-providers", nil, spec)
}

// GetLLMProvider returns the model provider id.
func (c *Client) GetLLMProvider(ctx context.Context, id string) (*LLMProvider, error) {
	return doInto[LLMProvider](ctx, c, http.MethodGet, "/v1/llm-providers/"+seg(id), nil, nil)
}

// ListLLMProviders returns the caller's model providers.
func (c *Client) ListLLMProviders(ctx context.Context) ([]LLMProvider, error) {
	return listInto[LLMProvider](ctx, c, "/v1/llm-providers", nil)
}

// UpdateLLMProvider replaces the model provider id with spec.
func (c *Client) UpdateLLMProvider(ctx context.Context, id string, spec LLMProviderSpec) (*LLMProvider, error) {
	return doInto[LLMProvider](ctx, c, http.MethodPut, "/v1/llm-providers/"+seg(id), nil, spec)
}

// DeleteLLMProvider deletes the model provider id.
func (c *Client) DeleteLLMProvider(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/llm-providers/"+seg(id), nil, nil, nil)
}

// CreateAgent creates an agent.
func (c *Client) CreateAgent(ctx context.Context, spec AgentSpec) (*wire.Agent, error) {
	return doInto[wire.Agent](ctx, c, http.MethodPost, "/v1/agents", nil, spec)
}

// GetAgent returns the agent id.
func (c *Client) GetAgent(ctx context.Context, id string) (*wire.Agent, error) {
	return doInto[wire.Agent](ctx, c, http.MethodGet, "/v1/agents/"+seg(id), nil, nil)
}

// ListAgents returns the caller's agents.
func (c *Client) ListAgents(ctx context.Context) ([]wire.Agent, error) {
	return listInto[wire.Agent](ctx, c, "/v1/agents", nil)
}

// UpdateAgent replaces the agent id with spec.
func (c *Client) UpdateAgent(ctx context.Context, id string, spec AgentSpec) (*wire.Agent, error) {
	return doInto[wire.Agent](ctx, c, http.MethodPut, "/v1/agents/"+seg(id), nil, spec)
}

// DeleteAgent deletes the agent id.
func (c *Client) DeleteAgent(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/agents/"+seg(id), nil, nil, nil)
}
