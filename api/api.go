// Package api is Primer's REST API (docs/API.md): Gin handlers for providers,
// templates, warm pools, workspaces (with their files, exec and events),
// sessions (with their tools and history), eval suites and their runs (with
// results, comparisons and progress events), plus /healthz, /readyz and
// /metrics.
//
// The API starts, signals and reads workflows and rows; it never talks to a
// backend for lifecycle changes. File and exec requests go to the workspace's
// runtime through the connector.Connector. Every error leaves in one
// envelope, {"error":{"code","message","details"}}, and errs kinds become
// HTTP statuses in exactly one function, statusOf.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"

	"github.com/primerhq/primer/api/e2b"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/starter"
)

// Default limits, applied by New to zero Config fields.
const (
	DefaultMaxJSONBytes = 1 << 20  // 1 MiB
	DefaultMaxFileBytes = 64 << 20 // 64 MiB
)

// Config holds the API's dependencies and limits.
type Config struct {
	Store *models.Store
	// Temporal is the client the Starter uses. The handlers start and
	// signal workflows only through the Starter, so it is optional here.
	Temporal client.Client
	// Starter creates, deletes and signals workspaces and pools: the API
	// and the pool workflow share it, so a workspace is made the same way
	// whoever asks. Required.
	Starter   *starter.Starter
	Connector *connector.Connector
	Backends  *backend.Registry
	Metrics   *metrics.Metrics
	Logger    *slog.Logger
	// MaxJSONBytes limits JSON request bodies (default 1 MiB).
	MaxJSONBytes int64
	// MaxFileBytes limits files written and read through the files API
	// (default 64 MiB). Both stream, so it bounds disk, not memory.
	MaxFileBytes int64
	// MaxStreamsPerKey and MaxStreamsPerTenant cap the event streams
	// (every SSE endpoint) one API key and one tenant hold open at once;
	// past a cap a stream is refused 429 naming it (defaults
	// DefaultMaxStreamsPerKey, DefaultMaxStreamsPerTenant).
	MaxStreamsPerKey    int
	MaxStreamsPerTenant int
	// MaxUploadsPerTenant caps the file uploads (PUT .../files) one tenant
	// has in flight; past it an upload is refused 429 (default
	// DefaultMaxUploadsPerTenant).
	MaxUploadsPerTenant int
	// UploadDir is where an upload's body is spooled, checked against
	// MaxFileBytes as it arrives, before it is sent to the workspace: no
	// body is held in memory (default: the system's temporary directory).
	UploadDir string
	// TrustedProxies are the addresses (CIDRs or single IPs) of the proxies
	// in front of the API. X-Forwarded-For (or X-Real-IP) is believed only
	// from a peer in this list, and then the client is the right-most
	// address in it that is not itself a trusted proxy; from any other peer
	// the client is the peer. Empty (the default) trusts no proxy. The
	// client address keys the failed-authentication throttle and is audited.
	TrustedProxies []string
	// Ready runs extra readiness checks for /readyz (Temporal); nil means none.
	Ready func(ctx context.Context) error
	// OpenAccess serves /v1 without API keys, every request acting as the
	// default tenant's admin. Only for tests and benchmarks: `primer
	// serve` never sets it.
	OpenAccess bool
	// Outbound says which addresses a user-chosen URL may name (model
	// providers' base_url, webhooks); nil refuses every internal address.
	Outbound *outbound.Policy
	// Envd serves the in-sandbox API of the E2B door (/e2b/envd); nil
	// answers it 501.
	Envd e2b.Envd
	// PreviewURL, when set (like https://preview.example.com), serves
	// preview links on hosts {port}-{workspace id}.{its host}, each its
	// own origin, so programs that use absolute paths, cookies or storage
	// work; the DNS name *.{its host} must lead to this server. Nil serves
	// links under /preview/ on the platform's own host only.
	PreviewURL *url.URL
}

// server is the API's state: the filled-in Config and the knobs tests turn.
type server struct {
	cfg Config
	log *slog.Logger

	// eventPoll is how often a run's or a transcript's SSE stream reads
	// the store without being woken: a safety net for a lost wake-up
	// (models.Store.WaitRun). Workspace and tenant event streams do not
	// poll at all: the store's watchdog covers them.
	eventPoll time.Duration
	// heartbeat is how often an idle SSE stream sends a comment line, so
	// proxies and clients see the connection is alive.
	heartbeat time.Duration
	// maxExecOutput caps the stdout and stderr a non-streaming exec collects.
	maxExecOutput int
	// maxSuiteBytes bounds a suite document with its cases (JSON or JSONL).
	maxSuiteBytes int64

	// leaseWake is how long after a lease its pool is woken to refill: the
	// refill makes a sandbox, which on a small machine competes with the
	// lessee's first calls, and a burst of leases shares one wake-up.
	leaseWake time.Duration

	// bg counts the work requests left running after they answered
	// (background), so tests can wait for it.
	bg sync.WaitGroup

	// authFails throttles failed authentication per client address
	// (ratelimit.go); tests swap it for tighter or looser limits.
	authFails *failLimiter
	// keyTouched is when each key's last_used_at was last written (auth.go).
	keyTouched sync.Map

	// streams counts open event streams per key and tenant, uploads the
	// uploads in flight per tenant (inflight.go).
	streams *inflight
	uploads *inflight

	// previews holds the requests open through preview links, so a
	// link's revoke or expiry ends them (preview_conns.go).
	previews *previewConns
}

// New validates cfg, fills its defaults and returns the API's handler.
func New(cfg Config) (http.Handler, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	return s.routes(), nil
}

func newServer(cfg Config) (*server, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("api: config: Store is required")
	case cfg.Starter == nil:
		return nil, errors.New("api: config: Starter is required")
	case cfg.Connector == nil:
		return nil, errors.New("api: config: Connector is required")
	case cfg.Backends == nil:
		return nil, errors.New("api: config: Backends is required")
	case cfg.Metrics == nil:
		return nil, errors.New("api: config: Metrics is required")
	case cfg.MaxJSONBytes < 0 || cfg.MaxFileBytes < 0:
		return nil, errors.New("api: config: body limits must not be negative")
	case cfg.MaxStreamsPerKey < 0 || cfg.MaxStreamsPerTenant < 0 || cfg.MaxUploadsPerTenant < 0:
		return nil, errors.New("api: config: stream and upload caps must not be negative")
	}
	if _, err := ParseTrustedProxies(cfg.TrustedProxies); err != nil {
		return nil, fmt.Errorf("api: config: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxJSONBytes == 0 {
		cfg.MaxJSONBytes = DefaultMaxJSONBytes
	}
	if cfg.MaxFileBytes == 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.MaxStreamsPerKey == 0 {
		cfg.MaxStreamsPerKey = DefaultMaxStreamsPerKey
	}
	if cfg.MaxStreamsPerTenant == 0 {
		cfg.MaxStreamsPerTenant = DefaultMaxStreamsPerTenant
	}
	if cfg.MaxUploadsPerTenant == 0 {
		cfg.MaxUploadsPerTenant = DefaultMaxUploadsPerTenant
	}
	if cfg.UploadDir == "" {
		cfg.UploadDir = os.TempDir()
	}
	if err := prepareUploadDir(cfg.UploadDir); err != nil {
		return nil, fmt.Errorf("api: config: %w", err)
	}
	return &server{
		cfg:           cfg,
		log:           cfg.Logger,
		eventPoll:     2 * time.Second,
		heartbeat:     15 * time.Second,
		leaseWake:     250 * time.Millisecond,
		maxExecOutput: 16 << 20,
		maxSuiteBytes: eval.MaxSuiteBytes,
		authFails:     newFailLimiter(DefaultAuthFailBurst, DefaultAuthFailRate),
		streams:       newInflight(),
		uploads:       newInflight(),
		previews:      newPreviewConns(),
	}, nil
}

func (s *server) routes() http.Handler {
	// Release mode keeps gin from printing routes and warnings on stdout;
	// requests are logged through slog by s.observe instead.
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	s.trustProxies(r)
	r.Use(s.observe, s.recoverPanic, s.previewHost)
	r.NoRoute(func(c *gin.Context) {
		s.fail(c, errs.E(errs.NotFound, "route %s %s: not found", c.Request.Method, c.Request.URL.Path))
	})
	r.NoMethod(func(c *gin.Context) {
		s.failStatus(c, http.StatusMethodNotAllowed, "method_not_allowed",
			fmt.Sprintf("route %s: method %s not allowed", c.Request.URL.Path, c.Request.Method), nil)
	})

	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	metricsHandler := promhttp.HandlerFor(s.cfg.Metrics.Registry, promhttp.HandlerOpts{})
	r.GET("/metrics", gin.WrapH(metricsHandler))

	// The API's description needs no key (openapi_doc.go), so it is not in
	// the authenticated group.
	r.GET("/v1/openapi.json", openAPIHandler())

	// Preview links need no key: the token in the path is the credential
	// (previews.go), and it is never logged (observe).
	for _, m := range portMethods {
		r.Handle(m, "/preview/:token", s.servePreview)
		r.Handle(m, "/preview/:token/*path", s.servePreview)
	}

	// audit runs first so it records what authenticate refuses too;
	// auditBegin writes an authenticated request's entry before its handler.
	v1 := r.Group("/v1", s.audit, s.authenticate, s.auditBegin)
	v1.POST("/tenants", s.createTenant)
	v1.GET("/tenants", s.listTenants)
	v1.GET("/tenants/:id", s.getTenant)
	v1.PUT("/tenants/:id", s.updateTenant)
	v1.DELETE("/tenants/:id", s.deleteTenant)

	v1.POST("/apikeys", s.createAPIKey)
	v1.GET("/apikeys", s.listAPIKeys)
	v1.GET("/apikeys/:id", s.getAPIKey)
	v1.POST("/apikeys/:id/revoke", s.revokeAPIKey)
	v1.DELETE("/apikeys/:id", s.revokeAPIKey)

	v1.GET("/audit", s.listAudit)

	v1.POST("/providers", s.createProvider)
	v1.GET("/providers", s.listProviders)
	v1.GET("/providers/:id", s.getProvider)
	v1.PUT("/providers/:id", s.updateProvider)
	v1.DELETE("/providers/:id", s.deleteProvider)

	v1.POST("/templates", s.createTemplate)
	v1.GET("/templates", s.listTemplates)
	v1.GET("/templates/:id", s.getTemplate)
	v1.PUT("/templates/:id", s.updateTemplate)
	v1.DELETE("/templates/:id", s.deleteTemplate)

	v1.POST("/llm-providers", s.createLLMProvider)
	v1.GET("/llm-providers", s.listLLMProviders)
	v1.GET("/llm-providers/:id", s.getLLMProvider)
	v1.PUT("/llm-providers/:id", s.updateLLMProvider)
	v1.DELETE("/llm-providers/:id", s.deleteLLMProvider)

	v1.POST("/agents", s.createAgent)
	v1.GET("/agents", s.listAgents)
	v1.GET("/agents/:id", s.getAgent)
	v1.PUT("/agents/:id", s.updateAgent)
	v1.DELETE("/agents/:id", s.deleteAgent)

	v1.POST("/workspaces", s.createWorkspace)
	v1.GET("/workspaces", s.listWorkspaces)
	v1.GET("/workspaces/:id", s.getWorkspace)
	v1.DELETE("/workspaces/:id", s.deleteWorkspace)
	v1.GET("/workspaces/:id/files", s.getFile)
	v1.GET("/workspaces/:id/files/*path", s.getFile)
	v1.PUT("/workspaces/:id/files/*path", s.putFile)
	v1.DELETE("/workspaces/:id/files/*path", s.deleteFile)
	v1.POST("/workspaces/:id/exec", s.exec)
	v1.POST("/workspaces/:id/processes", s.startProcess)
	v1.GET("/workspaces/:id/processes", s.listProcesses)
	v1.GET("/workspaces/:id/processes/:pid", s.getProcess)
	v1.GET("/workspaces/:id/processes/:pid/attach", s.attachProcess)
	v1.POST("/workspaces/:id/processes/:pid/input", s.processInput())
	v1.POST("/workspaces/:id/processes/:pid/signal", s.processSignal())
	v1.POST("/workspaces/:id/processes/:pid/resize", s.processResize())
	v1.POST("/workspaces/:id/processes/:pid/close-stdin", s.processCloseStdin())
	v1.GET("/workspaces/:id/ports", s.listPorts)
	for _, m := range portMethods {
		v1.Handle(m, "/workspaces/:id/ports/:port/*path", s.proxyPort)
	}
	v1.GET("/workspaces/:id/port-forward/:port", s.portForward)
	v1.POST("/workspaces/:id/previews", s.createPreview)
	v1.GET("/workspaces/:id/previews", s.listPreviews)
	v1.DELETE("/workspaces/:id/previews/:preview", s.revokePreview)
	v1.GET("/workspaces/:id/events", s.events)
	v1.GET("/events", s.tenantEventList)
	v1.POST("/workspaces/:id/return", s.returnWorkspace)
	v1.POST("/workspaces/:id/recover", s.recoverWorkspace)
	v1.POST("/workspaces/:id/extend", s.extendWorkspace)
	v1.POST("/workspaces/:id/snapshots", s.createSnapshot)
	v1.POST("/workspaces/:id/fork", s.forkWorkspace)
	v1.POST("/workspaces/:id/pause", s.pauseWorkspace)
	v1.POST("/workspaces/:id/resume", s.resumeWorkspace)
	v1.GET("/snapshots", s.listSnapshots)
	v1.GET("/snapshots/:id", s.getSnapshot)
	v1.DELETE("/snapshots/:id", s.deleteSnapshot)

	v1.POST("/pools", s.createPool)
	v1.GET("/pools", s.listPools)
	v1.GET("/pools/:id", s.getPool)
	v1.PUT("/pools/:id", s.updatePool)
	v1.DELETE("/pools/:id", s.deletePool)
	v1.POST("/pools/:id/lease", s.leasePool)

	v1.POST("/suites", s.createSuite)
	v1.GET("/suites", s.listSuites)
	v1.GET("/suites/:id", s.getSuite)
	v1.PUT("/suites/:id", s.updateSuite)
	v1.DELETE("/suites/:id", s.deleteSuite)
	v1.GET("/suites/:id/cases", s.suiteCases)
	v1.POST("/suites/:id/schedule/pause", s.scheduleOp("pause"))
	v1.POST("/suites/:id/schedule/resume", s.scheduleOp("resume"))
	v1.POST("/suites/:id/schedule/trigger", s.scheduleOp("trigger"))
	v1.POST("/suites/:id/runs", s.createRun)

	v1.GET("/runs", s.listRuns)
	v1.GET("/runs/:id", s.getRun)
	v1.GET("/runs/:id/results", s.runResults)
	v1.GET("/runs/:id/compare", s.compareRuns)
	v1.POST("/runs/:id/cancel", s.cancelRun)
	v1.GET("/runs/:id/events", s.runEvents)

	v1.POST("/sessions", s.createSession)
	v1.GET("/sessions", s.listSessions)
	v1.GET("/sessions/:id", s.getSession)
	v1.POST("/sessions/:id/end", s.endSession)
	v1.POST("/sessions/:id/tools/:tool", s.sessionTool)
	v1.GET("/sessions/:id/history", s.sessionHistory)
	v1.GET("/sessions/:id/diff", s.sessionDiff)
	v1.POST("/sessions/:id/restore", s.sessionRestore)
	v1.POST("/sessions/:id/run", s.runSession)
	v1.POST("/sessions/:id/cancel", s.cancelSession)
	v1.GET("/sessions/:id/transcript", s.sessionTranscript)

	// The E2B door (api/e2b) calls /v1 in process with the caller's key:
	// its tenancy, roles, quotas and audit are these routes'.
	door := e2b.New(e2b.Config{API: r, Store: s.cfg.Store, StatusOf: statusOf, Connector: s.cfg.Connector, Envd: s.cfg.Envd, Logger: s.log})
	r.Any("/e2b/*path", gin.WrapH(http.StripPrefix("/e2b", door)))
	// The SDKs' presigned file URLs land at the host's root (e2b.SignedFilesPath).
	r.Any(e2b.SignedFilesPath, gin.WrapH(http.HandlerFunc(door.ServeSignedFiles)))
	return r
}

// knownMethods bounds the method label of the request metrics: anything else
// a client sends is counted as OTHER.
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// observe records request metrics by route template (never the raw path, so
// workspace ids do not explode the label set) and logs each request at debug.
func (s *server) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	elapsed := time.Since(start)
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	method := c.Request.Method
	if !knownMethods[method] {
		method = "OTHER"
	}
	status := c.Writer.Status()
	s.cfg.Metrics.HTTPRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	s.cfg.Metrics.HTTPDuration.WithLabelValues(method, route).Observe(elapsed.Seconds())
	// Only the method, route, path and status: bodies and headers can carry
	// file contents, env values and tokens.
	s.log.LogAttrs(c.Request.Context(), slog.LevelDebug, "http request",
		slog.String("method", c.Request.Method), slog.String("route", route),
		slog.String("path", loggedPath(c)), slog.Int("status", status),
		slog.Duration("duration", elapsed))
}

// loggedPath is the request's path as the log shows it: a preview link's
// token is a credential, so it is replaced.
func loggedPath(c *gin.Context) string {
	if strings.HasPrefix(c.FullPath(), "/preview/:token") {
		prefix, rest := splitPath(c.Request.URL.Path, 2)
		if _, after, ok := strings.Cut(rest[1:], "/"); ok {
			return prefix + "/-/" + after
		}
		return prefix + "/-"
	}
	return c.Request.URL.Path
}

// recoverPanic turns a panic in a handler into a 500 envelope, so a bug never
// reaches a user as a dropped connection. http.ErrAbortHandler is re-raised:
// it is net/http's way to abort a response on purpose.
func (s *server) recoverPanic(c *gin.Context) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		s.log.Error("api: handler panicked", "route", c.FullPath(), "method", c.Request.Method,
			"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		if c.Writer.Written() {
			// Headers are gone; the best left is to stop the response.
			c.Abort()
			return
		}
		s.fail(c, errs.E(errs.Other, "internal error"))
	}()
	c.Next()
}
