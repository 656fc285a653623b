package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/protocol"
)

// Trailers of a tool call's commit.
const (
	TrailerSession = "Primer-Session"
	TrailerTool    = "Primer-Tool"
)

// Commit message limits: git's customary summary width, and the most of a
// call's arguments kept in the message (beyond it only their size and
// digest are).
const (
	summaryWidth      = 72
	maxRecordedArgs   = 16 << 10
	redactedValue     = "[redacted]"
	defaultAuthorName = "primer"
)

// recordCall commits the workspace as it is after a tool call, with a
// message describing the call, and returns the commit's id.
func (s *server) recordCall(ctx context.Context, t *sessionTarget, tool, summary string, args, result any) (string, error) {
	msg, err := callMessage(t.ses.ID, tool, summary, args, result)
	if err != nil {
		return "", err
	}
	name, email := author(t.ses)
	res, err := t.cl.StateCommit(ctx, protocol.StateCommitParams{AuthorName: name, AuthorEmail: email, Message: msg})
	if err != nil {
		// The call ran: say so, so nobody repeats it blindly.
		return "", fmt.Errorf("session %s: %s ran, but recording it in the history failed: %w", t.ses.ID, tool, err)
	}
	return res.Commit, nil
}

// author signs a session's commits: its agent (or "primer"), and an address
// naming the session.
func author(ses *models.Session) (name, email string) {
	name = strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, ses.Agent)
	if name = strings.TrimSpace(name); name == "" {
		name = defaultAuthorName
	}
	return name, ses.ID + "@sessions.primer"
}

// callMessage is the commit message of a call: a one-line summary, a body
// with the tool, its arguments and its result as JSON, and the trailers
// that tie the commit to its session and tool.
func callMessage(sessionID, tool, summary string, args, result any) (string, error) {
	var b strings.Builder
	b.WriteString(oneLine(summary, summaryWidth))
	b.WriteString("\n\nTool: ")
	b.WriteString(tool)
	if args != nil {
		js, err := compactJSON(args)
		if err != nil {
			return "", err
		}
		if len(js) > maxRecordedArgs {
			js, _ = compactJSON(map[string]any{"omitted_bytes": len(js), "sha256": sha256Hex(js)})
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

// compactJSON encodes v on one line, without HTML escaping.
func compactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode commit message: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// oneLine makes s a single line of at most width characters: control
// characters become spaces, and a longer line ends in "...".
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

// shellJoin quotes argv the way a shell would read it back.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
