package sessiontool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// History keeps each session's last .state commit outside the sandbox
// (models.Store implements it). The sandbox's history is writable by any
// command run in it, so the platform cannot trust it alone: each commit
// names the session's previous one (StateCommitParams.Expect), and one
// that is no longer on the history's line means a command rewrote it.
type History interface {
	SetSessionStateHead(ctx context.Context, sessionID, commit string, bytes int64) error
	AppendEvent(ctx context.Context, e *wire.Event) error
}

// checkHead reports a rewritten history as EventHistoryRewritten and
// records the new commit as the session's head. The call itself stands:
// its commit is recorded either way.
func checkHead(ctx context.Context, t Target, expected string, res protocol.StateCommitResult) error {
	if t.History == nil {
		return nil
	}
	if res.ExpectMissing {
		data, _ := json.Marshal(map[string]string{"session_id": t.Session.ID, "expected": expected, "head": res.Parent})
		if err := t.History.AppendEvent(ctx, &wire.Event{TenantID: t.Session.TenantID, WorkspaceID: t.Session.WorkspaceID,
			Type: wire.EventHistoryRewritten, Data: data}); err != nil {
			return fmt.Errorf("session %s: report a rewritten history: %w", t.Session.ID, err)
		}
	}
	if err := t.History.SetSessionStateHead(ctx, t.Session.ID, res.Commit, res.Bytes); err != nil {
		return fmt.Errorf("session %s: %w", t.Session.ID, err)
	}
	t.Session.StateHead, t.Session.HistoryBytes = res.Commit, res.Bytes
	return nil
}
