package gateway

import (
	"bytes"
	"encoding/json"
)

// maxMeteredBody bounds how much of a non-streamed answer the meter keeps
// to read its usage; a larger answer passes through unmetered in tokens.
const maxMeteredBody = 8 << 20

// meter reads token usage from an answer as it passes: a JSON body's
// usage, or a stream's usage events (OpenAI's final chat chunk with usage
// and response.completed, Anthropic's message_start and message_delta).
type meter struct {
	sse     bool
	buf     bytes.Buffer // the body, or the stream's unfinished line
	over    bool
	in, out int64
}

// usage holds both APIs' names for the counts.
type usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
}

// withUsage is where usage sits in a body or an event.
type withUsage struct {
	Usage   *usage `json:"usage"`
	Message *struct {
		Usage *usage `json:"usage"`
	} `json:"message"`
	Response *struct {
		Usage *usage `json:"usage"`
	} `json:"response"`
}

func (m *meter) feed(p []byte) {
	if !m.sse {
		if m.over || m.buf.Len()+len(p) > maxMeteredBody {
			m.over = true
			m.buf.Reset()
			return
		}
		m.buf.Write(p)
		return
	}
	m.buf.Write(p)
	for {
		line, err := m.buf.ReadBytes('\n')
		if err != nil {
			// An unfinished line waits for the rest.
			rest := append([]byte(nil), line...)
			m.buf.Reset()
			m.buf.Write(rest)
			if m.buf.Len() > maxMeteredBody {
				m.buf.Reset()
			}
			return
		}
		line = bytes.TrimSpace(line)
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			m.take(bytes.TrimSpace(data))
		}
	}
}

// done reads a whole body's usage.
func (m *meter) done() {
	if !m.sse && !m.over {
		m.take(m.buf.Bytes())
	}
}

// take reads one JSON document's usage; later counts replace earlier ones
// (Anthropic's message_delta carries the running output count).
func (m *meter) take(doc []byte) {
	if len(doc) == 0 || doc[0] != '{' {
		return
	}
	var v withUsage
	if json.Unmarshal(doc, &v) != nil {
		return
	}
	for _, u := range []*usage{v.Usage, msgUsage(v), respUsage(v)} {
		if u == nil {
			continue
		}
		if n := max(u.PromptTokens, u.InputTokens); n > 0 {
			m.in = n
		}
		if n := max(u.CompletionTokens, u.OutputTokens); n > 0 {
			m.out = n
		}
	}
}

func msgUsage(v withUsage) *usage {
	if v.Message == nil {
		return nil
	}
	return v.Message.Usage
}

func respUsage(v withUsage) *usage {
	if v.Response == nil {
		return nil
	}
	return v.Response.Usage
}
