package console

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
)

// listPoll is how often the workspace list's live stream reads the list
// again. The API has no event stream across workspaces, so the list page's
// stream reads the tenant's list (one indexed query) and sends what changed.
const listPoll = time.Second

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
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	f.Flush()
	return nil
}

// phaseUpdate is one workspace's phase as the live streams send it.
type phaseUpdate struct {
	ID     string `json:"id"`
	Phase  string `json:"phase"`
	Reason string `json:"reason"`
}

// liveWorkspaces streams phase changes of the caller's workspaces (or of
// ?id= alone) as `phase` events; a workspace that went away is sent with
// phase "gone".
func (c *Console) liveWorkspaces(w http.ResponseWriter, r *http.Request, s *session) {
	f, ok := sse(w)
	if !ok {
		return
	}
	ctx := r.Context()
	only := r.URL.Query().Get("id")
	seen := map[string]phaseUpdate{}
	first := true
	t := time.NewTicker(listPoll)
	defer t.Stop()
	for {
		now := map[string]phaseUpdate{}
		var err error
		if only != "" {
			var ws *models.Workspace
			ws, err = s.api.GetWorkspace(ctx, only)
			if err == nil {
				now[ws.ID] = phaseUpdate{ws.ID, ws.Phase, ws.Reason}
			} else if errs.Is(err, errs.NotFound) {
				err = nil
			}
		} else {
			var list []models.Workspace
			list, err = s.api.ListWorkspaces(ctx, client.WorkspaceListOptions{})
			for _, ws := range list {
				now[ws.ID] = phaseUpdate{ws.ID, ws.Phase, ws.Reason}
			}
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			for id, u := range now {
				if old, ok := seen[id]; (!ok && !first) || (ok && old != u) || (first && only != "") {
					if sendEvent(w, f, "phase", u) != nil {
						return
					}
				}
			}
			for id := range seen {
				if _, ok := now[id]; !ok {
					if sendEvent(w, f, "phase", phaseUpdate{ID: id, Phase: "gone"}) != nil {
						return
					}
				}
			}
			seen, first = now, false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
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
	err := s.api.FollowEvents(r.Context(), r.PathValue("id"), after, func(e models.Event) error {
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
	fmt.Fprintf(out, "\n[exit code %d, %.0f ms]\n", res.ExitCode, res.DurationMS)
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
	Dir     *client.DirListing
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
