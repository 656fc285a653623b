package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// The OpenAI chat-completions wire format, as vLLM, Ollama and llama.cpp's
// server also speak it.

type oaRequest struct {
	Model       string      `json:"model"`
	Messages    []oaMessage `json:"messages"`
	Tools       []oaTool    `json:"tools,omitempty"`
	MaxTokens   int         `json:"max_tokens,omitempty"`
	Temperature *float64    `json:"temperature,omitempty"`
	TopP        *float64    `json:"top_p,omitempty"`
}

type oaMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a JSON object encoded as a string.
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type oaResponse struct {
	Choices []struct {
		Message      oaMessage `json:"message"`
		FinishReason string    `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func completeOpenAI(ctx context.Context, hc *http.Client, e Endpoint, req Request) (Response, error) {
	body := oaRequest{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP}
	if req.System != "" {
		body.Messages = append(body.Messages, oaMessage{Role: "system", Content: ptr(req.System)})
	}
	for _, m := range req.Messages {
		om := oaMessage{Role: m.Role, ToolCallID: m.ToolCallID}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			om.Content = ptr(m.Content)
		}
		for _, tc := range m.ToolCalls {
			var c oaToolCall
			c.ID, c.Type = tc.ID, "function"
			c.Function.Name = tc.Name
			c.Function.Arguments = string(objectOrEmpty(tc.Arguments))
			om.ToolCalls = append(om.ToolCalls, c)
		}
		body.Messages = append(body.Messages, om)
	}
	for _, t := range req.Tools {
		var ot oaTool
		ot.Type = "function"
		ot.Function.Name, ot.Function.Description = t.Name, t.Description
		ot.Function.Parameters = objectOrEmpty(t.Parameters)
		body.Tools = append(body.Tools, ot)
	}
	// A provider without a key (a local model server) sends none.
	headers := map[string]string{}
	if e.APIKey != "" {
		headers["Authorization"] = "Bearer " + e.APIKey
	}
	raw, status, err := post(ctx, hc, e, endpointURL(e.BaseURL, "/chat/completions"), headers, body)
	if err != nil {
		return Response{}, err
	}
	var or oaResponse
	if err := json.Unmarshal(raw, &or); err != nil {
		return Response{}, malformed(status, "not a chat completion")
	}
	if len(or.Choices) == 0 {
		return Response{}, malformed(status, "no choices")
	}
	ch := or.Choices[0]
	out := Response{Message: Message{Role: RoleAssistant}}
	if ch.Message.Content != nil {
		out.Message.Content = *ch.Message.Content
	}
	for i, tc := range ch.Message.ToolCalls {
		args := json.RawMessage(tc.Function.Arguments)
		if tc.Function.Arguments == "" {
			args = json.RawMessage(`{}`)
		}
		if !json.Valid(args) {
			return Response{}, malformed(status, fmt.Sprintf("tool call %d: arguments are not JSON", i))
		}
		if tc.Function.Name == "" {
			return Response{}, malformed(status, fmt.Sprintf("tool call %d: no function name", i))
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}
	out.StopReason = stopReason(len(out.Message.ToolCalls), ch.FinishReason == "length")
	if or.Usage != nil {
		out.Usage = Usage{InputTokens: or.Usage.PromptTokens, OutputTokens: or.Usage.CompletionTokens}
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }
