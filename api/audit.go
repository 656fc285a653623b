package api

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// Keys of the gin context the audit middleware reads.
const (
	auditResourceKey = "primer.audit.resource"
	auditSkipKey     = "primer.audit.skip"
	auditEntryKey    = "primer.audit.entry"
)

// maxAuditLimit caps ?limit= of GET /v1/audit.
const maxAuditLimit = 1000

// auditWait bounds one audit write. On SQLite every write waits its turn
// on the single writer, and a burst of creates on a loaded two-core
// machine has kept that queue over 5 s (a CI run's 50 concurrent creates
// got 503s at 5 s): refusing a request the log could have taken a moment
// later is worse than a slow answer, so the bound is the SDKs' request
// timeout.
const auditWait = 30 * time.Second

// auditResource names the object a request acted on in its audit entry,
// e.g. auditResource(c, "workspaces/"+w.ID). Create handlers call it with
// the new id, which the path does not have; without it the entry names the
// resource from the path (kind/:id).
func auditResource(c *gin.Context, resource string) {
	c.Set(auditResourceKey, resource)
}

// audit records every mutating /v1 request: key, tenant, action,
// resource, status, result and address. A request that reached its handler
// was written to the log before the handler ran (auditBegin) and gets its
// outcome here; one refused before it (401, 403, 429 from authenticate) is
// written here. Rejected requests are recorded too, except repeats from an
// address the throttle is already refusing. The entry holds no body, header,
// file content or key: only what the route and its path parameters say.
func (s *server) audit(c *gin.Context) {
	if !audited(c) {
		c.Next()
		return
	}
	w := &codeWriter{ResponseWriter: c.Writer}
	c.Writer = w
	c.Next()
	if skip, _ := c.Get(auditSkipKey); skip == true {
		return
	}
	status := c.Writer.Status()
	// Written before the response completes, so an acknowledged request
	// has its outcome in the log; a client that went away does not cancel
	// it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), auditWait)
	defer cancel()
	if v, ok := c.Get(auditEntryKey); ok {
		e := v.(*wire.AuditEntry)
		if err := s.cfg.Store.FinishAudit(ctx, e.ID, status, w.result(status), resourceOf(c)); err != nil {
			// The entry is in the log, marked pending: not lost.
			s.log.Error("audit: record the outcome of a request", "audit_id", e.ID, "action", e.Action,
				"status", status, "error", err.Error())
		}
		return
	}
	e := s.auditEntry(c)
	e.Status, e.Result = status, w.result(status)
	if err := s.cfg.Store.AppendAudit(ctx, e); err != nil {
		// Refused before its handler: nothing was done, but say so loudly.
		s.log.Error("audit: record a refused request", "action", e.Action, "resource", e.Resource,
			"key_id", e.KeyID, "status", e.Status, "error", err.Error())
	}
}

// auditBegin writes the audit entry of an authenticated mutating request
// before its handler runs, marked pending. If the log cannot take it the
// request is refused with 503 and its handler never runs: nothing happens
// that the audit log does not show.
func (s *server) auditBegin(c *gin.Context) {
	if !audited(c) {
		c.Next()
		return
	}
	e := s.auditEntry(c)
	e.Result = wire.AuditPending
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), auditWait)
	defer cancel()
	if err := s.cfg.Store.AppendAudit(ctx, e); err != nil {
		s.log.Error("audit: record a request; refusing it", "action", e.Action, "resource", e.Resource,
			"key_id", e.KeyID, "error", err.Error())
		s.fail(c, errs.E(errs.Unavailable, "audit: the request could not be recorded, so it was not carried out; retry later"))
		c.Abort()
		return
	}
	c.Set(auditEntryKey, e)
	c.Next()
}

// audited reports whether the request is one the audit log records: every
// method but the reads.
func audited(c *gin.Context) bool {
	return !readOnly(c.Request.Method) && c.Request.Method != http.MethodOptions
}

// auditEntry is the entry of the request as far as it is known: who, what,
// from where, now.
func (s *server) auditEntry(c *gin.Context) *wire.AuditEntry {
	p := callerOf(c)
	return &wire.AuditEntry{
		KeyID:     p.KeyID,
		TenantID:  p.TenantID,
		Action:    auditAction(c),
		Resource:  resourceOf(c),
		Address:   c.ClientIP(),
		CreatedAt: time.Now(),
	}
}

// toolName is what a session tool name may look like in an action; any
// other value (the handler answers 404 for it) is recorded as "unknown".
var toolName = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// auditAction derives the action from the route template: the literal
// segments joined with dots, then the verb. A route ending in a parameter
// (or a bare collection) gets create, update or delete from the method:
// POST /v1/workspaces is workspaces.create, DELETE /v1/workspaces/:id is
// workspaces.delete. A route ending in a literal is an operation named by
// it: POST /v1/workspaces/:id/exec is workspaces.exec, POST
// /v1/suites/:id/schedule/pause is suites.schedule.pause. A session tool
// is sessions.tools.<tool>.
func auditAction(c *gin.Context) string {
	route := strings.TrimPrefix(c.FullPath(), "/v1/")
	segs := strings.Split(route, "/")
	var lits []string
	for _, seg := range segs {
		switch {
		case seg == ":tool":
			tool := c.Param("tool")
			if !toolName.MatchString(tool) {
				tool = "unknown"
			}
			lits = append(lits, tool)
		case strings.HasPrefix(seg, ":"), strings.HasPrefix(seg, "*"):
		default:
			lits = append(lits, seg)
		}
	}
	last := segs[len(segs)-1]
	endsInParam := strings.HasPrefix(last, ":") || strings.HasPrefix(last, "*")
	verb := ""
	switch {
	case last == ":tool":
	case endsInParam || len(segs) == 1:
		verb = methodVerb(c.Request.Method)
	case c.Request.Method == http.MethodPost && last == "runs":
		// A sub-collection: POST /v1/suites/:id/runs creates a run.
		verb = "create"
	case c.Request.Method != http.MethodPost:
		verb = methodVerb(c.Request.Method)
	}
	if verb != "" {
		lits = append(lits, verb)
	}
	return strings.Join(lits, ".")
}

// methodVerb is the verb of a request on a resource or a collection.
func methodVerb(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut, http.MethodPatch:
		return "update"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(method)
}

// resourceOf is the object of the request: what the handler named with
// auditResource, else kind/:id from the path (with /files/<path> for the
// files routes), else the new object a create's Location names, else the
// kind alone.
func resourceOf(c *gin.Context) string {
	if v, ok := c.Get(auditResourceKey); ok {
		if r, ok := v.(string); ok {
			return r
		}
	}
	kind, _, _ := strings.Cut(strings.TrimPrefix(c.FullPath(), "/v1/"), "/")
	id := c.Param("id")
	if id == "" {
		// A create on a collection names its new object in Location.
		if loc, ok := strings.CutPrefix(c.Writer.Header().Get("Location"), "/v1/"); ok && strings.HasPrefix(loc, kind+"/") {
			return loc
		}
		return kind
	}
	r := kind + "/" + id
	if strings.Contains(c.FullPath(), "/files") {
		r += "/files/" + strings.TrimPrefix(c.Param("path"), "/")
	}
	return r
}

// codeWriter keeps the start of an error response, so the audit entry can
// name the error code the envelope carried. Successful bodies (exec output,
// file contents) are passed through untouched and never kept.
type codeWriter struct {
	gin.ResponseWriter
	head []byte
}

// maxCodeHead is how much of an error body codeWriter keeps: an envelope's
// code comes first.
const maxCodeHead = 512

func (w *codeWriter) keep(n int, b func(int) []byte) {
	if w.Status() >= 400 && len(w.head) < maxCodeHead {
		w.head = append(w.head, b(min(n, maxCodeHead-len(w.head)))...)
	}
}

// Write passes b on, keeping the start of an error body.
func (w *codeWriter) Write(b []byte) (int, error) {
	w.keep(len(b), func(n int) []byte { return b[:n] })
	return w.ResponseWriter.Write(b)
}

// WriteString passes s on, keeping the start of an error body.
func (w *codeWriter) WriteString(s string) (int, error) {
	w.keep(len(s), func(n int) []byte { return []byte(s[:n]) })
	return w.ResponseWriter.WriteString(s)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *codeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// result is "ok" for a success, else the error code of the envelope (or
// http_<status> when the body was not one).
func (w *codeWriter) result(status int) string {
	if status < 400 {
		return "ok"
	}
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(w.head, &env) == nil && env.Error.Code != "" {
		return env.Error.Code
	}
	return "http_" + strconv.Itoa(status)
}

// listAudit answers GET /v1/audit: an admin's every tenant (or ?tenant=),
// anyone else's own tenant since it was created. ?after=<id> returns the entries after it, oldest
// first (to follow the log); otherwise the newest, newest first. ?limit=
// caps the count (default 100, at most 1000).
func (s *server) listAudit(c *gin.Context) {
	f := models.AuditFilter{TenantID: listTenant(c), Limit: models.DefaultAuditLimit}
	if p := callerOf(c); !p.admin() {
		// A tenant made again with a deleted tenant's id does not see the
		// old tenant's entries (an admin sees them all).
		t, err := s.cfg.Store.GetTenant(c.Request.Context(), p.TenantID)
		if err != nil {
			s.fail(c, err)
			return
		}
		f.Since = t.CreatedAt
	}
	if v := c.Query("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			s.fail(c, errs.Field("after", "after: %q is not an audit entry id", v))
			return
		}
		f.AfterID = n
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAuditLimit {
			s.fail(c, errs.Field("limit", "limit: %q: want 1 to %d", v, maxAuditLimit))
			return
		}
		f.Limit = n
	}
	es, err := s.cfg.Store.ListAudit(c.Request.Context(), f)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, list(es))
}
