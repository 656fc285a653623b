package console

import (
	"net/http"
	"net/url"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

func (c *Console) suites(w http.ResponseWriter, r *http.Request, s *session) {
	ss, err := s.api.ListSuites(r.Context())
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, 0, "suites", page{Title: "Eval suites", Section: "suites", Data: ss})
}

func (c *Console) suite(w http.ResponseWriter, r *http.Request, s *session) {
	st, err := s.api.GetSuite(r.Context(), r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	runs, err := s.api.ListRuns(r.Context(), client.RunListOptions{SuiteID: st.ID, Limit: 100})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, 0, "suite", page{Title: "Suite " + st.ID, Section: "suites", Data: struct {
		Suite *wire.SuiteView
		Runs  []wire.Run
	}{st, runs}})
}

func (c *Console) startRun(w http.ResponseWriter, r *http.Request, s *session) {
	run, err := s.api.CreateRun(r.Context(), r.PathValue("id"), wire.RunRequest{TriggeredBy: "console"})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/runs/"+url.PathEscape(run.ID), http.StatusSeeOther)
}

func (c *Console) run(w http.ResponseWriter, r *http.Request, s *session) {
	run, err := s.api.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	results, err := s.api.RunResults(r.Context(), run.ID)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	others, err := s.api.ListRuns(r.Context(), client.RunListOptions{SuiteID: run.SuiteID, Limit: 50})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, 0, "run", page{Title: "Run " + run.ID, Section: "suites", Data: struct {
		Run     *wire.RunView
		Results []wire.CaseResult
		Others  []wire.Run
	}{run, results, others}})
}

// compare shows run id against ?base=, regressions first.
func (c *Console) compare(w http.ResponseWriter, r *http.Request, s *session) {
	base := r.URL.Query().Get("base")
	if base == "" {
		c.fail(w, r, s, errs.Field("base", "base: choose a run to compare with"))
		return
	}
	cmp, err := s.api.CompareRuns(r.Context(), r.PathValue("id"), base)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, 0, "compare", page{Title: "Compare runs", Section: "suites", Data: cmp})
}

func (c *Console) sessionsPage(w http.ResponseWriter, r *http.Request, s *session) {
	ss, err := s.api.ListSessions(r.Context(), client.SessionListOptions{WorkspaceID: r.URL.Query().Get("workspace")})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, 0, "sessions", page{Title: "Sessions", Section: "sessions", Data: ss})
}

// historyItem is one tool call with its diff.
type historyItem struct {
	wire.HistoryEntry
	Diff *wire.Diff
}

// maxDiffs bounds how many tool calls of a session page show their diff.
const maxDiffs = 50

func (c *Console) sessionPage(w http.ResponseWriter, r *http.Request, s *session) {
	ses, err := s.api.GetSession(r.Context(), r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	// An agent run's session shows its transcript, live while it runs.
	if t, err := s.api.SessionTranscript(r.Context(), ses.ID); err == nil && t.Run != nil {
		c.transcriptPage(w, r, s, ses, t)
		return
	}
	h, err := s.api.SessionHistory(r.Context(), ses.ID, true)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	items := make([]historyItem, len(h.Items))
	for i, e := range h.Items {
		items[i].HistoryEntry = e
		// A diff per call, for the newest maxDiffs calls (each is one API
		// call); a call that changed nothing (or whose diff the API cannot
		// give) shows none.
		if i >= maxDiffs {
			continue
		}
		if d, err := s.api.SessionDiff(r.Context(), ses.ID, client.DiffOptions{Commit: e.Commit}); err == nil {
			items[i].Diff = d
		}
	}
	c.render(w, r, s, 0, "session", page{Title: "Session " + ses.ID, Section: "sessions", Data: struct {
		Session *wire.Session
		Items   []historyItem
	}{ses, items}})
}

func (c *Console) restore(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	res, err := s.api.RestoreSession(r.Context(), id, r.FormValue("commit"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	back(w, r, "/sessions/"+url.PathEscape(id), "Restored to "+res.Commit+".")
}
