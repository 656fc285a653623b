package api

import (
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/sessiontool"
	"github.com/primerhq/primer/wire"
)

// Trailers of a tool call's commit.
const (
	TrailerSession = sessiontool.TrailerSession
	TrailerTool    = sessiontool.TrailerTool
)

// restoreCommit is the author and message of a restore's commit, described
// and signed as sessiontool records a tool call. The message is written
// before the restore, so it has no result.
func restoreCommit(ses *wire.Session, commit string) (protocol.StateCommitParams, error) {
	msg, err := sessiontool.CallMessage(ses.ID, ToolRestore, ToolRestore+": "+commit, "", map[string]string{"commit": commit}, nil)
	if err != nil {
		return protocol.StateCommitParams{}, err
	}
	name, email := sessiontool.Author(ses)
	return protocol.StateCommitParams{AuthorName: name, AuthorEmail: email, Message: msg}, nil
}
