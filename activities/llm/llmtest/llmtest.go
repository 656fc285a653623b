// Package llmtest is a model server for tests: it speaks the OpenAI
// chat-completions and the Anthropic messages wire formats and answers
// with a script, so an agent runs without a hosted model. It records every
// request it gets.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/activities/llm"
)

// Turn is one answer of a script: tool calls, a final text, an error
// status, or a malformed body.
type Turn struct {
	// ToolCalls are the tools the model calls; IDs are made up when empty.
	ToolCalls []llm.ToolCall
	// Text is the assistant's text (with or without tool calls).
	Text string
	// Status, when not 0, answers with this HTTP error status, a
	// Retry-After header when RetryAfter is set, and Message in the
	// format's error body.
	Status     int
	RetryAfter string
	Message    string
	// Malformed answers 200 with a body that is not the wire format.
	Malformed bool
	// Usage is reported for the turn; zero: DefaultUsage.
	Usage llm.Usage
	// Delay holds the answer this long; Block holds it until closed. The
	// request's end (a client gone) ends the wait.
	Delay time.Duration
	Block <-chan struct{}
	// Forever answers this turn to this and every later request.
	Forever bool
}

// DefaultUsage is the usage of a turn that sets none.
var DefaultUsage = llm.Usage{InputTokens: 100, OutputTokens: 20}

// Script is the answers, in order. A request after the last is answered
// with 400 "llmtest: script exhausted", unless a turn is Forever.
type Script []Turn

// ToolTurn is a turn that calls one tool with args (marshalled to JSON).
func ToolTurn(name string, args any) Turn {
	b, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("llmtest: tool args: %v", err))
	}
	return Turn{ToolCalls: []llm.ToolCall{{Name: name, Arguments: b}}}
}

// TextTurn is a final answer.
func TextTurn(text string) Turn { return Turn{Text: text} }

// ErrorTurn answers status with message and a Retry-After header when
// retryAfter is not empty.
func ErrorTurn(status int, retryAfter, message string) Turn {
	return Turn{Status: status, RetryAfter: retryAfter, Message: message}
}

// MalformedTurn answers 200 with a body that is not the wire format.
func MalformedTurn() Turn { return Turn{Malformed: true} }

// CodeRunnerScript is the seed's code-runner conversation: write
// snippet.py, run it into out.txt, report.
func CodeRunnerScript() Script {
	return Script{
		ToolTurn("workspace__write", map[string]string{"path": "snippet.py", "content": "print(6 * 7)\n"}),
		ToolTurn("workspace__exec", map[string]string{"command": "python3 snippet.py > out.txt"}),
		TextTurn("The snippet printed 42."),
	}
}

// Request is one request the server got.
type Request struct {
	Format string // llm.KindOpenAI or llm.KindAnthropic
	Path   string
	Header http.Header
	Body   []byte
	// Turn is the index of the script turn that answered it.
	Turn int
}

// Key is the API key the request carried: the bearer token (openai) or
// x-api-key (anthropic).
func (r Request) Key() string {
	if r.Format == llm.KindAnthropic {
		return r.Header.Get("x-api-key")
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// Model is the request's model name.
func (r Request) Model() string {
	var b struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(r.Body, &b)
	return b.Model
}

// ToolResult is a tool's result the client sent back to the model.
type ToolResult struct {
	ID      string
	Content string
}

// ToolResults are the tool results in the request's conversation, in order.
func (r Request) ToolResults() []ToolResult {
	var out []ToolResult
	if r.Format == llm.KindAnthropic {
		var b struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(r.Body, &b)
		for _, m := range b.Messages {
			var blocks []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
				Content   string `json:"content"`
			}
			if json.Unmarshal(m.Content, &blocks) != nil {
				continue
			}
			for _, bl := range blocks {
				if bl.Type == "tool_result" {
					out = append(out, ToolResult{ID: bl.ToolUseID, Content: bl.Content})
				}
			}
		}
		return out
	}
	var b struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(r.Body, &b)
	for _, m := range b.Messages {
		if m.Role == "tool" {
			out = append(out, ToolResult{ID: m.ToolCallID, Content: m.Content})
		}
	}
	return out
}

// Server is a running test model server.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	script   Script
	next     int
	requests []Request
}

// Start serves script until the test ends.
func Start(t testing.TB, script Script) *Server {
	t.Helper()
	s := New(script)
	t.Cleanup(s.Close)
	return s
}

// New serves script until Close.
func New(script Script) *Server {
	s := &Server{script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the base_url of a provider on the server (both formats).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetScript replaces the script and starts it from its first turn; the
// requests recorded stay.
func (s *Server) SetScript(script Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.next = script, 0
}

// Requests returns a copy of the requests got so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// take records r and returns the turn that answers it; ok is false when
// the script is exhausted.
func (s *Server) take(r Request) (Turn, int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.next
	var turn Turn
	ok := false
	switch {
	case i < len(s.script):
		turn, ok = s.script[i], true
		if !turn.Forever {
			s.next++
		}
	case len(s.script) > 0 && s.script[len(s.script)-1].Forever:
		i = len(s.script) - 1
		turn, ok = s.script[i], true
	}
	r.Turn = i
	s.requests = append(s.requests, r)
	return turn, len(s.requests), ok
}

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	var format string
	switch {
	case hr.Method != http.MethodPost:
		http.Error(w, "llmtest: POST only", http.StatusMethodNotAllowed)
		return
	case strings.HasSuffix(hr.URL.Path, "/chat/completions"):
		format = llm.KindOpenAI
	case strings.HasSuffix(hr.URL.Path, "/messages"):
		format = llm.KindAnthropic
	default:
		http.NotFound(w, hr)
		return
	}
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		return
	}
	req := Request{Format: format, Path: hr.URL.Path, Header: hr.Header.Clone(), Body: body}
	if msg := check(req); msg != "" {
		s.take(req)
		writeError(w, format, http.StatusBadRequest, "", msg)
		return
	}
	turn, n, ok := s.take(req)
	if !ok {
		writeError(w, format, http.StatusBadRequest, "", "llmtest: script exhausted")
		return
	}
	if turn.Delay > 0 {
		select {
		case <-time.After(turn.Delay):
		case <-hr.Context().Done():
			return
		}
	}
	if turn.Block != nil {
		select {
		case <-turn.Block:
		case <-hr.Context().Done():
			return
		}
	}
	switch {
	case turn.Status != 0:
		writeError(w, format, turn.Status, turn.RetryAfter, turn.Message)
		return
	case turn.Malformed:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices": [ {"message": `)
		return
	}
	usage := turn.Usage
	if usage == (llm.Usage{}) {
		usage = DefaultUsage
	}
	calls := make([]llm.ToolCall, len(turn.ToolCalls))
	for i, c := range turn.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", n, i)
		}
		calls[i] = c
	}
	var out any
	if format == llm.KindOpenAI {
		out = openAIAnswer(turn.Text, calls, usage, n)
	} else {
		out = anthropicAnswer(turn.Text, calls, usage, n, req.Model())
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// check refuses what the real servers refuse: no key, no model, no
// messages, and for anthropic no version header or max_tokens.
func check(r Request) string {
	var b struct {
		Model     string            `json:"model"`
		Messages  []json.RawMessage `json:"messages"`
		MaxTokens *int              `json:"max_tokens"`
	}
	if err := json.Unmarshal(r.Body, &b); err != nil {
		return "llmtest: body is not JSON: " + err.Error()
	}
	switch {
	case r.Key() == "":
		return "llmtest: no API key"
	case b.Model == "":
		return "model: required"
	case len(b.Messages) == 0:
		return "messages: required"
	}
	if r.Format == llm.KindAnthropic {
		if r.Header.Get("anthropic-version") == "" {
			return "anthropic-version: header required"
		}
		if b.MaxTokens == nil {
			return "max_tokens: required"
		}
	}
	return ""
}

func writeError(w http.ResponseWriter, format string, status int, retryAfter, msg string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	var body any
	if format == llm.KindOpenAI {
		body = map[string]any{"error": map[string]any{"message": msg, "type": "llmtest_error"}}
	} else {
		body = map[string]any{"type": "error", "error": map[string]any{"type": "llmtest_error", "message": msg}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func openAIAnswer(text string, calls []llm.ToolCall, u llm.Usage, n int) any {
	msg := map[string]any{"role": "assistant", "content": nil}
	if text != "" {
		msg["content"] = text
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
		var tcs []any
		for _, c := range calls {
			tcs = append(tcs, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": string(c.Arguments)}})
		}
		msg["tool_calls"] = tcs
	}
	return map[string]any{
		"id": fmt.Sprintf("chatcmpl-llmtest-%d", n), "object": "chat.completion", "model": "llmtest",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens,
			"total_tokens": u.InputTokens + u.OutputTokens},
	}
}

func anthropicAnswer(text string, calls []llm.ToolCall, u llm.Usage, n int, model string) any {
	content := []any{}
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	stop := "end_turn"
	for _, c := range calls {
		stop = "tool_use"
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Arguments})
	}
	return map[string]any{
		"id": fmt.Sprintf("msg_llmtest_%d", n), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop,
		"usage": map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens},
	}
}
