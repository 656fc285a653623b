package wire

// LLMProviderSpec is the body of POST and PUT /v1/llm-providers. The
// access tags say who may set a field (backend/access.go): api_key_env
// names a variable of the platform's host, so only an admin sets it.
type LLMProviderSpec struct {
	ID        string `json:"id,omitempty" access:"any"`
	Kind      string `json:"kind" access:"any"`
	BaseURL   string `json:"base_url" access:"any,endpoint"`
	APIKey    string `json:"api_key,omitempty" access:"secret"`
	APIKeyEnv string `json:"api_key_env,omitempty" access:"admin:env"`
}

// LLMProviderView is a model provider as the API shows it: the row, and
// api_key "(redacted)" when one is stored.
type LLMProviderView struct {
	LLMProvider
	APIKey string `json:"api_key,omitempty"`
}

// AgentSpec is the body of POST and PUT /v1/agents. Model is required on
// create; zero MaxTurns and empty Timeout take the defaults.
type AgentSpec struct {
	ID           string      `json:"id,omitempty"`
	Description  string      `json:"description,omitempty"`
	Model        *AgentModel `json:"model,omitempty"`
	SystemPrompt []string    `json:"system_prompt,omitempty"`
	Tools        []string    `json:"tools,omitempty"`
	MaxTurns     int         `json:"max_turns,omitempty"`
	Timeout      string      `json:"timeout,omitempty"`
}
