package console

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// onePoll is how often a workspace page's phase stream reads its
// workspace again: it covers what its event stream does not (the row
// itself). The list follows the tenant's event stream instead.
const onePoll = time.Second

// sse starts a Server-Sent Events response.
func sse(w http.ResponseWriter) (http.Flusher, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "console: streaming unsupported", http.StatusInternalServerError)
		return nil, false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return f, true
}

func sendEvent(w io.Writer, f http.Flusher, name string, v any) error {
	return sendEventID(w, f, 0, name, v)
}

// sendEventID sends one SSE message; an id above 0 is what the browser
// resumes after (Last-Event-ID) when it reconnects.
func sendEventID(w io.Writer, f http.Flusher, id uint64, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if id > 0 {
		if _, err := fmt.Fprintf(w, "id: %d\n", id); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	f.Flush()
	return nil
}

// phaseUpdate is one workspace's phase as the live streams send it. The
// other fields are set when the row was read, so the list can add a row it
// does not have yet.
type phaseUpdate struct {
	ID       string `json:"id"`
	Phase    string `json:"phase"`
	Reason   string `json:"reason"`
	Row      bool   `json:"row,omitempty"`
	Template string `json:"template,omitempty"`
	Backend  string `json:"backend,omitempty"`
	Pool     string `json:"pool,omitempty"`
	Created  string `json:"created,omitempty"`
}

// phaseGone is the phase a workspace that went away is sent with.
const phaseGone = "gone"

// listUpdate is what the workspace list makes of one event of the tenant's
// stream: the phase and reason of workspace.phase_changed, a removal for
// workspace.destroyed, and for any other event (provisioned, leased,
// returned, recovered, ...) a read of the row, which it may have changed
// (needRow).
func listUpdate(e wire.Event) (u phaseUpdate, needRow bool) {
	u.ID = e.WorkspaceID
	switch e.Type {
	case wire.EventDestroyed:
		u.Phase = phaseGone
		return u, false
	case wire.EventPhaseChanged:
		var d struct{ To, Reason string }
		if json.Unmarshal(e.Data, &d) == nil && d.To != "" {
			u.Phase, u.Reason = d.To, d.Reason
			return u, false
		}
	}
	return u, true
}

// withRow fills u from the workspace row; the phase too when phase is set
// (the event did not say it).
func withRow(u *phaseUpdate, ws *wire.Workspace, phase bool) {
	u.Row, u.Template, u.Backend, u.Created = true, ws.TemplateID, ws.Backend, since(ws.CreatedAt)
	u.Pool = ws.PoolID
	if ws.PoolState != "" {
		u.Pool += " (" + ws.PoolState + ")"
	}
	if phase {
		u.Phase, u.Reason = ws.Phase, ws.Reason
	}
}

// liveWorkspaces streams phase changes as `phase` events: of the caller's
// workspaces from the tenant's event stream (the list page), or of ?id=
// alone (a workspace page). A workspace that went away is sent with phase
// "gone".
func (c *Console) liveWorkspaces(w http.ResponseWriter, r *http.Request, s *session) {
	if r.URL.Query().Get("id") == "" {
		c.liveList(w, r, s)
		return
	}
	f, ok := sse(w)
	if !ok {
		return
	}
	ctx := r.Context()
	only := r.URL.Query().Get("id")
	var seen *phaseUpdate
	t := time.NewTicker(onePoll)
	defer t.Stop()
	for {
		ws, err := s.api.GetWorkspace(ctx, only)
		if ctx.Err() != nil {
			return
		}
		var now *phaseUpdate
		switch {
		case err == nil:
			now = &phaseUpdate{ID: ws.ID, Phase: ws.Phase, Reason: ws.Reason}
		case errs.Is(err, errs.NotFound):
			if seen != nil {
				now = &phaseUpdate{ID: only, Phase: phaseGone}
			}
		}
		if now != nil && (seen == nil || *seen != *now) {
			if sendEvent(w, f, "phase", now) != nil {
				return
			}
			seen = now
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// liveList follows the tenant's events (GET /v1/events) for the list page
// from ?after= (the newest event when the page was read, so nothing between
// the page and the stream is lost) or Last-Event-ID (the browser
// reconnecting), and sends each as the row update it makes (with ?phase=,
// a workspace that leaves that phase leaves the list). The first event
// of a workspace this stream has not read the row of reads it once, so a
// workspace made after the page shows with its template and backend.
func (c *Console) liveList(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	var after uint64
	v := r.URL.Query().Get("after")
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		v = h
	}
	if v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			http.Error(w, "after: not an event id", http.StatusBadRequest)
			return
		}
		after = n
	} else {
		page, err := s.api.TenantEvents(ctx, 0, 1)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		after = page.LatestID
	}
	f, ok := sse(w)
	if !ok {
		return
	}
	read := map[string]bool{}
	err := s.api.FollowTenantEvents(ctx, after, func(e wire.Event) error {
		u, needRow := listUpdate(e)
		if u.Phase != phaseGone && (needRow || !read[u.ID]) {
			ws, err := s.api.GetWorkspace(ctx, u.ID)
			switch {
			case err == nil:
				withRow(&u, ws, needRow)
				read[u.ID] = true
			case errs.Is(err, errs.NotFound):
				u = phaseUpdate{ID: u.ID, Phase: phaseGone}
			case needRow:
				return nil // nothing to say without the row; a later event will
			}
		}
		if only := r.URL.Query().Get("phase"); only != "" && u.Phase != "" && u.Phase != only {
			u = phaseUpdate{ID: u.ID, Phase: phaseGone} // not on a list of one phase
		}
		if u.Phase == phaseGone {
			delete(read, u.ID)
		}
		return sendEventID(w, f, e.ID, "phase", u)
	})
	if err != nil && ctx.Err() == nil {
		// The browser reconnects on its own, after the last id sent.
		_ = sendEvent(w, f, "failure", map[string]string{"message": err.Error()})
	}
}

// liveEvents follows a workspace's event stream from the API and passes
// each event on.
func (c *Console) liveEvents(w http.ResponseWriter, r *http.Request, s *session) {
	f, ok := sse(w)
	if !ok {
		return
	}
	var after uint64
	_, _ = fmt.Sscan(r.URL.Query().Get("after"), &after)
	err := s.api.FollowEvents(r.Context(), r.PathValue("id"), after, func(e wire.Event) error {
		return sendEvent(w, f, "event", e)
	})
	if err != nil && r.Context().Err() == nil {
		_ = sendEvent(w, f, "failure", map[string]string{"message": err.Error()})
	}
	_ = sendEvent(w, f, "end", map[string]string{})
}

// exec runs the command box's command with sh -c and streams its output as
// plain text, ending with a line giving the exit code.
func (c *Console) exec(w http.ResponseWriter, r *http.Request, s *session) {
	cmd := strings.TrimSpace(r.FormValue("command"))
	if cmd == "" {
		http.Error(w, "command: required", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := &flushWriter{w: w}
	if f, ok := w.(http.Flusher); ok {
		out.f = f
		f.Flush()
	}
	res, err := s.api.ExecStream(r.Context(), client.ExecRequest{
		WorkspaceID: r.PathValue("id"), Command: []string{"sh", "-c", cmd}, Cwd: r.FormValue("cwd"),
	}, out, out)
	if err != nil {
		fmt.Fprintf(out, "\n[error: %s]\n", err.Error())
		return
	}
	fmt.Fprintf(out, "\n[exit code %d, %d ms]\n", res.ExitCode, res.DurationMS)
}

type flushWriter struct {
	w io.Writer
	f http.Flusher
}

func (fw *flushWriter) Write(b []byte) (int, error) {
	n, err := fw.w.Write(b)
	if fw.f != nil {
		fw.f.Flush()
	}
	return n, err
}

// filesView is the Files tab: a directory listing or one file's text.
type filesView struct {
	Path    string
	Dir     *wire.DirListing
	Content string
	Binary  bool
	Size    int64
}

// maxView is how much of a file the Files tab shows inline.
const maxView = 256 << 10

func (c *Console) files(w http.ResponseWriter, r *http.Request, s *session) {
	v, err := c.workspaceData(r, s, r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v.Tab = "files"
	p := cleanPath(r.URL.Query().Get("path"))
	fv := &filesView{Path: p}
	info, err := s.api.StatFile(r.Context(), v.W.ID, p)
	if err == nil && info.IsDir {
		fv.Dir, err = s.api.ListFiles(r.Context(), v.W.ID, p)
	} else if err == nil {
		fv.Size = info.Size
		var b []byte
		b, err = readCapped(r, s, v.W.ID, p)
		fv.Content = string(b)
		fv.Binary = strings.ContainsRune(fv.Content, 0)
	}
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v.Files = fv
	c.render(w, r, s, 0, "files", page{Title: "Files of " + v.W.ID, Section: "workspaces", Tab: "workspaces", Data: v})
}

func readCapped(r *http.Request, s *session, id, p string) ([]byte, error) {
	f, err := s.api.OpenFile(r.Context(), id, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxView))
}

// cleanPath is a workspace-relative path: no leading slash, "" for the root.
func cleanPath(p string) string {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	return p
}

func (c *Console) download(w http.ResponseWriter, r *http.Request, s *session) {
	p := cleanPath(r.URL.Query().Get("path"))
	f, err := s.api.OpenFile(r.Context(), r.PathValue("id"), p)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename*=UTF-8''%s", url.PathEscape(path.Base(p))))
	_, _ = io.Copy(w, f)
}

// maxUpload bounds an uploaded file (the API has its own, larger limit).
const maxUpload = 64 << 20

func (c *Console) upload(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	dir := cleanPath(r.FormValue("dir"))
	file, hdr, err := r.FormFile("file")
	if err != nil {
		c.fail(w, r, s, fieldError("file", "file: choose a file to upload"))
		return
	}
	defer file.Close()
	name := path.Base(strings.ReplaceAll(hdr.Filename, "\\", "/"))
	if name == "." || name == "/" || name == "" {
		c.fail(w, r, s, fieldError("file", "file: no name"))
		return
	}
	dest := name
	if dir != "" {
		dest = dir + "/" + name
	}
	if _, err := s.api.WriteFile(r.Context(), id, dest, file); err != nil {
		c.fail(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/workspaces/"+url.PathEscape(id)+"/files?path="+url.QueryEscape(dir)+"&notice="+url.QueryEscape("Uploaded "+dest+"."), http.StatusSeeOther)
}
