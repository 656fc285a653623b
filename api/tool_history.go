package api

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// commitID checks a commit id given in field: 40 hex digits.
func commitID(field, id string) error {
	if id == "" {
		return errs.Field(field, "%s: required", field)
	}
	if len(id) != 40 {
		return errs.Field(field, "%s %q: want a commit id of 40 hex digits", field, id)
	}
	if _, err := hex.DecodeString(id); err != nil {
		return errs.Field(field, "%s %q: want a commit id of 40 hex digits", field, id)
	}
	return nil
}

// sessionHistory lists the session's recorded calls, newest first. With
// ?include_resumed=true the calls of the lost sessions it resumes (and
// those they resumed) are listed too.
func (s *server) sessionHistory(c *gin.Context) {
	t, err := s.sessionTarget(c, false)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	sessions := map[string]bool{t.ses.ID: true}
	params := protocol.StateLogParams{TrailerKey: TrailerSession, TrailerValue: t.ses.ID}
	if boolQuery(c, "include_resumed") && t.ses.ResumedFrom != "" {
		// The chain is short (a session is resumed at most once); the
		// bound only guards against a cycle in bad data.
		for id, hops := t.ses.ResumedFrom, 0; id != "" && hops < 64 && !sessions[id]; hops++ {
			sessions[id] = true
			prev, err := s.cfg.Store.GetSession(ctx, id)
			if err != nil {
				break
			}
			id = prev.ResumedFrom
		}
		// One walk of the history for every session of the chain.
		params.TrailerValue = ""
	}
	res, err := t.cl.StateLog(ctx, params)
	if err != nil {
		s.fail(c, fmt.Errorf("session %s: workspace %s: %w", t.ses.ID, t.ws.ID, err))
		return
	}
	out := wire.History{Items: []wire.HistoryEntry{}, ResumedFrom: t.ses.ResumedFrom}
	for _, cm := range res.Commits {
		if !sessions[cm.Trailers[TrailerSession]] {
			continue
		}
		out.Items = append(out.Items, entryOf(cm))
	}
	c.JSON(http.StatusOK, out)
}

// entryOf reads a recorded call back from its commit.
func entryOf(cm protocol.StateCommit) wire.HistoryEntry {
	e := wire.HistoryEntry{
		Commit:  cm.Commit,
		Session: cm.Trailers[TrailerSession],
		Tool:    cm.Trailers[TrailerTool],
		Time:    cm.Time,
		Author:  cm.AuthorName,
	}
	lines := strings.Split(cm.Message, "\n")
	e.Summary = lines[0]
	for _, l := range lines[1:] {
		switch {
		case strings.HasPrefix(l, "Arguments: "):
			e.Arguments = rawOrString(strings.TrimPrefix(l, "Arguments: "))
		case strings.HasPrefix(l, "Result: "):
			e.Result = rawOrString(strings.TrimPrefix(l, "Result: "))
		}
	}
	return e
}

// rawOrString is v as JSON when it is JSON, else v as a JSON string (a
// message written by hand).
func rawOrString(v string) json.RawMessage {
	if json.Valid([]byte(v)) {
		return json.RawMessage(v)
	}
	b, _ := json.Marshal(v)
	return b
}

// sessionDiff compares two commits of the session's workspace: ?commit=X
// (X against its parent) or ?from=A&to=B.
func (s *server) sessionDiff(c *gin.Context) {
	commit, from, to := c.Query("commit"), c.Query("from"), c.Query("to")
	switch {
	case commit != "" && (from != "" || to != ""):
		s.fail(c, errs.Field("commit", "commit: give commit, or from and to, not both"))
		return
	case commit != "":
		if err := commitID("commit", commit); err != nil {
			s.fail(c, err)
			return
		}
		to = commit
	case from == "" && to == "":
		s.fail(c, errs.Field("commit", "commit (or from and to): required"))
		return
	}
	for _, q := range []struct{ field, v string }{{"from", from}, {"to", to}} {
		if q.v == "" {
			continue
		}
		if err := commitID(q.field, q.v); err != nil {
			s.fail(c, err)
			return
		}
	}
	t, err := s.sessionTarget(c, false)
	if err != nil {
		s.fail(c, err)
		return
	}
	res, err := t.cl.StateDiff(c.Request.Context(), protocol.StateDiffParams{From: from, To: to})
	if err != nil {
		s.fail(c, fmt.Errorf("session %s: workspace %s: %w", t.ses.ID, t.ws.ID, err))
		return
	}
	files := res.Files
	if files == nil {
		files = []protocol.StateChange{}
	}
	c.JSON(http.StatusOK, wire.Diff{From: res.From, To: res.To, Files: files, Patch: res.Patch, Truncated: res.Truncated})
}

// sessionRestore makes the workspace's files those of a commit, recorded
// as a new commit of the session.
func (s *server) sessionRestore(c *gin.Context) {
	var spec wire.RestoreRequest
	if err := s.decodeJSON(c, &spec, "", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := commitID("commit", spec.Commit); err != nil {
		s.fail(c, err)
		return
	}
	t, err := s.sessionTarget(c, true)
	if err != nil {
		s.fail(c, err)
		return
	}
	params, err := restoreCommit(t.ses, spec.Commit)
	if err != nil {
		s.fail(c, err)
		return
	}
	res, err := t.cl.StateRestore(c.Request.Context(), protocol.StateRestoreParams{Commit: spec.Commit, StateCommitParams: params})
	if err != nil {
		s.fail(c, fmt.Errorf("session %s: workspace %s: %w", t.ses.ID, t.ws.ID, err))
		return
	}
	s.log.Info("session restored", "session_id", t.ses.ID, "workspace_id", t.ws.ID, "restored_from", res.RestoredFrom, "commit", res.Commit)
	changed := res.Changed
	if changed == nil {
		changed = []protocol.StateChange{}
	}
	c.JSON(http.StatusOK, wire.Restore{Commit: res.Commit, RestoredFrom: res.RestoredFrom, Changed: changed})
}
