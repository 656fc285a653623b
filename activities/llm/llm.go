// Package llm speaks the two model wire formats an agent's provider may
// use: OpenAI chat completions with tool calls, and Anthropic messages
// with tool use. Complete sends one request and returns the assistant's
// message; the caller (the model-call activity) owns retries.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/primerhq/primer/internal/outbound"
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
// never holds the API key, nor any byte of the server's answer: the
// server is the user's choice, and its answer (an internal service's page,
// a secret) would otherwise reach the API, events and logs.
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
// errors (an address the outbound policy refuses among them) fail the run.
func (e *APIError) Retryable() bool {
	return e.transport || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// Complete sends req to e through hc and returns the assistant's answer;
// errors are *APIError, or ctx's error. hc should be the outbound policy's
// client (outbound.Policy.HTTPClient); nil is one that refuses every
// internal address.
func Complete(ctx context.Context, hc *http.Client, e Endpoint, req Request) (Response, error) {
	if hc == nil {
		hc = (*outbound.Policy)(nil).HTTPClient(0)
	}
	switch e.Kind {
	case KindOpenAI:
		return completeOpenAI(ctx, hc, e, req)
	case KindAnthropic:
		return completeAnthropic(ctx, hc, e, req)
	}
	return Response{}, &APIError{Message: fmt.Sprintf("unknown provider kind %q (openai or anthropic)", e.Kind)}
}

// maxBody bounds the answer read from a model server.
const maxBody = 32 << 20

// post sends body to url with headers and returns the answer's body for a
// 2xx status; any other status is an *APIError with the status and its
// standard text, never the body.
func post(ctx context.Context, hc *http.Client, e Endpoint, url string, headers map[string]string, body any) ([]byte, int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, 0, &APIError{Message: "encode request: " + err.Error()}
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, 0, &APIError{Message: scrub("bad base_url: "+err.Error(), e.APIKey)}
	}
	hr.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		hr.Header.Set(k, v)
	}
	resp, err := hc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		// A refused address is refused again: not worth retrying.
		return nil, 0, &APIError{Message: scrub(err.Error(), e.APIKey), transport: !outbound.IsRefused(err)}
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		return nil, resp.StatusCode, &APIError{Status: resp.StatusCode, Message: scrub("read answer: "+err.Error(), e.APIKey), transport: true}
	}
	if resp.StatusCode/100 != 2 {
		msg := http.StatusText(resp.StatusCode)
		if msg == "" {
			msg = "error status"
		}
		return nil, resp.StatusCode, &APIError{
			Status:     resp.StatusCode,
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now()),
			Message:    msg + " (the answer's body is not shown)",
		}
	}
	return raw, resp.StatusCode, nil
}

// malformed is the error for a 2xx answer that is not the wire format.
// why is a fixed phrase: it holds nothing read from the answer.
func malformed(status int, why string) *APIError {
	return &APIError{Status: status, Message: "malformed response: " + why}
}

// scrub removes the key from s: a server may echo it back.
func scrub(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "***")
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(h, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// endpointURL joins the base URL and a path.
func endpointURL(base, path string) string {
	return strings.TrimRight(base, "/") + path
}

// objectOrEmpty is raw if it is a JSON object, else {}.
func objectOrEmpty(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return json.RawMessage(`{}`)
	}
	return t
}

// stopReason says why the model stopped, the same way for every wire
// format: to call tools when it asked for any, else out of tokens when the
// answer was cut (truncated), else done.
func stopReason(toolCalls int, truncated bool) string {
	switch {
	case toolCalls > 0:
		return StopToolCalls
	case truncated:
		return StopMaxTokens
	}
	return StopEnd
}
