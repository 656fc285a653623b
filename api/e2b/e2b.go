// Package e2b is the E2B-compatible door onto Primer (docs/API.md, "E2B
// API"): E2B's REST API for sandboxes under /e2b, and the in-sandbox API of
// every sandbox under /e2b/envd, routed by the E2b-Sandbox-Id header. The
// unmodified E2B SDKs drive Primer workspaces through it with E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY set.
//
// The door translates; it never re-implements workspace logic. Every REST
// call is made on /v1 in process, through the Go client (api/client), with
// the caller's own key: tenancy, roles, quotas, audit, lifetimes and warm
// pools are /v1's, identically. A sandbox is a workspace; its E2B shapes are
// built from the workspace /v1 returns.
package e2b

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// DefaultEnvdVersion is the envd version sandboxes report while no Envd
// server is configured (Config.Envd nil): the oldest the SDKs accept with
// usernames optional.
const DefaultEnvdVersion = "0.4.0"

// Envd serves the in-sandbox API (E2B's envd: process.Process,
// filesystem.Filesystem, /files, /health) of one sandbox. The router has
// resolved and authorised the sandbox before ServeEnvd runs, and r's path
// is the envd path (/health, /files, /process.Process/Start, ...) with the
// /e2b/envd prefix taken off. Package api/e2b/envd implements it.
type Envd interface {
	// Version is the envd version sandboxes report (envdVersion): the SDKs
	// turn features on and off by it.
	Version() string
	ServeEnvd(w http.ResponseWriter, r *http.Request, ws *wire.Workspace)
}

// Config holds the door's dependencies.
type Config struct {
	// API is the /v1 API's handler, called in process for every REST call.
	// Required.
	API http.Handler
	// Store finds the sandbox of an envd request (which carries no API
	// key, only the sandbox's access token) and keeps the secret the access
	// tokens derive from. Required.
	Store *models.Store
	// StatusOf turns an errs kind into an HTTP status: the API's one
	// mapping, so the door's own refusals get the statuses /v1's would.
	// Required.
	StatusOf func(errs.Kind) int
	// Connector reaches a sandbox's runtime, to make E2B's default user
	// at create (ensureUser); nil skips that.
	Connector *connector.Connector
	// Envd serves the in-sandbox API; nil answers every envd request 501.
	Envd Envd
	// Logger gets state changes; nil discards. It never sees a key, an
	// access token or an env value.
	Logger *slog.Logger
	// PollInterval is how often a create polls its workspace until it runs
	// (default 50 ms): in process, one indexed read each.
	PollInterval time.Duration
}

// Door is the E2B door: an http.Handler for the paths under /e2b (with the
// /e2b prefix taken off).
type Door struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
}

// tokenSecretName names the platform secret envd access tokens derive from.
const tokenSecretName = "e2b_envd_access"

// New returns the door. It panics on a missing required dependency, a
// programming error in the wiring.
func New(cfg Config) *Door {
	if cfg.API == nil || cfg.Store == nil || cfg.StatusOf == nil {
		panic("e2b: config: API, Store and StatusOf are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 50 * time.Millisecond
	}
	d := &Door{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux()}
	d.routes()
	return d
}

// route is one REST route of the door: a net/http pattern relative to
// /e2b, {id} standing for the sandbox id.
type route struct {
	pattern string
	handle  func(d *Door) restHandler
}

// restRoutes are the door's REST routes: E2B's, with the v1 paths the
// Python SDK uses and the v2 paths the JS SDK uses.
var restRoutes = []route{
	{"POST /sandboxes", func(d *Door) restHandler { return d.createSandbox }},
	{"POST /v2/sandboxes", func(d *Door) restHandler { return d.createSandbox }},
	{"GET /sandboxes", func(d *Door) restHandler { return d.listSandboxes }},
	{"GET /v2/sandboxes", func(d *Door) restHandler { return d.listSandboxes }},
	{"GET /sandboxes/{id}", func(d *Door) restHandler { return d.getSandbox }},
	{"DELETE /sandboxes/{id}", func(d *Door) restHandler { return d.killSandbox }},
	{"POST /sandboxes/{id}/timeout", func(d *Door) restHandler { return d.setTimeout }},
	{"POST /sandboxes/{id}/connect", func(d *Door) restHandler { return d.connectSandbox }},
	{"POST /v2/sandboxes/{id}/connect", func(d *Door) restHandler { return d.connectSandbox }},
	{"POST /sandboxes/{id}/pause", func(d *Door) restHandler { return d.pauseSandbox }},
}

// Routes lists the door's REST routes ("POST /sandboxes/{id}/timeout",
// relative to /e2b), so the API's tenancy matrix runs every one of them.
func Routes() []string {
	out := make([]string, 0, len(restRoutes))
	for _, r := range restRoutes {
		out = append(out, r.pattern)
	}
	return out
}

func (d *Door) routes() {
	allowed := map[string][]string{} // path -> its methods, in route order
	var paths []string
	for _, r := range restRoutes {
		d.mux.HandleFunc(r.pattern, d.rest(r.handle(d)))
		method, path, _ := strings.Cut(r.pattern, " ")
		if allowed[path] == nil {
			paths = append(paths, path)
		}
		allowed[path] = append(allowed[path], method)
	}
	// A door path asked with another method is 405 in E2B's error body
	// (net/http's own answer is plain text), saying which methods it takes.
	for _, path := range paths {
		allow := strings.Join(allowed[path], ", ")
		d.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeJSON(w, http.StatusMethodNotAllowed, apiError{Code: http.StatusMethodNotAllowed,
				Message: "method " + r.Method + " not allowed on " + "/e2b" + r.URL.Path + "; use " + allow})
		})
	}
	d.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, errs.E(errs.NotFound, "route %s %s: not found on the E2B API", r.Method, "/e2b"+r.URL.Path))
	})
}

// envdPrefix is where the in-sandbox API is served, under /e2b.
const envdPrefix = "/envd"

// ServeHTTP serves a request whose path has the /e2b prefix taken off.
func (d *Door) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; p == envdPrefix || strings.HasPrefix(p, envdPrefix+"/") {
		d.serveEnvd(w, r)
		return
	}
	d.mux.ServeHTTP(w, r)
}

// envdVersion is the envd version sandboxes report.
func (d *Door) envdVersion() string {
	if d.cfg.Envd != nil {
		return d.cfg.Envd.Version()
	}
	return DefaultEnvdVersion
}

// tokenSecret returns the key envd access tokens derive from, made on
// first use (the store keeps it once read).
func (d *Door) tokenSecret(ctx context.Context) ([]byte, error) {
	return d.cfg.Store.PlatformSecret(ctx, tokenSecretName)
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
