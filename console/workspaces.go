package console

import (
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// workspaceList is the workspace list page: the rows, and the newest event
// id read before them, where the page's live stream starts.
type workspaceList struct {
	Rows  template.HTML // listRows
	After uint64
	Phase string // ?phase=: only workspaces in this phase
}

func (c *Console) workspaces(w http.ResponseWriter, r *http.Request, s *session) {
	// The event id first: an event written while the list is read is then
	// sent again by the stream, never lost (its updates are idempotent).
	events, err := s.api.TenantEvents(r.Context(), 0, 1)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	phase := r.URL.Query().Get("phase")
	ws, err := s.api.ListWorkspaces(r.Context(), client.WorkspaceListOptions{Phase: phase})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, 0, "workspaces", page{Title: "Workspaces", Section: "workspaces", Tab: "workspaces",
		Data: workspaceList{Rows: listRows(ws), After: events.LatestID, Phase: phase}})
}

type workspaceForm struct {
	Templates []wire.Template
	Pools     map[string]string // template id -> pool id
	Template  string
}

func (c *Console) newWorkspace(w http.ResponseWriter, r *http.Request, s *session) {
	c.workspaceForm(w, r, s, http.StatusOK, "", r.URL.Query().Get("template"))
}

func (c *Console) workspaceForm(w http.ResponseWriter, r *http.Request, s *session, status int, msg, tmpl string) {
	ts, err := s.api.ListTemplates(r.Context(), client.TemplateListOptions{})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	ps, err := s.api.ListPools(r.Context(), client.PoolListOptions{})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	pools := map[string]string{}
	for _, p := range ps {
		pools[p.TemplateID] = p.ID
	}
	c.render(w, r, s, status, "workspace_new", page{Title: "New workspace", Section: "workspaces", Tab: "workspaces", Error: msg,
		Data: workspaceForm{Templates: ts, Pools: pools, Template: tmpl}})
}

// createWorkspace makes a workspace from a template, or leases one from the
// template's pool when the form asks for it (the default when one exists).
func (c *Console) createWorkspace(w http.ResponseWriter, r *http.Request, s *session) {
	labels := map[string]string{}
	for _, l := range lines(r.FormValue("labels")) {
		k, v, _ := strings.Cut(l, "=")
		labels[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	tmpl := r.FormValue("template_id")
	pool := ""
	if r.FormValue("lease") == "on" {
		ps, err := s.api.ListPools(r.Context(), client.PoolListOptions{TemplateID: tmpl})
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		if len(ps) > 0 {
			pool = ps[0].ID
		}
	}
	var ws *wire.Workspace
	var err error
	if pool != "" {
		var l *wire.Lease
		l, err = s.api.LeasePool(r.Context(), pool, wire.LeaseRequest{Labels: labels})
		if err == nil {
			ws = l.Workspace
		}
	} else {
		ws, err = s.api.CreateWorkspace(r.Context(), wire.CreateWorkspaceRequest{
			TemplateID: tmpl, Labels: labels, TTL: strings.TrimSpace(r.FormValue("ttl"))})
	}
	if err != nil {
		c.workspaceForm(w, r, s, statusOf(err), err.Error(), r.FormValue("template_id"))
		return
	}
	http.Redirect(w, r, "/workspaces/"+url.PathEscape(ws.ID), http.StatusSeeOther)
}

// workspaceView is the workspace page's data.
type workspaceView struct {
	W        *wire.Workspace
	Events   []wire.Event
	Sessions []wire.Session
	Workflow string // the Temporal web UI's page of its workflow, or ""
	Tab      string
	Files    *filesView
	Agents   []wire.Agent // for Run agent, on a running workspace
	// Ports are the ports programs listen on, on a running workspace;
	// PortsNote says why there are none to show when listing failed.
	Ports     []protocol.ListeningPort
	PortsNote string
}

func (c *Console) workspaceData(r *http.Request, s *session, id string) (*workspaceView, error) {
	ws, err := s.api.GetWorkspace(r.Context(), id)
	if err != nil {
		return nil, err
	}
	v := &workspaceView{W: ws, Tab: "overview"}
	if c.cfg.TemporalUI != "" && ws.WorkflowID != "" {
		v.Workflow = c.cfg.TemporalUI + "/namespaces/" + url.PathEscape(c.cfg.TemporalNamespace) + "/workflows/" + url.PathEscape(ws.WorkflowID)
	}
	return v, nil
}

func (c *Console) workspace(w http.ResponseWriter, r *http.Request, s *session) {
	v, err := c.workspaceData(r, s, r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	if v.Events, err = s.api.Events(r.Context(), v.W.ID, 0); err != nil {
		c.fail(w, r, s, err)
		return
	}
	if v.Sessions, err = s.api.ListSessions(r.Context(), client.SessionListOptions{WorkspaceID: v.W.ID}); err != nil {
		c.fail(w, r, s, err)
		return
	}
	if v.W.Phase == wire.PhaseRunning && s.canWrite() {
		v.Agents, _ = s.api.ListAgents(r.Context()) // no agents (or no /v1/agents): no Run agent form
	}
	if v.W.Phase == wire.PhaseRunning {
		// A page without its ports is still the workspace's page: the
		// reason shows where the list would be.
		if v.Ports, err = s.api.ListPorts(r.Context(), v.W.ID); err != nil {
			v.PortsNote = err.Error()
		}
	}
	c.render(w, r, s, 0, "workspace", page{Title: "Workspace " + v.W.ID, Section: "workspaces", Tab: "workspaces", Data: v})
}

// previewTarget is where Open sends the browser: a link under /preview/
// on the API's own host is this server, whatever host the in-process
// client named, so only its path is kept; a preview host's URL is kept
// whole.
func previewTarget(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || !strings.HasPrefix(u.Path, "/preview/") || u.Query().Has(wire.PreviewQuery) {
		return raw
	}
	return u.RequestURI()
}

// workspaceOp runs Delete, Return, Recover, Extend, Pause, Resume, Open (a
// port's preview link) or Snapshot; the API says which apply to the
// workspace's phase and refuses the others with its reason.
func (c *Console) workspaceOp(w http.ResponseWriter, r *http.Request, s *session) {
	id, op := r.PathValue("id"), r.PathValue("op")
	var err error
	switch op {
	case "delete":
		_, err = s.api.DeleteWorkspace(r.Context(), id)
		if err == nil {
			back(w, r, "/workspaces", "Workspace "+id+" is being deleted.")
			return
		}
	case "return":
		_, err = s.api.ReturnWorkspace(r.Context(), id)
	case "recover":
		_, err = s.api.RecoverWorkspace(r.Context(), id)
	case "extend":
		_, err = s.api.ExtendWorkspace(r.Context(), id, wire.ExtendRequest{By: strings.TrimSpace(r.FormValue("by"))})
	case "pause":
		_, err = s.api.PauseWorkspace(r.Context(), id, wire.PauseRequest{})
	case "resume":
		_, err = s.api.ResumeWorkspace(r.Context(), id)
	case "preview":
		// Open: a fresh preview link, to which the browser (in the tab
		// the form targets) is sent.
		port, perr := strconv.Atoi(r.FormValue("port"))
		if perr != nil {
			http.Error(w, "port: want a number", http.StatusBadRequest)
			return
		}
		var link *wire.PreviewLink
		if link, err = s.api.CreatePreview(r.Context(), id, wire.PreviewRequest{Port: port}); err == nil {
			http.Redirect(w, r, previewTarget(link.URL), http.StatusSeeOther)
			return
		}
	case "snapshot":
		var snap *wire.Snapshot
		snap, err = s.api.CreateSnapshot(r.Context(), id, wire.CreateSnapshotRequest{})
		if err == nil {
			back(w, r, "/snapshots", "Snapshot "+snap.ID+" of "+id+" is being taken.")
			return
		}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	back(w, r, "/workspaces/"+url.PathEscape(id), "Done: "+op+".")
}

func (c *Console) pools(w http.ResponseWriter, r *http.Request, s *session) {
	ps, err := s.api.ListPools(r.Context(), client.PoolListOptions{})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	ts, err := s.api.ListTemplates(r.Context(), client.TemplateListOptions{})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, 0, "pools", page{Title: "Pools", Section: "workspaces", Tab: "pools",
		Data: struct {
			Pools     []wire.PoolView
			Templates []wire.Template
		}{ps, ts}})
}

func (c *Console) createPool(w http.ResponseWriter, r *http.Request, s *session) {
	size, err := strconv.Atoi(strings.TrimSpace(r.FormValue("size")))
	if err != nil {
		c.fail(w, r, s, fieldError("size", "Size: %q is not a whole number", r.FormValue("size")))
		return
	}
	_, err = s.api.CreatePool(r.Context(), wire.PoolSpec{ID: strings.TrimSpace(r.FormValue("id")), TemplateID: r.FormValue("template_id"),
		Size: size, LeaseTTL: strings.TrimSpace(r.FormValue("lease_ttl"))})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	back(w, r, "/pools", "Pool created.")
}

func (c *Console) deletePool(w http.ResponseWriter, r *http.Request, s *session) {
	if _, err := s.api.DeletePool(r.Context(), r.PathValue("id")); err != nil {
		c.fail(w, r, s, err)
		return
	}
	back(w, r, "/pools", "Pool deleted.")
}
