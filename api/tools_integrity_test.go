package api

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"

	"github.com/primerhq/primer/wire"
)

// TestSessionHistoryRewriteReported: a session's exec that rewrites the
// .state history (git commit --amend, git reset) is reported as a
// session.history_rewritten event naming the session and the commit it
// lost, and the session's response carries the history's size. A session
// whose calls leave the history alone reports nothing.
func TestSessionHistoryRewriteReported(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed; the rewrite is made with the git CLI")
	}
	for _, rewrite := range []string{
		"git --git-dir=.state -c user.name=x -c user.email=x@x commit -q --amend --allow-empty -m forged",
		"git --git-dir=.state reset -q --soft HEAD~1",
	} {
		t.Run(rewrite, func(t *testing.T) {
			h := newHarness(t)
			w, _ := h.runningWorkspace()
			ses := h.session(w, "claude")
			base := "/v1/sessions/" + ses.ID
			var wr writeToolResult
			h.do("POST", base+"/tools/workspace__write", `{"path":"a.txt","content":"one"}`).expect(t, 200).decode(t, &wr)
			h.do("POST", base+"/tools/workspace__write", `{"path":"b.txt","content":"two"}`).expect(t, 200).decode(t, &wr)
			if n := rewrites(t, h, w.ID); n != nil {
				t.Fatalf("untouched history: events %v, want none", n)
			}
			var got wire.Session
			h.do("GET", base, nil).expect(t, 200).decode(t, &got)
			if got.StateHead != wr.Commit || got.HistoryBytes <= 0 {
				t.Errorf("session after two calls: state_head %q history_bytes %d, want %s and the history's size", got.StateHead, got.HistoryBytes, wr.Commit)
			}

			h.do("POST", base+"/tools/workspace__exec", map[string]any{"command": rewrite}).expect(t, 200)
			evs := rewrites(t, h, w.ID)
			if len(evs) != 1 || evs[0]["session_id"] != ses.ID || evs[0]["expected"] != wr.Commit {
				t.Fatalf("after %q: events %v, want one naming session %s and commit %s", rewrite, evs, ses.ID, wr.Commit)
			}
		})
	}
}

// rewrites returns the data of workspace id's history_rewritten events.
func rewrites(t *testing.T, h *harness, id string) []map[string]string {
	t.Helper()
	evs, err := h.store.ListEvents(context.Background(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, e := range evs {
		if e.Type == wire.EventHistoryRewritten {
			var d map[string]string
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(fmt.Errorf("event data %s: %w", e.Data, err))
			}
			out = append(out, d)
		}
	}
	return out
}
