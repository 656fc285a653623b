package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

// entryView is one transcript entry as the session page shows it: the
// tool arguments and result indented, the calls an assistant turn asked
// for by name.
type entryView struct {
	wire.TranscriptEntry
	Args   string
	Result string
	Calls  []string
}

func viewEntry(e wire.TranscriptEntry) entryView {
	v := entryView{TranscriptEntry: e}
	if len(e.ToolArgs) > 0 {
		v.Args = indent(e.ToolArgs)
	}
	if len(e.ToolResult) > 0 {
		v.Result = indent(e.ToolResult)
	}
	var calls []struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(e.ToolCalls, &calls) == nil {
		for _, c := range calls {
			v.Calls = append(v.Calls, c.Name)
		}
	}
	return v
}

// transcriptView is the session page of an agent run.
type transcriptView struct {
	Session *wire.Session
	Run     *wire.SessionRun
	Entries []entryView
	Usage   wire.UsageTotal
	// After is the last entry the live stream need not send again: the
	// entries before the first tool call still running.
	After   int
	Running bool
}

// transcriptPage renders the session page of an agent run from its
// transcript as it stands; the page's script then follows the run.
func (c *Console) transcriptPage(w http.ResponseWriter, r *http.Request, s *session, ses *wire.Session, t *wire.Transcript) {
	v := transcriptView{Session: ses, Run: t.Run, Running: t.Run.Status == wire.AgentRunning}
	v.Usage = t.Usage
	done := true
	for _, e := range t.Items {
		v.Entries = append(v.Entries, viewEntry(e))
		if e.Role == wire.RoleTool && e.State != wire.ToolFinished {
			done = false
		}
		if done {
			v.After = e.Seq
		}
	}
	c.render(w, r, s, 0, "transcript", page{Title: "Session " + ses.ID, Section: "sessions", Data: v})
}

// entryEvent is one entry as the live stream sends it: its seq, its HTML
// (rendered by the same template as the page) and the run's token totals.
type entryEvent struct {
	Seq   int             `json:"seq"`
	HTML  string          `json:"html"`
	Usage wire.UsageTotal `json:"usage"`
}

// liveTranscript follows the session's transcript from the API and sends
// each entry after ?after= as rendered HTML (`entry` events), then the run
// as it ended (`end`). At the end every entry is sent once more as the API
// now has it, with the commits recorded after an entry was first sent.
func (c *Console) liveTranscript(w http.ResponseWriter, r *http.Request, s *session) {
	f, ok := sse(w)
	if !ok {
		return
	}
	ctx, id := r.Context(), r.PathValue("id")
	after, _ := strconv.Atoi(r.URL.Query().Get("after"))
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		after, _ = strconv.Atoi(v)
	}
	t := c.pages["transcript"]
	var total wire.UsageTotal
	send := func(e wire.TranscriptEntry) error {
		var b bytes.Buffer
		if err := t.ExecuteTemplate(&b, "entry", viewEntry(e)); err != nil {
			return err
		}
		if _, err := w.Write([]byte("id: " + strconv.Itoa(e.Seq) + "\n")); err != nil {
			return err
		}
		return sendEvent(w, f, "entry", entryEvent{Seq: e.Seq, HTML: b.String(), Usage: total})
	}
	run, err := s.api.FollowTranscript(ctx, id, func(e wire.TranscriptEntry) error {
		total.InputTokens += e.InputTokens
		total.OutputTokens += e.OutputTokens
		if e.Seq <= after {
			return nil
		}
		return send(e)
	})
	if err == nil {
		var tr *wire.Transcript
		if tr, err = s.api.SessionTranscript(ctx, id); err == nil {
			total = tr.Usage
			for _, e := range tr.Items {
				if err = send(e); err != nil {
					break
				}
			}
			if tr.Run != nil {
				run = tr.Run
			}
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			_ = sendEvent(w, f, "failure", map[string]string{"message": err.Error()})
		}
		return
	}
	_ = sendEvent(w, f, "end", struct {
		*wire.SessionRun
		Usage wire.UsageTotal `json:"usage"`
	}{run, total})
}

// cancelRun asks the session's agent run to stop.
func (c *Console) cancelRun(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	if err := s.api.CancelSession(r.Context(), id); err != nil {
		c.fail(w, r, s, err)
		return
	}
	back(w, r, "/sessions/"+url.PathEscape(id), "Cancel requested.")
}

// commitDiff shows what one .state commit of the session changed: the
// diff a transcript's tool call links to.
func (c *Console) commitDiff(w http.ResponseWriter, r *http.Request, s *session) {
	id, commit := r.PathValue("id"), r.PathValue("commit")
	d, err := s.api.SessionDiff(r.Context(), id, client.DiffOptions{Commit: commit})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, 0, "commit", page{Title: "Commit " + commit, Section: "sessions", Data: struct {
		SessionID, Commit string
		Diff              *wire.Diff
	}{id, commit, d}})
}
