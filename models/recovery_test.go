package models

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

func testEscalatedPhase(t *testing.T, ctx context.Context, s *Store) {
	w := newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, w))
	for _, phase := range []string{wire.PhaseFailed, wire.PhaseEscalated, wire.PhaseRunning} {
		must(t, s.SetWorkspacePhase(ctx, w.ID, phase, "recovery: "+phase))
		got, err := s.GetWorkspace(ctx, w.ID)
		must(t, err)
		if got.Phase != phase || got.Reason != "recovery: "+phase {
			t.Errorf("after SetWorkspacePhase(%s): %q %q", phase, got.Phase, got.Reason)
		}
	}
	list, err := s.ListWorkspaces(ctx, WorkspaceFilter{Phase: wire.PhaseEscalated})
	must(t, err)
	if len(list) != 0 {
		t.Errorf("ListWorkspaces(escalated) = %d rows, want 0 after leaving it", len(list))
	}
}

func testTemplateGeneration(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.EnsureDefaults(ctx, "/srv/ws"))
	def, err := s.GetTemplate(ctx, wire.DefaultTemplateID)
	must(t, err)
	if def.Generation != 1 {
		t.Errorf("default template generation = %d, want 1", def.Generation)
	}

	must(t, s.CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendLocal}))
	tp := &wire.Template{ID: "t", ProviderID: "p", Generation: 42}
	must(t, s.CreateTemplate(ctx, tp))
	if tp.Generation != 1 {
		t.Errorf("CreateTemplate set generation %d, want 1", tp.Generation)
	}
	for want := int64(2); want <= 3; want++ {
		upd := &wire.Template{ID: "t", ProviderID: "p", Generation: 99, Backend: json.RawMessage(`{"kind":"local"}`)}
		must(t, s.UpdateTemplate(ctx, upd))
		if upd.Generation != want {
			t.Errorf("UpdateTemplate returned generation %d, want %d", upd.Generation, want)
		}
	}
	wantField(t, s.UpdateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "ghost"}), "provider_id")
	got, err := s.GetTemplate(ctx, "t")
	must(t, err)
	if got.Generation != 3 {
		t.Errorf("generation after 2 updates and a failed one = %d, want 3", got.Generation)
	}

	for _, tc := range []struct {
		template string
		want     int64
	}{
		{"t", 3},
		{wire.DefaultTemplateID, 1},
		{"ghost", 0}, // the store does not require the template
	} {
		w := newWorkspace(tc.template, "p")
		w.TemplateGeneration = 7
		must(t, s.CreateWorkspace(ctx, w))
		stored, err := s.GetWorkspace(ctx, w.ID)
		must(t, err)
		if w.TemplateGeneration != tc.want || stored.TemplateGeneration != tc.want {
			t.Errorf("workspace of %s: generation %d (stored %d), want %d", tc.template, w.TemplateGeneration, stored.TemplateGeneration, tc.want)
		}
	}

	// Every update counts, even concurrent ones.
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if err := s.UpdateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p"}); err != nil {
				t.Errorf("UpdateTemplate: %v", err)
			}
		})
	}
	wg.Wait()
	got, err = s.GetTemplate(ctx, "t")
	must(t, err)
	if got.Generation != 13 {
		t.Errorf("generation after 10 concurrent updates = %d, want 13", got.Generation)
	}
}

func testResumeLostSessions(t *testing.T, ctx context.Context, s *Store) {
	w, other := newWorkspace("t", "p"), newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, w))
	must(t, s.CreateWorkspace(ctx, other))
	_, err := s.ResumeLostSessions(ctx, "ws-gone", time.Time{})
	wantErr(t, err, errs.NotFound, "workspace ws-gone: not found")

	base := time.Now().UTC().Add(-time.Minute)
	mk := func(ws string, agent string, meta map[string]string, age int) *wire.Session {
		ses := &wire.Session{WorkspaceID: ws, Agent: agent, Metadata: meta, CreatedAt: base.Add(time.Duration(age) * time.Second)}
		must(t, s.CreateSession(ctx, ses))
		return ses
	}
	early := mk(w.ID, "early", nil, 0)
	_, err = s.EndSession(ctx, early.ID, wire.ReasonWorkspaceLost)
	must(t, err)
	time.Sleep(5 * time.Millisecond)
	since := time.Now()

	byUser := mk(w.ID, "user", nil, 1)
	_, err = s.EndSession(ctx, byUser.ID, wire.ReasonEndedByUser)
	must(t, err)
	b := mk(w.ID, "claude", map[string]string{"task": "b"}, 3)
	a := mk(w.ID, "codex", map[string]string{"task": "a", "n": "1"}, 2)
	elsewhere := mk(other.ID, "x", nil, 4)
	for _, ws := range []string{w.ID, other.ID} {
		_, err := s.EndWorkspaceSessions(ctx, ws, wire.ReasonWorkspaceLost)
		must(t, err)
	}

	idRE := regexp.MustCompile(`^ses-[0-9a-f]{16}$`)
	check := func(step string, got []wire.Session, from []*wire.Session) {
		t.Helper()
		if len(got) != len(from) {
			t.Fatalf("%s: %d sessions resumed, want %d", step, len(got), len(from))
		}
		for i, ses := range got {
			src := from[i]
			if ses.ResumedFrom != src.ID || ses.WorkspaceID != src.WorkspaceID || ses.Agent != src.Agent ||
				!maps.Equal(ses.Metadata, src.Metadata) || ses.Status != wire.SessionOpen || ses.EndReason != "" || ses.EndedAt != nil ||
				!idRE.MatchString(ses.ID) || ses.ID == src.ID || ses.CreatedAt.IsZero() {
				t.Errorf("%s: resumed %d = %+v, want an open copy of %+v", step, i, ses, src)
			}
			stored, err := s.GetSession(ctx, ses.ID)
			must(t, err)
			if stored.ResumedFrom != src.ID || stored.Status != wire.SessionOpen || stored.Agent != src.Agent ||
				!maps.Equal(stored.Metadata, src.Metadata) || !stored.CreatedAt.Equal(ses.CreatedAt) {
				t.Errorf("%s: stored %+v, returned %+v", step, stored, ses)
			}
		}
	}

	got, err := s.ResumeLostSessions(ctx, w.ID, since)
	must(t, err)
	check("first call", got, []*wire.Session{a, b})
	resumed := got

	// Idempotent: a retried activity creates nothing.
	for _, at := range []time.Time{since, since.Add(-time.Hour)} {
		again, err := s.ResumeLostSessions(ctx, w.ID, at)
		must(t, err)
		if at.Equal(since) && (again == nil || len(again) != 0) {
			t.Errorf("second call = %#v, want empty", again)
		}
		if !at.Equal(since) {
			// An earlier since also reaches the early loss, once.
			check("earlier since", again, []*wire.Session{early})
		}
	}
	if none, err := s.ResumeLostSessions(ctx, w.ID, time.Time{}); err != nil || len(none) != 0 {
		t.Errorf("call with zero since after all resumed = %v, %v; want none", none, err)
	}

	// Successors lost in turn are resumed again: the chain goes on.
	time.Sleep(5 * time.Millisecond)
	since2 := time.Now()
	ended, err := s.EndWorkspaceSessions(ctx, w.ID, wire.ReasonWorkspaceLost)
	must(t, err)
	if len(ended) != 3 {
		t.Fatalf("EndWorkspaceSessions ended %v, want the 3 resumed sessions", ended)
	}
	got, err = s.ResumeLostSessions(ctx, w.ID, since2)
	must(t, err)
	src := []*wire.Session{&resumed[0], &resumed[1]}
	for _, ses := range got[len(src):] {
		stored, err := s.GetSession(ctx, ses.ResumedFrom)
		must(t, err)
		src = append(src, stored)
	}
	check("after a second loss", got, src)
	if got[2].ResumedFrom == "" || slices.Contains([]string{a.ID, b.ID}, got[2].ResumedFrom) {
		t.Errorf("third resumed session comes from %q, want the successor of early", got[2].ResumedFrom)
	}

	// The other workspace's lost session is its own business.
	open, err := s.ListSessions(ctx, SessionFilter{WorkspaceID: other.ID, Status: wire.SessionOpen})
	must(t, err)
	if len(open) != 0 {
		t.Errorf("other workspace has %d open sessions, want 0", len(open))
	}
	got, err = s.ResumeLostSessions(ctx, other.ID, since)
	must(t, err)
	check("other workspace", got, []*wire.Session{elsewhere})

	// A session is resumed at most once, even by a writer that goes around
	// ResumeLostSessions.
	wantErr(t, s.CreateSession(ctx, &wire.Session{WorkspaceID: w.ID, ResumedFrom: a.ID}), errs.Conflict, "")
}

// testResumeConcurrent races ResumeLostSessions on one workspace: every lost
// session gets exactly one successor and no call fails.
func testResumeConcurrent(t *testing.T, ctx context.Context, s *Store) {
	const sessions, callers = 5, 10
	w := newWorkspace("t", "p")
	must(t, s.CreateWorkspace(ctx, w))
	for i := range sessions {
		must(t, s.CreateSession(ctx, &wire.Session{WorkspaceID: w.ID, Agent: "agent", Metadata: map[string]string{"i": string(rune('a' + i))}}))
	}
	for round := range 3 {
		lost, err := s.EndWorkspaceSessions(ctx, w.ID, wire.ReasonWorkspaceLost)
		must(t, err)
		if len(lost) != sessions {
			t.Fatalf("round %d: %d sessions lost, want %d", round, len(lost), sessions)
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			created []string
			start   = make(chan struct{})
		)
		for range callers {
			wg.Go(func() {
				<-start
				got, err := s.ResumeLostSessions(ctx, w.ID, time.Time{})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("round %d: ResumeLostSessions: %v", round, err)
				}
				for _, ses := range got {
					created = append(created, ses.ResumedFrom)
				}
			})
		}
		close(start)
		wg.Wait()
		slices.Sort(created)
		slices.Sort(lost)
		if !slices.Equal(created, lost) {
			t.Errorf("round %d: successors created for %v, want exactly one for each of %v", round, created, lost)
		}
		open, err := s.ListSessions(ctx, SessionFilter{WorkspaceID: w.ID, Status: wire.SessionOpen})
		must(t, err)
		if len(open) != sessions {
			t.Errorf("round %d: %d open sessions, want %d", round, len(open), sessions)
		}
	}
}
