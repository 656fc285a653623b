// Package llm speaks the two model wire formats an agent's provider may
// use: OpenAI chat completions with tool calls, and Anthropic messages
// with tool use. Complete sends one request and returns the assistant's
// message; the caller (the model-call activity) owns retries.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Wire formats (models.LLMOpenAI, models.LLMAnthropic).
const (
	KindOpenAI    = "openai"
	KindAnthropic = "anthropic"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Stop reasons, the same for both formats.
const (
	StopEnd       = "end"        // the model finished its answer
	StopToolCalls = "tool_calls" // the model asks for tool calls
	StopMaxTokens = "max_tokens" // the answer hit max_tokens
)

// Message is one turn of a conversation. A tool message carries one
// tool's result (Content) for ToolCallID.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is the model asking for one tool to run with Arguments (a JSON
// object).
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Tool is a tool the model may call; Parameters is its JSON schema (an
// object).
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one model call.
type Request struct {
	Model       string
	System      string
	Messages    []Message
	Tools       []Tool
	MaxTokens   int
	Temperature *float64
	TopP        *float64
}

// Usage is the tokens a call used.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Response is the model's answer: an assistant message, with tool calls
// when StopReason is StopToolCalls.
type Response struct {
	Message    Message `json:"message"`
	StopReason string  `json:"stop_reason"`
	Usage      Usage   `json:"usage"`
}

// Endpoint is where a call goes: a provider's kind, base URL and key.
type Endpoint struct {
	Kind, BaseURL, APIKey string
}

// APIError is a call that did not give an answer: an HTTP error status, a
// transport failure (Status 0) or a body that could not be read. Message
// never holds the API key.
type APIError struct {
	Status     int
	RetryAfter time.Duration // the server's Retry-After, 0 if none
	Message    string
	// transport is true for a request that got no answer (refused,
	// reset, timed out): worth retrying.
	transport bool
}

func (e *APIError) Error() string {
	if e.Status == 0 {
		return "model call: " + e.Message
	}
	return fmt.Sprintf("model call: HTTP %d: %s", e.Status, e.Message)
}

// Retryable is true for 429, 5xx and a request that got no answer; other
// errors fail the run.
func (e *APIError) Retryable() bool {
	return e.transport || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// Complete sends req to e and returns the assistant's answer; errors are
// *APIError, or ctx's error.
func Complete(ctx context.Context, hc *http.Client, e Endpoint, req Request) (Response, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	switch e.Kind {
	case KindOpenAI:
		return completeOpenAI(ctx, hc, e, req)
	case KindAnthropic:
		return completeAnthropic(ctx, hc, e, req)
	}
	return Response{}, &APIError{Message: fmt.Sprintf("unknown provider kind %q (openai or anthropic)", e.Kind)}
}

func completeOpenAI(ctx context.Context, hc *http.Client, e Endpoint, req Request) (Response, error) {
	return Response{}, &APIError{Message: "not implemented"}
}

func completeAnthropic(ctx context.Context, hc *http.Client, e Endpoint, req Request) (Response, error) {
	return Response{}, &APIError{Message: "not implemented"}
}
