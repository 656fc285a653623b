package models

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/primerhq/primer/wire"
)

// TestTranscript runs the transcript and agent run store on every dialect:
// appends numbered in order, updates, the end of a run ending its session,
// and a lost session's run resumed on its successor.
func TestTranscript(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			testTranscript(t, t.Context(), s)
		})
	}
}

func testTranscript(t *testing.T, ctx context.Context, s *Store) {
	w := newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, w))
	ses := &wire.Session{WorkspaceID: w.ID, Agent: "code-runner"}
	must(t, s.CreateSession(ctx, ses))
	must(t, s.CreateSessionRun(ctx, &wire.SessionRun{SessionID: ses.ID, AgentID: "code-runner"}, "do it"))
	if err := s.CreateSessionRun(ctx, &wire.SessionRun{SessionID: ses.ID, AgentID: "code-runner"}, "again"); err == nil {
		t.Fatal("a second run of one session was created")
	}
	es, err := s.AppendTranscript(ctx, ses.ID, []wire.TranscriptEntry{
		{Turn: 1, Role: wire.RoleAssistant, Content: "writing", InputTokens: 10, OutputTokens: 3},
		{Turn: 1, Role: wire.RoleTool, ToolName: "workspace__write", ToolArgs: json.RawMessage(`{"path":"a"}`), State: wire.ToolPending},
		{Turn: 1, Role: wire.RoleTool, ToolName: "workspace__exec", ToolArgs: json.RawMessage(`{"command":"true"}`), State: wire.ToolPending},
		{Turn: 1, Role: wire.RoleTool, ToolName: "workspace__read", ToolArgs: json.RawMessage(`{"path":"a"}`), State: wire.ToolPending},
	})
	must(t, err)
	if es[0].Seq != 2 || es[3].Seq != 5 {
		t.Fatalf("appended seqs %d..%d, want 2..5 after the instructions", es[0].Seq, es[3].Seq)
	}
	// The write finished, the exec started, the read never began.
	es[1].State, es[1].ToolResult, es[1].Commit = wire.ToolFinished, json.RawMessage(`{"size":1}`), "c1"
	must(t, s.UpdateTranscriptEntry(ctx, &es[1]))
	es[2].State = wire.ToolStarted
	must(t, s.UpdateTranscriptEntry(ctx, &es[2]))
	if err := s.UpdateTranscriptEntry(ctx, &wire.TranscriptEntry{SessionID: ses.ID, Seq: 99}); err == nil {
		t.Fatal("updating a missing entry succeeded")
	}
	got, err := s.Transcript(ctx, ses.ID, 2)
	must(t, err)
	if len(got) != 3 || got[0].Commit != "c1" || string(got[0].ToolResult) != `{"size":1}` || got[1].State != wire.ToolStarted {
		t.Fatalf("transcript after seq 2 = %+v", got)
	}

	// The workspace is lost: the session ends, the run ends with it, and
	// the successor gets the run, the unfinished calls told what is known.
	_, err = s.EndWorkspaceSessions(ctx, w.ID, wire.ReasonWorkspaceLost)
	must(t, err)
	run, err := s.EndSessionRun(ctx, ses.ID, wire.ReasonWorkspaceLost, "", 1)
	must(t, err)
	if run.Status != wire.AgentEnded || run.EndReason != wire.ReasonWorkspaceLost || run.Turns != 1 {
		t.Fatalf("ended run = %+v", run)
	}
	if _, err := s.ResumedSession(ctx, ses.ID); err == nil {
		t.Fatal("a successor before the recovery")
	}
	resumed, err := s.ResumeLostSessions(ctx, w.ID, w.CreatedAt)
	must(t, err)
	next, err := s.ResumedSession(ctx, ses.ID)
	must(t, err)
	if len(resumed) != 1 || next.ID != resumed[0].ID {
		t.Fatalf("successor %+v, resumed %+v", next, resumed)
	}
	for range 2 { // a second call changes nothing
		r2, err := s.ResumeSessionRun(ctx, ses.ID, next.ID)
		must(t, err)
		if r2.AgentID != "code-runner" || r2.Status != wire.AgentRunning || r2.Turns != 1 {
			t.Fatalf("resumed run = %+v", r2)
		}
	}
	copied, err := s.Transcript(ctx, next.ID, 0)
	must(t, err)
	if len(copied) != 5 || copied[0].Content != "do it" || copied[2].Commit != "c1" {
		t.Fatalf("copied transcript = %+v", copied)
	}
	for i, want := range map[int]string{3: "may or may not have run", 4: "not run"} {
		if e := copied[i]; e.State != wire.ToolFinished || !e.IsError || !strings.Contains(string(e.ToolResult), want) {
			t.Errorf("copied entry %d = %s %s, want finished saying %q", e.Seq, e.State, e.ToolResult, want)
		}
	}
	// The ended session's run ends its session with the run's reason;
	// the first ending wins.
	_, err = s.EndSessionRun(ctx, next.ID, wire.AgentCompleted, "", 2)
	must(t, err)
	got2, err := s.GetSession(ctx, next.ID)
	must(t, err)
	if got2.Status != wire.SessionEnded || got2.EndReason != wire.AgentCompleted {
		t.Fatalf("session after its run completed = %+v", got2)
	}
}
