package client

import (
	"context"
	"net/http"

	"github.com/primerhq/primer/wire"
)

// CreateLLMProvider creates a model provider.
func (c *Client) CreateLLMProvider(ctx context.Context, spec wire.LLMProviderSpec) (*wire.LLMProviderView, error) {
	return doInto[wire.LLMProviderView](ctx, c, http.MethodPost, "/v1/llm-providers", nil, spec)
}

// GetLLMProvider returns the model provider id.
func (c *Client) GetLLMProvider(ctx context.Context, id string) (*wire.LLMProviderView, error) {
	return doInto[wire.LLMProviderView](ctx, c, http.MethodGet, "/v1/llm-providers/"+seg(id), nil, nil)
}

// ListLLMProviders returns the caller's model providers.
func (c *Client) ListLLMProviders(ctx context.Context) ([]wire.LLMProviderView, error) {
	return listInto[wire.LLMProviderView](ctx, c, "/v1/llm-providers", nil)
}

// UpdateLLMProvider replaces the model provider id with spec.
func (c *Client) UpdateLLMProvider(ctx context.Context, id string, spec wire.LLMProviderSpec) (*wire.LLMProviderView, error) {
	return doInto[wire.LLMProviderView](ctx, c, http.MethodPut, "/v1/llm-providers/"+seg(id), nil, spec)
}

// DeleteLLMProvider deletes the model provider id.
func (c *Client) DeleteLLMProvider(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/llm-providers/"+seg(id), nil, nil, nil)
}

// CreateAgent creates an agent.
func (c *Client) CreateAgent(ctx context.Context, spec wire.AgentSpec) (*wire.Agent, error) {
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
func (c *Client) UpdateAgent(ctx context.Context, id string, spec wire.AgentSpec) (*wire.Agent, error) {
	return doInto[wire.Agent](ctx, c, http.MethodPut, "/v1/agents/"+seg(id), nil, spec)
}

// DeleteAgent deletes the agent id.
func (c *Client) DeleteAgent(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/agents/"+seg(id), nil, nil, nil)
}
