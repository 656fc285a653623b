package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// The Anthropic messages wire format.

// AnthropicVersion is the anthropic-version header every request carries.
const AnthropicVersion = "2023-06-01"

// defaultMaxTokens is sent when the agent sets none: the format requires it.
const defaultMaxTokens = 4096

type anRequest struct {
	Model       string      `json:"model"`
	System      string      `json:"system,omitempty"`
	Messages    []anMessage `json:"messages"`
	Tools       []anTool    `json:"tools,omitempty"`
	MaxTokens   int         `json:"max_tokens"`
	Temperature *float64    `json:"temperature,omitempty"`
	TopP        *float64    `json:"top_p,omitempty"`
}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

// anBlock is a content block: text, tool_use or tool_result.
type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
}

type anTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anResponse struct {
	Type       string    `json:"type"`
	Content    []anBlock `json:"content"`
	StopReason string    `json:"stop_reason"`
	Usage      *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// anMessages turns a conversation into the format's alternating turns:
// tool results are user-role tool_result blocks, and consecutive messages
// of one role join into one.
func anMessages(ms []Message) []anMessage {
	var out []anMessage
	for _, m := range ms {
		role := m.Role
		var blocks []anBlock
		switch m.Role {
		case RoleTool:
			role = RoleUser
			blocks = []anBlock{{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content}}
		default:
			if m.Content != "" {
				blocks = append(blocks, anBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: objectOrEmpty(tc.Arguments)})
			}
		}
		if len(blocks) == 0 {
			blocks = []anBlock{{Type: "text", Text: ""}}
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			continue
		}
		out = append(out, anMessage{Role: role, Content: blocks})
	}
	return out
}

func completeAnthropic(ctx context.Context, hc *http.Client, e Endpoint, req Request) (Response, error) {
	body := anRequest{Model: req.Model, System: req.System, Messages: anMessages(req.Messages),
		MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP}
	if body.MaxTokens <= 0 {
		body.MaxTokens = defaultMaxTokens
	}
	for _, t := range req.Tools {
		body.Tools = append(body.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: objectOrEmpty(t.Parameters)})
	}
	headers := map[string]string{"anthropic-version": AnthropicVersion}
	if e.APIKey != "" {
		headers["x-api-key"] = e.APIKey
	}
	raw, status, err := post(ctx, hc, e, endpointURL(e.BaseURL, "/messages"), headers, body)
	if err != nil {
		return Response{}, err
	}
	var ar anResponse
	if err := json.Unmarshal(raw, &ar); err != nil {
		return Response{}, malformed(status, "not a message")
	}
	if ar.Type != "message" {
		return Response{}, malformed(status, `type is not "message"`)
	}
	out := Response{Message: Message{Role: RoleAssistant}}
	for i, b := range ar.Content {
		switch b.Type {
		case "text":
			out.Message.Content += b.Text
		case "tool_use":
			if b.Name == "" {
				return Response{}, malformed(status, fmt.Sprintf("content block %d: tool_use without a name", i))
			}
			args := b.Input
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage(`{}`)
			}
			out.Message.ToolCalls = append(out.Message.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	out.StopReason = stopReason(len(out.Message.ToolCalls), ar.StopReason == "max_tokens")
	if ar.Usage != nil {
		out.Usage = Usage{InputTokens: ar.Usage.InputTokens, OutputTokens: ar.Usage.OutputTokens}
	}
	return out, nil
}
