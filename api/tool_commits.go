package api

import (
	"context"
	"fmt"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/sessiontool"
)

// Trailers of a tool call's commit.
const (
	TrailerSession = sessiontool.TrailerSession
	TrailerTool    = sessiontool.TrailerTool
)

// redactedValue stands for an env value in a call's recorded arguments;
// summaryWidth is the widest a commit's summary line gets.
const (
	redactedValue = "[redacted]"
	summaryWidth  = sessiontool.SummaryWidth
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
// naming the session. The API's tools and an agent run's (sessiontool) sign
// and describe their commits alike.
func author(ses *models.Session) (name, email string) { return sessiontool.Author(ses) }

// callMessage is the commit message of a call: a one-line summary, a body
// with the tool, its arguments and its result as JSON, and the trailers
// that tie the commit to its session and tool.
func callMessage(sessionID, tool, summary string, args, result any) (string, error) {
	return sessiontool.CallMessage(sessionID, tool, summary, "", args, result)
}

// shellJoin quotes argv the way a shell would read it back.
func shellJoin(argv []string) string { return sessiontool.ShellJoin(argv) }

func shellQuote(s string) string { return sessiontool.ShellQuote(s) }

func sha256Hex(b []byte) string { return sessiontool.SHA256(b) }
