package e2b

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// List paging, as E2B's API: limit 1-100, default 100.
const (
	defaultListLimit = 100
	maxListLimit     = 100
)

// nextTokenHeader carries the cursor of the next page.
const nextTokenHeader = "X-Next-Token"

// listQuery is what GET /sandboxes and /v2/sandboxes filter and page by.
type listQuery struct {
	metadata     map[string]string
	states       map[string]bool // empty: every state
	template     string
	startedAfter time.Time
	asc          bool
	limit        int
	after        *cursor // the last sandbox of the previous page
}

// cursor is a position in the list: the start time and id of a sandbox.
// The token is opaque to clients; it names a position, not a sandbox, so
// a page stays right when the sandbox it ended with is killed.
type cursor struct {
	started time.Time
	id      string
}

func (c cursor) token() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.started.UnixNano(), 10) + ":" + c.id))
}

func parseCursor(tok string) (*cursor, error) {
	bad := errs.Field("nextToken", "nextToken: malformed; pass the X-Next-Token of the previous page")
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, bad
	}
	ns, id, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, bad
	}
	return &cursor{started: time.Unix(0, n), id: id}, nil
}

// parseMetadata reads E2B's metadata filter: a query string of URL-encoded
// keys and values ("user=abc&app=prod"), itself a query parameter. The SDKs
// encode each key and value, then the pairs, then the parameter, so after
// the parameter's and the pairs' decoding each key and value is decoded once
// more.
func parseMetadata(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	pairs, err := url.ParseQuery(s)
	if err != nil {
		return nil, errs.Field("metadata", "metadata: malformed query %q: %v", s, err)
	}
	out := make(map[string]string, len(pairs))
	for k, vs := range pairs {
		key, err := url.QueryUnescape(k)
		if err != nil {
			return nil, errs.Field("metadata", "metadata: key %q: %v", k, err)
		}
		for _, v := range vs {
			val, err := url.QueryUnescape(v)
			if err != nil {
				return nil, errs.Field("metadata", "metadata: value of %q: %v", key, err)
			}
			out[key] = val
		}
	}
	return out, nil
}

// parseList reads the list query; v2 has paging and the state, template,
// order and startedAfter filters, the old list only metadata.
func parseList(q url.Values, v2 bool) (listQuery, error) {
	var lq listQuery
	var err error
	if lq.metadata, err = parseMetadata(q.Get("metadata")); err != nil {
		return lq, err
	}
	if !v2 {
		return lq, nil
	}
	for _, v := range q["state"] {
		for _, st := range strings.Split(v, ",") {
			switch st {
			case "running", "paused":
				if lq.states == nil {
					lq.states = map[string]bool{}
				}
				lq.states[st] = true
			case "":
			default:
				return lq, errs.Field("state", "state: %q is not running or paused", st)
			}
		}
	}
	lq.template = q.Get("template")
	switch o := q.Get("order"); o {
	case "", "desc":
	case "asc":
		lq.asc = true
	default:
		return lq, errs.Field("order", "order: %q is not asc or desc", o)
	}
	if s := q.Get("startedAfter"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return lq, errs.Field("startedAfter", "startedAfter: %q is not an RFC 3339 time", s)
		}
		lq.startedAfter = t
	}
	lq.limit = defaultListLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxListLimit {
			return lq, errs.Field("limit", "limit: %q is not a number from 1 to %d", s, maxListLimit)
		}
		lq.limit = n
	}
	if s := q.Get("nextToken"); s != "" {
		if lq.after, err = parseCursor(s); err != nil {
			return lq, err
		}
	}
	return lq, nil
}

// before reports whether a comes before b in the list's order: by start
// time, newest first unless asc, then by id.
func (lq listQuery) before(a, b cursor) bool {
	if !a.started.Equal(b.started) {
		return a.started.After(b.started) != lq.asc
	}
	return (a.id > b.id) != lq.asc
}

// match reports whether the sandbox w is in the list: alive (not being
// killed), not an idle member of a warm pool (nobody created it), and
// matching every filter.
func (lq listQuery) match(w *wire.Workspace) bool {
	if gone(w) || (w.PoolID != "" && w.PoolState != wire.PoolLeased) {
		return false
	}
	if len(lq.states) > 0 && !lq.states[state(w)] {
		return false
	}
	if lq.template != "" && w.TemplateID != lq.template {
		return false
	}
	if !lq.startedAfter.IsZero() && w.CreatedAt.Before(lq.startedAfter) {
		return false
	}
	for k, v := range lq.metadata {
		if got, ok := w.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// listSandboxes answers GET /sandboxes (every match) and /v2/sandboxes (a
// page of them; X-Next-Token names the next). The workspaces are /v1's
// list for the caller's key, so a tenant sees only its own.
func (d *Door) listSandboxes(w http.ResponseWriter, r *http.Request, api *client.Client) {
	v2 := strings.HasPrefix(r.URL.Path, "/v2/")
	lq, err := parseList(r.URL.Query(), v2)
	if err != nil {
		d.fail(w, err)
		return
	}
	all, err := api.ListWorkspaces(r.Context(), client.WorkspaceListOptions{TemplateID: lq.template})
	if err != nil {
		d.fail(w, err)
		return
	}
	var page []*wire.Workspace
	for i := range all {
		ws := &all[i]
		if !lq.match(ws) {
			continue
		}
		if lq.after != nil && !lq.before(*lq.after, cursor{started: ws.CreatedAt, id: ws.ID}) {
			continue
		}
		page = append(page, ws)
	}
	sort.Slice(page, func(i, j int) bool {
		return lq.before(cursor{page[i].CreatedAt, page[i].ID}, cursor{page[j].CreatedAt, page[j].ID})
	})
	if v2 && len(page) > lq.limit {
		page = page[:lq.limit]
		last := page[len(page)-1]
		w.Header().Set(nextTokenHeader, cursor{started: last.CreatedAt, id: last.ID}.token())
	}
	out := make([]listedSandbox, 0, len(page))
	for _, ws := range page {
		out = append(out, d.listed(ws))
	}
	writeJSON(w, http.StatusOK, out)
}
