// Package console is Primer's web console: server-rendered pages served by
// `primer serve` at `/` on the API's own port, beside the REST API under
// /v1. It follows the seeds' walkthroughs: Workspaces (Providers, Templates,
// Workspaces and Pools tabs), Compute (Agents), Eval suites and Sessions.
//
// The console holds no platform logic and no store access beyond its own
// session rows (session.go: a hashed token with an expiry, so a sign-in
// survives a restart and works on every replica). Every page calls
// the REST API in process (inproc.go) with the signed-in user's own API key,
// so what a page shows and may change is exactly what that key may through
// /v1: tenant scoping, roles and validation stay in one place.
//
// Pages are html/template (everything a user typed is escaped), the CSS and
// the little JavaScript (provider form switching, the live phase stream, the
// streamed exec output) are embedded files: no CDN, no build step.
package console

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/wire"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config holds the console's dependencies.
type Config struct {
	// API is the REST API's handler; the console calls it in process. Required.
	API http.Handler
	// TemporalUI is the Temporal web UI's address (http://host:port), or ""
	// when there is none: a workspace page then shows no workflow link.
	TemporalUI string
	// TemporalNamespace is the namespace workflows run in (default "default").
	TemporalNamespace string
	// SessionTTL is how long a console session lives after its last use
	// (default 12h).
	SessionTTL time.Duration
	// SessionsPerKey caps the sessions one API key holds: signing in once
	// more ends the key's least recently used session (default
	// DefaultSessionsPerKey).
	SessionsPerKey int
	// MaxSessions caps the sessions of all keys together: past it a
	// sign-in is refused until one expires (default DefaultMaxSessions).
	MaxSessions int
	// Sessions keeps the console's sessions (models.Store). Required.
	Sessions SessionStore
	// Metrics, when set, gets the number of sessions (primer_console_sessions).
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// PreviewDomain is the host name under which preview hosts
	// ({port}-{id}.{domain}) are served, or "": Mount sends every request
	// to such a host to the API, which serves it as the program's.
	PreviewDomain string
}

// Default session caps, applied by New to zero Config fields.
const (
	DefaultSessionsPerKey = 8
	DefaultMaxSessions    = 10000
)

// Console serves the console's pages. Build it with New.
type Console struct {
	cfg      Config
	log      *slog.Logger
	pages    map[string]*template.Template
	sessions *sessionStore
	static   http.Handler
}

// New validates cfg, fills its defaults and parses the page templates.
func New(cfg Config) (*Console, error) {
	if cfg.API == nil {
		return nil, errors.New("console: config: API is required")
	}
	if cfg.Sessions == nil {
		return nil, errors.New("console: config: Sessions is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.SessionsPerKey <= 0 {
		cfg.SessionsPerKey = DefaultSessionsPerKey
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	var gauge func(int)
	if cfg.Metrics != nil {
		gauge = func(n int) { cfg.Metrics.ConsoleSessions.Set(float64(n)) }
	}
	if cfg.TemporalNamespace == "" {
		cfg.TemporalNamespace = "default"
	}
	if cfg.TemporalUI != "" && !strings.Contains(cfg.TemporalUI, "://") {
		cfg.TemporalUI = "http://" + cfg.TemporalUI
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	return &Console{
		cfg:      cfg,
		log:      cfg.Logger,
		pages:    pages,
		sessions: newSessionStore(cfg.Sessions, cfg.SessionTTL, cfg.SessionsPerKey, cfg.MaxSessions, gauge, cfg.Logger),
		static:   http.StripPrefix("/static/", http.FileServerFS(sub)),
	}, nil
}

// Close stops the session sweep timer.
func (c *Console) Close() { c.sessions.close() }

// Mount returns a handler that sends /v1, /e2b, /preview (preview links),
// /healthz, /readyz, /metrics and every request to a preview host to the
// API and everything else to the console, and the console, whose Close
// the caller calls before it closes the store the sign-ins live in.
func Mount(cfg Config) (http.Handler, *Console, error) {
	c, err := New(cfg)
	if err != nil {
		return nil, nil, err
	}
	pages := c.Handler()
	// Not a ServeMux: it would clean the API's paths and redirect them
	// ("files/../../etc/passwd" to "/v1/workspaces/etc/passwd"), where
	// the API itself refuses a path that leaves the workspace, naming it.
	// /files is the E2B SDKs' presigned file URLs (api/e2b SignedFilesPath).
	previewSuffix := ""
	if cfg.PreviewDomain != "" {
		previewSuffix = "." + strings.ToLower(cfg.PreviewDomain)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/v1" || strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/e2b/") || p == "/files" || p == "/healthz" || p == "/readyz" || p == "/metrics",
			p == "/preview" || strings.HasPrefix(p, "/preview/"),
			previewSuffix != "" && strings.HasSuffix(strings.ToLower(hostOnly(r.Host)), previewSuffix):
			cfg.API.ServeHTTP(w, r)
		default:
			pages.ServeHTTP(w, r)
		}
	}), c, nil
}

// hostOnly is host without its port.
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// Handler returns the console's routes.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", c.static)
	mux.HandleFunc("GET /signin", c.signinPage)
	mux.HandleFunc("POST /signin", c.signin)
	mux.HandleFunc("POST /signout", c.auth(c.signout))
	mux.HandleFunc("GET /{$}", c.auth(func(w http.ResponseWriter, r *http.Request, s *session) {
		http.Redirect(w, r, "/workspaces", http.StatusSeeOther)
	}))

	mux.HandleFunc("GET /providers", c.auth(c.providers))
	mux.HandleFunc("GET /providers/new", c.auth(c.newProvider))
	mux.HandleFunc("POST /providers", c.auth(c.createProvider))
	mux.HandleFunc("GET /providers/{id}", c.auth(c.provider))
	mux.HandleFunc("POST /providers/{id}", c.auth(c.updateProvider))
	mux.HandleFunc("POST /providers/{id}/delete", c.auth(c.deleteProvider))

	mux.HandleFunc("GET /templates", c.auth(c.templates))
	mux.HandleFunc("GET /templates/new", c.auth(c.newTemplate))
	mux.HandleFunc("POST /templates", c.auth(c.createTemplate))
	mux.HandleFunc("GET /templates/{id}", c.auth(c.template))
	mux.HandleFunc("POST /templates/{id}", c.auth(c.updateTemplate))
	mux.HandleFunc("POST /templates/{id}/delete", c.auth(c.deleteTemplate))

	mux.HandleFunc("GET /pools", c.auth(c.pools))
	mux.HandleFunc("POST /pools", c.auth(c.createPool))
	mux.HandleFunc("POST /pools/{id}/delete", c.auth(c.deletePool))
	mux.HandleFunc("GET /snapshots", c.auth(c.snapshots))
	mux.HandleFunc("POST /snapshots/{id}/delete", c.auth(c.deleteSnapshot))

	mux.HandleFunc("GET /workspaces", c.auth(c.workspaces))
	mux.HandleFunc("GET /workspaces/new", c.auth(c.newWorkspace))
	mux.HandleFunc("POST /workspaces", c.auth(c.createWorkspace))
	mux.HandleFunc("GET /workspaces/{id}", c.auth(c.workspace))
	mux.HandleFunc("POST /workspaces/{id}/{op}", c.auth(c.workspaceOp))
	mux.HandleFunc("GET /workspaces/{id}/files", c.auth(c.files))
	mux.HandleFunc("GET /workspaces/{id}/download", c.auth(c.download))
	mux.HandleFunc("POST /workspaces/{id}/files", c.auth(c.upload))
	mux.HandleFunc("POST /workspaces/{id}/exec", c.auth(c.exec))
	mux.HandleFunc("GET /live/workspaces", c.auth(c.liveWorkspaces))
	mux.HandleFunc("GET /live/workspaces/{id}/events", c.auth(c.liveEvents))

	mux.HandleFunc("GET /agents", c.auth(c.agents))
	mux.HandleFunc("GET /agents/new", c.auth(c.newAgent))
	mux.HandleFunc("POST /agents", c.auth(c.createAgent))
	mux.HandleFunc("GET /agents/{id}", c.auth(c.agent))
	mux.HandleFunc("POST /agents/{id}/delete", c.auth(c.deleteAgent))
	mux.HandleFunc("GET /llm-providers/new", c.auth(c.newLLMProvider))
	mux.HandleFunc("POST /llm-providers", c.auth(c.createLLMProvider))
	mux.HandleFunc("POST /llm-providers/{id}/delete", c.auth(c.deleteLLMProvider))
	mux.HandleFunc("POST /workspaces/{id}/run", c.auth(c.runAgent))
	mux.HandleFunc("GET /suites", c.auth(c.suites))
	mux.HandleFunc("GET /suites/{id}", c.auth(c.suite))
	mux.HandleFunc("POST /suites/{id}/runs", c.auth(c.startRun))
	mux.HandleFunc("GET /runs/{id}", c.auth(c.run))
	mux.HandleFunc("GET /runs/{id}/compare", c.auth(c.compare))
	mux.HandleFunc("GET /sessions", c.auth(c.sessionsPage))
	mux.HandleFunc("GET /sessions/{id}", c.auth(c.sessionPage))
	mux.HandleFunc("POST /sessions/{id}/restore", c.auth(c.restore))
	mux.HandleFunc("POST /sessions/{id}/cancel", c.auth(c.cancelRun))
	mux.HandleFunc("GET /sessions/{id}/commits/{commit}", c.auth(c.commitDiff))
	mux.HandleFunc("GET /live/sessions/{id}/transcript", c.auth(c.liveTranscript))
	return securityHeaders(mux)
}

// securityHeaders sets what every console response carries: no framing,
// no sniffing, and a content policy that allows only the console's own
// scripts, styles and connections.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY")
		h.ServeHTTP(w, r)
	})
}

// page is what every page template gets: the session's identity, the nav
// section, the CSRF token and the page's own data.
type page struct {
	Title    string
	Section  string // workspaces, agents, suites, sessions
	Tab      string // providers, templates, workspaces, pools
	Role     string
	Tenant   string
	KeyID    string
	CanWrite bool
	CSRF     string
	Error    string
	Notice   string
	Data     any
}

// render writes page name with data, status 200 unless status says else.
func (c *Console) render(w http.ResponseWriter, r *http.Request, s *session, status int, name string, p page) {
	t, ok := c.pages[name]
	if !ok {
		http.Error(w, "console: no page "+name, http.StatusInternalServerError)
		return
	}
	if s != nil {
		p.Role, p.Tenant, p.KeyID, p.CSRF = s.role, s.tenant, s.keyID, s.csrf
		p.CanWrite = s.canWrite()
	}
	if p.Notice == "" {
		p.Notice = r.URL.Query().Get("notice")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if status == 0 {
		status = http.StatusOK
	}
	// Render into a buffer first so a template error is a clean 500, not
	// half a page.
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		c.log.Error("console: render", "page", name, "error", err.Error())
		http.Error(w, "console: render failed", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail renders an API failure as an error page with the API's status and
// message: a refused delete shows the API's reason.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	status := http.StatusInternalServerError
	var ae *client.Error
	if errors.As(err, &ae) && ae.Status >= 400 {
		status = ae.Status
	} else if errs.Is(err, errs.NotFound) {
		status = http.StatusNotFound
	}
	if status == http.StatusUnauthorized {
		// The key was revoked or expired since sign-in.
		c.sessions.drop(r.Context(), s.hash)
		http.Redirect(w, r, "/signin", http.StatusSeeOther)
		return
	}
	c.render(w, r, s, status, "error", page{Title: "Error", Error: err.Error()})
}

// back redirects after a successful form to target with a notice.
func back(w http.ResponseWriter, r *http.Request, target, notice string) {
	if notice != "" {
		target += "?notice=" + url.QueryEscape(notice)
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// since is how the console shows a time: UTC to the second.
func since(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

var funcs = template.FuncMap{
	"since": since,
	"timep": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"join": func(dir, name string) string {
		if dir == "" || dir == "." {
			return name
		}
		return path.Join(dir, name)
	},
	"parent": func(p string) string {
		d := path.Dir(p)
		if d == "." || d == "/" {
			return ""
		}
		return d
	},
	"mask": func(string) string { return "••••••" },
	"pct":  func(f float64) string { return fmt.Sprintf("%.1f%%", f*100) },
	"deref": func(f *float64) string {
		if f == nil {
			return ""
		}
		return fmt.Sprintf("%.3g", *f)
	},
	"final": func(p wire.Progress) int { return p.Pass + p.Fail + p.Error + p.Canceled },
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
}

// parsePages parses each page template together with the layout.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".html")
		if base == "layout" || strings.HasPrefix(base, "_") {
			continue
		}
		// Every page gets the layout and the partials (files named _*.html).
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", n, err)
		}
		pages[base] = t
	}
	return pages, nil
}

// statusOf is the HTTP status the API answered err with (500 if none).
func statusOf(err error) int {
	var ae *client.Error
	if errors.As(err, &ae) && ae.Status >= 400 {
		return ae.Status
	}
	if errs.Is(err, errs.Invalid) {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// fieldError is a form field the console itself could not read.
func fieldError(field, format string, args ...any) error {
	return errs.Field(field, format, args...)
}
