// Package worker wires one `primer serve` process: the store, the Temporal
// client (and, on embedded defaults, the Temporal server and its web UI), the
// Temporal worker with the workspace workflow and its activities, the
// backends, and the Gin API.
package worker

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/primerhq/primer/api"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/internal/outbound"
)

// Role says which parts of Primer one `primer serve` process runs
// (--role, PRIMER_ROLE).
type Role string

// The roles. RoleAPI and RoleWorker split one installation into processes
// scaled apart; they share one PostgreSQL and one external Temporal cluster.
const (
	// RoleAll runs the API and the worker in one process: the default, and
	// the only role the embedded Temporal server and SQLite allow.
	RoleAll Role = "all"
	// RoleAPI runs the Gin API only: it starts and signals workflows and
	// reaches runtimes for exec and files, but runs no workflow or activity.
	RoleAPI Role = "api"
	// RoleWorker runs the Temporal worker (workflows, activities, backends)
	// and the background workflows; on its address it serves only
	// /healthz, /readyz and /metrics.
	RoleWorker Role = "worker"
)

// Config is the configuration of `primer serve`. Each field is a flag and an
// environment variable (see cmd/primer). Zero fields take their defaults in
// Defaults, the one place defaults live.
type Config struct {
	// Role is which parts this process runs (PRIMER_ROLE); default RoleAll.
	Role Role
	// Addr is the API's listen address (PRIMER_ADDR); a worker serves its
	// health and metrics endpoints there.
	Addr string
	// DataDir holds the SQLite database, the embedded Temporal database and
	// local workspaces (PRIMER_DATA_DIR).
	DataDir string
	// DatabaseURL is empty for a SQLite file in DataDir, or postgres://...
	// (PRIMER_DATABASE_URL).
	DatabaseURL string
	// TemporalAddress is an external Temporal frontend host:port; empty starts
	// the embedded server (PRIMER_TEMPORAL_ADDRESS).
	TemporalAddress string
	// TemporalNamespace is the Temporal namespace (PRIMER_TEMPORAL_NAMESPACE).
	TemporalNamespace string
	// TemporalPort and TemporalUIPort are the embedded server's frontend and
	// web UI ports (PRIMER_TEMPORAL_PORT, PRIMER_TEMPORAL_UI_PORT); UI -1 disables it.
	TemporalPort   int
	TemporalUIPort int
	// ProbeInterval is how often each workspace's runtime is probed
	// (PRIMER_PROBE_INTERVAL).
	ProbeInterval time.Duration
	// PoolInterval is how often a pool's workflow checks its pool when
	// nothing signals it (PRIMER_POOL_INTERVAL; default 10s).
	PoolInterval time.Duration
	// ReconcileInterval is the time between reconciler passes
	// (PRIMER_RECONCILE_INTERVAL; default 1m); OrphanGrace is how old a
	// sandbox without a workspace must be before the reconciler removes it
	// (PRIMER_ORPHAN_GRACE; default 2m).
	ReconcileInterval time.Duration
	OrphanGrace       time.Duration
	// LocalRoot is where the reserved local provider keeps its workspaces;
	// default DataDir/workspaces.
	LocalRoot string
	// MaxFileBytes caps a file written or read through the API (PRIMER_MAX_FILE_BYTES).
	MaxFileBytes int64
	// MaxStreamsPerKey, MaxStreamsPerTenant and MaxUploadsPerTenant cap the
	// event streams one key and one tenant hold open and the uploads one
	// tenant has in flight (PRIMER_MAX_STREAMS_PER_KEY,
	// PRIMER_MAX_STREAMS_PER_TENANT, PRIMER_MAX_UPLOADS_PER_TENANT); zero
	// takes the API's defaults.
	MaxStreamsPerKey    int
	MaxStreamsPerTenant int
	MaxUploadsPerTenant int
	// TrustedProxies are the CIDRs or addresses of the proxies in front of
	// the API whose X-Forwarded-For is believed (PRIMER_TRUSTED_PROXIES,
	// comma-separated); empty trusts none (api.Config.TrustedProxies).
	TrustedProxies []string
	// ConsoleSessionTTL, ConsoleSessionsPerKey and ConsoleMaxSessions bound
	// the console's sessions (PRIMER_CONSOLE_SESSION_TTL,
	// PRIMER_CONSOLE_SESSIONS_PER_KEY, PRIMER_CONSOLE_MAX_SESSIONS); zero
	// takes the console's defaults.
	ConsoleSessionTTL     time.Duration
	ConsoleSessionsPerKey int
	ConsoleMaxSessions    int
	// WorkerConcurrency caps concurrent activity and workflow task executions.
	WorkerConcurrency int
	// RuntimeBinary is the static primer-runtime the container backend copies
	// into every container (PRIMER_RUNTIME_BINARY); default: primer-runtime
	// beside the primer executable.
	RuntimeBinary string
	// OpenAccess serves /v1 without API keys, every request acting as the
	// default tenant's admin (api.Config.OpenAccess). Tests and benchmarks
	// only: it has no flag and no environment variable, so no deployment
	// can turn it on.
	OpenAccess bool
	// OutboundAllow allowlists internal addresses for outbound requests to
	// user-chosen URLs and hosts (PRIMER_OUTBOUND_ALLOW; outbound.Parse):
	// loopback, link-local, metadata and this host's own addresses are
	// refused unless listed here.
	OutboundAllow string
	// PreviewURL is the base of preview hosts (PRIMER_PREVIEW_URL, like
	// https://preview.example.com; api.Config.PreviewURL): empty serves
	// preview links under /preview/ on the API's host only.
	PreviewURL string
}

// Defaults fills zero fields with their defaults.
func (c *Config) Defaults() {
	if c.Role == "" {
		c.Role = RoleAll
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.DataDir == "" {
		c.DataDir = defaultDataDir()
	}
	if c.TemporalNamespace == "" {
		c.TemporalNamespace = "default"
	}
	if c.TemporalPort == 0 {
		c.TemporalPort = 7233
	}
	if c.TemporalUIPort == 0 {
		c.TemporalUIPort = 8233
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = 30 * time.Second
	}
	if c.PoolInterval == 0 {
		c.PoolInterval = 10 * time.Second
	}
	if c.ReconcileInterval == 0 {
		c.ReconcileInterval = time.Minute
	}
	if c.OrphanGrace == 0 {
		c.OrphanGrace = 2 * time.Minute
	}
	if c.LocalRoot == "" {
		c.LocalRoot = filepath.Join(c.DataDir, "workspaces")
	}
	if c.MaxFileBytes == 0 {
		c.MaxFileBytes = 64 << 20
	}
	if c.WorkerConcurrency == 0 {
		c.WorkerConcurrency = 500
	}
}

// Validate checks the configuration after Defaults.
func (c *Config) Validate() error {
	switch c.Role {
	case RoleAll, RoleAPI, RoleWorker:
	default:
		return errs.Field("role", "role %q: want all, api or worker", c.Role)
	}
	if c.Role != RoleAll {
		// Each process would start its own embedded server on its own
		// SQLite file: their workflows would never meet. And SQLite is one
		// machine's file, not a database processes on several share.
		if c.TemporalAddress == "" {
			return errs.Field("temporal_address",
				"role %s needs an external Temporal cluster: set PRIMER_TEMPORAL_ADDRESS (deploy/temporal/cluster.sh up starts one); the embedded server serves only --role all", c.Role)
		}
		if !isPostgres(c.DatabaseURL) {
			return errs.Field("database_url",
				"role %s needs PostgreSQL that every process shares: set PRIMER_DATABASE_URL=postgres://...; SQLite serves only --role all", c.Role)
		}
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return errs.Field("addr", "addr %q: %v", c.Addr, err)
	}
	if !filepath.IsAbs(c.DataDir) {
		abs, err := filepath.Abs(c.DataDir)
		if err != nil {
			return errs.Field("data_dir", "data dir %q: %v", c.DataDir, err)
		}
		c.DataDir = abs
	}
	if c.DatabaseURL != "" && !isPostgres(c.DatabaseURL) && !strings.HasPrefix(c.DatabaseURL, "sqlite://") {
		return errs.Field("database_url", "database url must start with postgres://, postgresql:// or sqlite://")
	}
	if c.ProbeInterval < 10*time.Millisecond {
		return errs.Field("probe_interval", "probe interval %s is too short (at least 10ms)", c.ProbeInterval)
	}
	if c.PoolInterval < 10*time.Millisecond || c.ReconcileInterval < 10*time.Millisecond || c.OrphanGrace < 0 {
		return errs.Field("pool_interval", "pool interval %s and reconcile interval %s must be at least 10ms, orphan grace %s not negative",
			c.PoolInterval, c.ReconcileInterval, c.OrphanGrace)
	}
	if c.TemporalPort < 0 || c.TemporalPort > 65535 {
		return errs.Field("temporal_port", "temporal port %d out of range", c.TemporalPort)
	}
	if c.TemporalUIPort < -1 || c.TemporalUIPort > 65535 {
		return errs.Field("temporal_ui_port", "temporal ui port %d out of range", c.TemporalUIPort)
	}
	if _, err := outbound.Parse(c.OutboundAllow); err != nil {
		return err
	}
	if _, err := previewURL(c.PreviewURL); err != nil {
		return err
	}
	if c.MaxFileBytes < 1 {
		return errs.Field("max_file_bytes", "max file bytes must be positive")
	}
	if c.MaxStreamsPerKey < 0 || c.MaxStreamsPerTenant < 0 || c.MaxUploadsPerTenant < 0 {
		return errs.Field("max_streams_per_key", "stream and upload caps must not be negative")
	}
	if c.ConsoleSessionTTL < 0 || c.ConsoleSessionsPerKey < 0 || c.ConsoleMaxSessions < 0 {
		return errs.Field("console_session_ttl", "console session ttl and caps must not be negative")
	}
	if _, err := api.ParseTrustedProxies(c.TrustedProxies); err != nil {
		return err
	}
	return nil
}

// isPostgres says whether url names a PostgreSQL database.
func isPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "primer")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "primer")
	}
	return fmt.Sprintf("%s/primer-data", os.TempDir())
}

// previewURL parses the preview hosts' base: empty is none; otherwise an
// http or https URL with a host name and nothing after it.
func previewURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return nil, errs.Field("preview_url", "preview url %q: want http(s)://DOMAIN[:PORT], like https://preview.example.com", raw)
	}
	return u, nil
}

// previewDomain is the host name of the preview hosts' base, "" for none.
func previewDomain(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Hostname()
}
