package sessiontool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// Record commits the workspace as it is after a call, with a message
// describing it, and returns the commit's id.
func Record(ctx context.Context, t Target, tool, summary string, args, result any) (string, error) {
	msg, err := CallMessage(t.Session.ID, tool, summary, "", args, result)
	if err != nil {
		return "", err
	}
	return commit(ctx, t, tool, msg)
}

// RecordAssistant commits an assistant turn: its text in the message body.
func RecordAssistant(ctx context.Context, t Target, turn int, text string, toolCalls []string) (string, error) {
	summary := fmt.Sprintf("assistant: turn %d", turn)
	if line, _, _ := strings.Cut(strings.TrimSpace(text), "\n"); line != "" {
		summary += ": " + line
	}
	var result any
	if len(toolCalls) > 0 {
		result = map[string]any{"tool_calls": toolCalls}
	}
	msg, err := CallMessage(t.Session.ID, Assistant, summary, text, map[string]any{"turn": turn}, result)
	if err != nil {
		return "", err
	}
	return commit(ctx, t, Assistant, msg)
}

func commit(ctx context.Context, t Target, tool, msg string) (string, error) {
	name, email := Author(t.Session)
	p := protocol.StateCommitParams{AuthorName: name, AuthorEmail: email, Message: msg}
	if t.History != nil {
		p.Expect = t.Session.StateHead
	}
	res, err := t.Client.StateCommit(ctx, p)
	if err != nil {
		return "", fmt.Errorf("session %s: %s ran, but recording it in the history failed: %w", t.Session.ID, tool, err)
	}
	if err := checkHead(ctx, t, p.Expect, res); err != nil {
		return "", err
	}
	return res.Commit, nil
}

// Author signs a session's commits: its agent (or "primer"), and an
// address naming the session.
func Author(ses *wire.Session) (name, email string) {
	name = strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, ses.Agent)
	if name = strings.TrimSpace(name); name == "" {
		name = "primer"
	}
	return name, ses.ID + "@sessions.primer"
}

// CallMessage is the commit message of a call: a one-line summary, an
// optional text, the tool, its arguments and result as JSON, and the
// trailers.
func CallMessage(sessionID, tool, summary, text string, args, result any) (string, error) {
	var b strings.Builder
	b.WriteString(oneLine(summary, SummaryWidth))
	if text != "" {
		b.WriteString("\n\n")
		b.WriteString(strings.TrimRight(text, "\n"))
	}
	b.WriteString("\n\nTool: ")
	b.WriteString(tool)
	if args != nil {
		js, err := compactJSON(args)
		if err != nil {
			return "", err
		}
		if len(js) > maxRecordedArgs {
			js, _ = compactJSON(map[string]any{"omitted_bytes": len(js), "sha256": SHA256(js)})
		}
		b.WriteString("\nArguments: ")
		b.Write(js)
	}
	if result != nil {
		js, err := compactJSON(result)
		if err != nil {
			return "", err
		}
		b.WriteString("\nResult: ")
		b.Write(js)
	}
	b.WriteString("\n\n" + TrailerSession + ": " + sessionID)
	b.WriteString("\n" + TrailerTool + ": " + tool + "\n")
	return b.String(), nil
}

func compactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode commit message: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func oneLine(s string, width int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-3]) + "..."
}
