package wire

import (
	"time"
)

// Model provider kinds: the wire format a provider speaks.
const (
	LLMOpenAI    = "openai"    // chat completions with tool calls
	LLMAnthropic = "anthropic" // messages with tool use
)

// Agent defaults.
const (
	DefaultAgentMaxTurns = 50
	DefaultAgentTimeout  = "30m"
)

// LLMProvider is a model endpoint (`kind: llm_provider`): where an agent's
// model calls go and the key they carry. The key is a secret: it has no
// JSON name, so no marshalled row (an API answer, a log line, an event, a
// workflow input) carries it; the API answers with a placeholder.
type LLMProvider struct {
	ID string `gorm:"primaryKey;size:128" json:"id"`
	// TenantID is the tenant the provider belongs to (tenant.go).
	TenantID string `gorm:"size:64;not null;default:'default';index" json:"tenant_id"`
	Kind     string `gorm:"size:32;not null" json:"kind"`
	BaseURL  string `gorm:"size:2048;not null" json:"base_url"`
	// APIKey is the key itself; APIKeyEnv names an environment variable of
	// the worker that holds it. Exactly one is set.
	APIKey    string    `gorm:"size:4096;not null;default:''" json:"-"`
	APIKeyEnv string    `gorm:"size:256;not null;default:''" json:"api_key_env,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// AgentModel is the model an agent calls and how.
type AgentModel struct {
	ProviderID  string   `json:"provider_id"`
	ModelName   string   `json:"model_name"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
}

// Agent is a model, its instructions and its tools (`kind: agent`), run
// by a session. The workspace tools (write, exec, read) are implicit on a
// workspace-bound session; Tools lists the others.
type Agent struct {
	ID string `gorm:"primaryKey;size:128" json:"id"`
	// TenantID is the tenant the agent belongs to (tenant.go).
	TenantID    string `gorm:"size:64;not null;default:'default';index" json:"tenant_id"`
	Description string `json:"description,omitempty"`
	// ProviderID mirrors Model.ProviderID as a column, so a provider in
	// use is found without decoding every agent.
	ProviderID   string     `gorm:"size:128;not null;default:'';index" json:"-"`
	Model        AgentModel `gorm:"serializer:json;type:text" json:"model"`
	SystemPrompt []string   `gorm:"serializer:json;type:text" json:"system_prompt,omitempty"`
	Tools        []string   `gorm:"serializer:json;type:text" json:"tools,omitempty"`
	// MaxTurns bounds the model calls of a run (DefaultAgentMaxTurns).
	MaxTurns int `gorm:"not null;default:50" json:"max_turns"`
	// Timeout bounds a run, as a Go duration (DefaultAgentTimeout).
	Timeout   string    `gorm:"size:32;not null;default:'30m'" json:"timeout"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ImplicitTools are the tools every workspace-bound session has; an agent
// does not list them.
var ImplicitTools = []string{"workspace__write", "workspace__exec", "workspace__read"}
