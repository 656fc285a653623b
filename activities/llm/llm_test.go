package llm_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/activities/llm"
	"github.com/primerhq/primer/activities/llm/llmtest"
	"github.com/primerhq/primer/internal/outbound"
)

const testKey = "sk-test-5ecret-key-value"

var formats = []string{llm.KindOpenAI, llm.KindAnthropic}

func endpoint(s *llmtest.Server, kind string) llm.Endpoint {
	return llm.Endpoint{Kind: kind, BaseURL: s.URL(), APIKey: testKey}
}

var writeTool = llm.Tool{Name: "workspace__write", Description: "write a file",
	Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}`)}

// TestToolCallRoundTrip runs the code-runner script: two tool calls, their
// results sent back, then the final text; the server saw the key, the
// model, the tool results in order.
func TestToolCallRoundTrip(t *testing.T) {
	for _, kind := range formats {
		t.Run(kind, func(t *testing.T) {
			srv := llmtest.Start(t, llmtest.CodeRunnerScript())
			e := endpoint(srv, kind)
			req := llm.Request{Model: "test-model", System: "You run code.", Tools: []llm.Tool{writeTool},
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "Run this code: print(6 * 7)"}}}
			wantCalls := []string{"workspace__write", "workspace__exec"}
			for i, want := range wantCalls {
				resp, err := llm.Complete(t.Context(), loopback(t), e, req)
				if err != nil {
					t.Fatalf("turn %d: %v", i, err)
				}
				if resp.StopReason != llm.StopToolCalls || len(resp.Message.ToolCalls) != 1 {
					t.Fatalf("turn %d: stop %q, calls %+v; want one tool call", i, resp.StopReason, resp.Message.ToolCalls)
				}
				tc := resp.Message.ToolCalls[0]
				if tc.Name != want || tc.ID == "" {
					t.Fatalf("turn %d: call %+v, want %s with an id", i, tc, want)
				}
				var args map[string]string
				if err := json.Unmarshal(tc.Arguments, &args); err != nil {
					t.Fatalf("turn %d: arguments %s: %v", i, tc.Arguments, err)
				}
				if i == 0 && (args["path"] != "snippet.py" || args["content"] != "print(6 * 7)\n") {
					t.Fatalf("write args = %v", args)
				}
				if i == 1 && args["command"] != "python3 snippet.py > out.txt" {
					t.Fatalf("exec args = %v", args)
				}
				if resp.Usage != llmtest.DefaultUsage {
					t.Fatalf("usage = %+v, want %+v", resp.Usage, llmtest.DefaultUsage)
				}
				req.Messages = append(req.Messages, resp.Message,
					llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: `{"result":` + string(rune('0'+i)) + `}`})
			}
			resp, err := llm.Complete(t.Context(), loopback(t), e, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StopReason != llm.StopEnd || resp.Message.Content != "The snippet printed 42." || len(resp.Message.ToolCalls) != 0 {
				t.Fatalf("final = %+v", resp)
			}
			if resp.Message.Role != llm.RoleAssistant {
				t.Fatalf("role = %q", resp.Message.Role)
			}

			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("server got %d requests, want 3", len(reqs))
			}
			for i, r := range reqs {
				if r.Format != kind || r.Key() != testKey || r.Model() != "test-model" {
					t.Fatalf("request %d: format %q key %q model %q", i, r.Format, r.Key(), r.Model())
				}
			}
			if kind == llm.KindAnthropic {
				if v := reqs[0].Header.Get("anthropic-version"); v != llm.AnthropicVersion {
					t.Fatalf("anthropic-version = %q", v)
				}
				if reqs[0].Header.Get("Authorization") != "" {
					t.Fatal("anthropic request carries an Authorization header")
				}
			}
			last := reqs[2].ToolResults()
			if len(last) != 2 || last[0].Content != `{"result":0}` || last[1].Content != `{"result":1}` {
				t.Fatalf("tool results sent = %+v", last)
			}
			for i, tr := range last {
				if id := req.Messages[1+2*i].ToolCalls[0].ID; tr.ID != id {
					t.Fatalf("tool result %d for %q, want the call's id %q", i, tr.ID, id)
				}
			}
			if !strings.Contains(string(reqs[0].Body), "You run code.") {
				t.Fatalf("system prompt not sent: %s", reqs[0].Body)
			}
		})
	}
}

// TestSamplingAndUsage: sampling settings and max_tokens reach the server;
// a turn's usage is parsed.
func TestSamplingAndUsage(t *testing.T) {
	for _, kind := range formats {
		t.Run(kind, func(t *testing.T) {
			srv := llmtest.Start(t, llmtest.Script{{Text: "hi", Usage: llm.Usage{InputTokens: 1234, OutputTokens: 56}}})
			temp, topP := 0.25, 0.5
			resp, err := llm.Complete(t.Context(), loopback(t), endpoint(srv, kind), llm.Request{Model: "m", MaxTokens: 77,
				Temperature: &temp, TopP: &topP, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage != (llm.Usage{InputTokens: 1234, OutputTokens: 56}) {
				t.Fatalf("usage = %+v", resp.Usage)
			}
			var body struct {
				MaxTokens   int      `json:"max_tokens"`
				Temperature *float64 `json:"temperature"`
				TopP        *float64 `json:"top_p"`
			}
			if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			if body.MaxTokens != 77 || body.Temperature == nil || *body.Temperature != temp || body.TopP == nil || *body.TopP != topP {
				t.Fatalf("sent max_tokens %d temperature %v top_p %v", body.MaxTokens, body.Temperature, body.TopP)
			}
		})
	}
}

func apiError(t *testing.T, err error) *llm.APIError {
	t.Helper()
	var ae *llm.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want *llm.APIError", err, err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Fatalf("error text holds the key: %v", err)
	}
	return ae
}

// TestErrors: 429 with Retry-After and 500 are retryable, a 400 is not and
// says its status only (never the server's body), a malformed body is a clear non-retryable
// error; no error holds the key, even when the server echoes it.
func TestErrors(t *testing.T) {
	for _, kind := range formats {
		t.Run(kind, func(t *testing.T) {
			srv := llmtest.Start(t, llmtest.Script{
				llmtest.ErrorTurn(http.StatusTooManyRequests, "7", "rate limited"),
				llmtest.ErrorTurn(http.StatusInternalServerError, "", "overloaded"),
				llmtest.ErrorTurn(http.StatusBadRequest, "", "model 'nope' does not exist; your key "+testKey+" is fine"),
				llmtest.MalformedTurn(),
				llmtest.TextTurn("ok"),
			})
			e := endpoint(srv, kind)
			req := llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}

			_, err := llm.Complete(t.Context(), loopback(t), e, req)
			ae := apiError(t, err)
			if ae.Status != 429 || !ae.Retryable() || ae.RetryAfter != 7*time.Second || ae.Message != "Too Many Requests (the answer's body is not shown)" {
				t.Fatalf("429: %+v retryable %v", ae, ae.Retryable())
			}

			_, err = llm.Complete(t.Context(), loopback(t), e, req)
			ae = apiError(t, err)
			if ae.Status != 500 || !ae.Retryable() || ae.RetryAfter != 0 || strings.Contains(ae.Message, "overloaded") {
				t.Fatalf("500: %+v", ae)
			}

			// The server's message is not repeated: the server is the
			// user's choice, and its answer may be anything.
			_, err = llm.Complete(t.Context(), loopback(t), e, req)
			ae = apiError(t, err)
			if ae.Status != 400 || ae.Retryable() || strings.Contains(ae.Message, "nope") || ae.Message != "Bad Request (the answer's body is not shown)" {
				t.Fatalf("400: %+v", ae)
			}

			_, err = llm.Complete(t.Context(), loopback(t), e, req)
			ae = apiError(t, err)
			if ae.Retryable() || !strings.HasPrefix(ae.Message, "malformed response: ") {
				t.Fatalf("malformed: %+v", ae)
			}

			if resp, err := llm.Complete(t.Context(), loopback(t), e, req); err != nil || resp.Message.Content != "ok" {
				t.Fatalf("after the errors: %+v, %v", resp, err)
			}
		})
	}
}

// TestTransportErrors: a server that is gone is a retryable error; an
// unknown kind is not.
func TestTransportErrors(t *testing.T) {
	srv := llmtest.New(nil)
	url := srv.URL()
	srv.Close()
	_, err := llm.Complete(t.Context(), loopback(t), llm.Endpoint{Kind: llm.KindOpenAI, BaseURL: url, APIKey: testKey},
		llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if ae := apiError(t, err); ae.Status != 0 || !ae.Retryable() {
		t.Fatalf("refused connection: %+v retryable %v", ae, ae.Retryable())
	}
	_, err = llm.Complete(t.Context(), loopback(t), llm.Endpoint{Kind: "gemini", BaseURL: url, APIKey: testKey}, llm.Request{})
	if ae := apiError(t, err); ae.Retryable() || !strings.Contains(ae.Message, "gemini") {
		t.Fatalf("unknown kind: %+v", ae)
	}
}

// TestRetryAfterDate: an HTTP-date Retry-After becomes the time until it.
func TestRetryAfterDate(t *testing.T) {
	when := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	srv := llmtest.Start(t, llmtest.Script{llmtest.ErrorTurn(http.StatusServiceUnavailable, when, "")})
	_, err := llm.Complete(t.Context(), loopback(t), endpoint(srv, llm.KindOpenAI),
		llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	ae := apiError(t, err)
	if ae.RetryAfter < 80*time.Second || ae.RetryAfter > 91*time.Second {
		t.Fatalf("RetryAfter = %v, want about 90s", ae.RetryAfter)
	}
}

// TestForever: a Forever turn answers every later request (a model that
// never stops calling tools); a plain script runs out with a 400.
func TestForever(t *testing.T) {
	srv := llmtest.Start(t, llmtest.Script{func() llmtest.Turn {
		tt := llmtest.ToolTurn("workspace__exec", map[string]string{"command": "true"})
		tt.Forever = true
		return tt
	}()})
	e := endpoint(srv, llm.KindAnthropic)
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	ids := map[string]bool{}
	for range 5 {
		resp, err := llm.Complete(t.Context(), loopback(t), e, req)
		if err != nil || len(resp.Message.ToolCalls) != 1 {
			t.Fatalf("%+v, %v", resp, err)
		}
		ids[resp.Message.ToolCalls[0].ID] = true
	}
	if len(ids) != 5 {
		t.Fatalf("tool call ids not unique: %v", ids)
	}
	srv.SetScript(nil)
	_, err := llm.Complete(t.Context(), loopback(t), e, req)
	if ae := apiError(t, err); ae.Status != 400 || strings.Contains(ae.Message, "script exhausted") {
		t.Fatalf("exhausted: %+v", ae)
	}
}

// loopback is a client whose outbound policy allows the test servers on
// 127.0.0.1.
func loopback(t *testing.T) *http.Client {
	t.Helper()
	p, err := outbound.Parse("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return p.HTTPClient(0)
}

// TestRefusedAddress: without an allowlist, the test server on loopback is
// refused at dial time, not retried, and receives nothing.
func TestRefusedAddress(t *testing.T) {
	srv := llmtest.Start(t, llmtest.Script{llmtest.TextTurn("ok")})
	for _, hc := range []*http.Client{nil, (&outbound.Policy{}).HTTPClient(0)} {
		_, err := llm.Complete(t.Context(), hc, endpoint(srv, llm.KindOpenAI),
			llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
		ae := apiError(t, err)
		if ae.Retryable() || !strings.Contains(ae.Message, "is a loopback address") {
			t.Fatalf("refused dial: %+v retryable %v", ae, ae.Retryable())
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("the server received %d requests", n)
	}
}
