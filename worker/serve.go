package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/activities/agentrun"
	"github.com/primerhq/primer/activities/evalrun"
	"github.com/primerhq/primer/api"
	"github.com/primerhq/primer/api/e2b/envd"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/configs"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/backend/worktree"
	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/connector/gateway"
	"github.com/primerhq/primer/console"
	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/models"
	rtclient "github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/starter"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker/temporalserver"
	"github.com/primerhq/primer/workflows"
)

// Server is one running `primer serve`: API, worker and, on embedded
// defaults, the Temporal server. Start it with Start and stop it with Stop.
type Server struct {
	cfg    Config
	logger *slog.Logger

	store    *models.Store
	temporal *temporalserver.Server // nil when an external Temporal is used
	client   client.Client
	worker   sdkworker.Worker
	host     *local.Host
	pool     *rtclient.Pool
	backends *backend.Registry // closed at Stop: clients, port-forwards
	http     *http.Server
	console  *console.Console
	listener net.Listener
	serveErr chan error
	metrics  *metrics.Metrics
	connect  *connector.Connector
	// installation is this installation's id (models.Installation).
	installation string

	stopOnce sync.Once
	stopErr  error
}

// Start brings up every part of `primer serve` and returns once the API
// accepts connections. On error, whatever was started is stopped again.
func Start(ctx context.Context, cfg Config, logger *slog.Logger) (_ *Server, err error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	s := &Server{cfg: cfg, logger: logger, serveErr: make(chan error, 1)}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", cfg.DataDir, err)
	}

	s.store, err = models.Open(ctx, models.Config{
		URL:        cfg.DatabaseURL,
		SQLitePath: filepath.Join(cfg.DataDir, "primer.db"),
		Logger:     logger,
	})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := s.store.EnsureDefaults(ctx, cfg.LocalRoot); err != nil {
		return nil, fmt.Errorf("create defaults: %w", err)
	}
	if cfg.Role != RoleWorker {
		// Only a process that serves the API makes the first key: it is
		// the one whose data dir an operator looks in.
		if err := s.ensureAdminKey(ctx); err != nil {
			return nil, err
		}
	}

	hostPort := cfg.TemporalAddress
	if hostPort == "" {
		s.temporal, err = temporalserver.Start(ctx, temporalserver.Config{
			DataDir:          filepath.Join(cfg.DataDir, "temporal"),
			Port:             cfg.TemporalPort,
			UIPort:           cfg.TemporalUIPort,
			Namespace:        cfg.TemporalNamespace,
			SearchAttributes: workflows.SearchAttributes(),
			Logger:           logger,
		})
		if err != nil {
			return nil, fmt.Errorf("start embedded temporal: %w", err)
		}
		hostPort = s.temporal.FrontendAddress()
		logger.Info("embedded temporal started", "frontend", hostPort, "ui", s.temporal.UIAddress())
	} else {
		// Workflows start with Primer's search attributes and upsert them:
		// a cluster Primer did not start gets the missing ones from
		// whichever process starts first, API or worker. The namespace
		// itself is the operator's (retention, archival).
		if err := temporalserver.PrepareExternal(ctx, hostPort, temporalserver.Config{
			Namespace:        cfg.TemporalNamespace,
			SearchAttributes: workflows.SearchAttributes(),
			Logger:           logger,
		}, false); err != nil {
			return nil, err
		}
	}
	s.client, err = client.DialContext(ctx, client.Options{
		HostPort:  hostPort,
		Namespace: cfg.TemporalNamespace,
		Logger:    sdklog.NewStructuredLogger(quiet(logger)),
	})
	if err != nil {
		return nil, fmt.Errorf("connect to temporal at %s: %w", hostPort, err)
	}

	s.installation, err = s.store.InstallationID(ctx)
	if err != nil {
		return nil, fmt.Errorf("installation id: %w", err)
	}
	previews, err := previewURL(cfg.PreviewURL)
	if err != nil {
		return nil, err
	}
	egress, err := outbound.Parse(cfg.OutboundAllow)
	if err != nil {
		return nil, err
	}
	s.host = local.NewHost(logger)
	runtimeBin := container.FindRuntimeBinary(cfg.RuntimeBinary)
	registry := backend.NewRegistry(map[string]backend.Factory{
		wire.BackendLocal:    local.Factory(s.host, logger),
		wire.BackendWorktree: worktree.Factory(s.host, logger),
		wire.BackendContainer: container.Factory(container.Options{
			Runtime:      runtimeBin,
			Logger:       logger,
			Installation: s.installation,
		}),
		wire.BackendKubernetes: kubernetes.Factory(kubernetes.Options{
			Runtime:      runtimeBin,
			Logger:       logger,
			Installation: s.installation,
			SnapshotDir:  filepath.Join(cfg.DataDir, "snapshots", wire.BackendKubernetes),
		}),
		wire.BackendVM: vm.Factory(vm.Options{
			Runtime:      runtimeBin,
			Logger:       logger,
			Installation: s.installation,
		}),
	}).WithConfigs(configs.Providers())
	s.backends = registry
	s.pool = rtclient.NewPool()
	// The model gateway rides every runtime connection this process
	// makes (connector/gateway): the pool asks it on each new one.
	gw := &gateway.Gateway{Store: s.store, Logger: logger, HTTP: egress.HTTPClient(0)}
	s.pool.OnConnect = gw.Attach
	conn := &connector.Connector{Store: s.store, Backends: registry, Pool: s.pool}
	m := metrics.New()
	s.metrics = m
	s.connect = conn
	st := &starter.Starter{
		Temporal:      s.client,
		Store:         s.store,
		Logger:        logger,
		ProbeInterval: cfg.ProbeInterval,
		PoolInterval:  cfg.PoolInterval,
	}
	acts := &activities.Activities{
		Store:     s.store,
		Backends:  registry,
		Connector: conn,
		Metrics:   m,
		Logger:    logger,
		Lifecycle: st,
		Outbound:  egress,
	}
	evalActs := &evalrun.Activities{
		Store: s.store, Backends: registry, Connector: conn, Logger: logger,
		Lifecycle: st, Workspaces: acts, Outbound: egress,
	}
	agentActs := &agentrun.Activities{Store: s.store, Connector: conn, Logger: logger, Outbound: egress}

	// The API role runs no worker: it starts and signals workflows that
	// the workers run, and reaches runtimes itself for exec and files.
	if cfg.Role != RoleAPI {
		s.worker = sdkworker.New(s.client, workflows.TaskQueue, sdkworker.Options{
			MaxConcurrentActivityExecutionSize:      cfg.WorkerConcurrency,
			MaxConcurrentLocalActivityExecutionSize: cfg.WorkerConcurrency,
			MaxConcurrentWorkflowTaskExecutionSize:  cfg.WorkerConcurrency,
			MaxConcurrentWorkflowTaskPollers:        8,
			MaxConcurrentActivityTaskPollers:        8,
			// On SIGTERM, running activities get this long to finish before
			// they are cancelled; what is cut short is retried after its
			// heartbeat timeout, by this worker after a restart or another.
			WorkerStopTimeout: 10 * time.Second,
			// A delete cancels a running provisioning, replacement or reset;
			// the cancellation reaches the activity in the answer to a
			// heartbeat, which the SDK would otherwise hold back for up to 16 s.
			MaxHeartbeatThrottleInterval: activities.CancelCheckInterval,
		})
		workflows.Register(s.worker, acts, evalActs, agentActs)
		if err := s.worker.Start(); err != nil {
			return nil, fmt.Errorf("start worker: %w", err)
		}
		if err := s.startBackground(ctx, st); err != nil {
			return nil, err
		}
	}

	ready := func(ctx context.Context) error {
		_, err := s.client.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}
	var handler http.Handler
	if cfg.Role != RoleWorker {
		handler, err = api.New(api.Config{
			Store:        s.store,
			Temporal:     s.client,
			Starter:      st,
			Connector:    conn,
			Backends:     registry,
			Metrics:      m,
			Logger:       logger,
			MaxFileBytes: cfg.MaxFileBytes,
			OpenAccess:   cfg.OpenAccess,
			Outbound:     egress,
			Ready:        ready,
			Envd:         envd.NewServer(conn, envd.Options{Logger: logger, MaxFileBytes: cfg.MaxFileBytes}),

			MaxStreamsPerKey:    cfg.MaxStreamsPerKey,
			MaxStreamsPerTenant: cfg.MaxStreamsPerTenant,
			MaxUploadsPerTenant: cfg.MaxUploadsPerTenant,
			UploadDir:           filepath.Join(cfg.DataDir, "uploads"),
			TrustedProxies:      cfg.TrustedProxies,
			PreviewURL:          previews,
		})
		if err != nil {
			return nil, fmt.Errorf("build api: %w", err)
		}
		// The web console shares the API's port: /v1 stays the API's.
		handler, s.console, err = console.Mount(console.Config{
			API: handler, Sessions: s.store, TemporalUI: s.TemporalUIAddress(), TemporalNamespace: cfg.TemporalNamespace, Logger: logger,
			SessionTTL: cfg.ConsoleSessionTTL, SessionsPerKey: cfg.ConsoleSessionsPerKey, MaxSessions: cfg.ConsoleMaxSessions, Metrics: m,
			PreviewDomain: previewDomain(previews),
		})
		if err != nil {
			return nil, fmt.Errorf("build console: %w", err)
		}
	} else {
		handler = opsHandler(s.store, m, ready)
	}
	s.listener, err = net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	s.http = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.serveErr <- s.http.Serve(s.listener) }()
	logger.Info("primer serving", "role", cfg.Role, "addr", s.listener.Addr().String(), "data_dir", cfg.DataDir)
	return s, nil
}

// startBackground makes sure the long-lived workflows run: the reconciler
// and one workflow per pool. Starting one that runs already changes nothing,
// so every worker of a cluster may do it.
func (s *Server) startBackground(ctx context.Context, st *starter.Starter) error {
	if err := st.StartReconciler(ctx, workflows.ReconcilerInput{
		Interval: s.cfg.ReconcileInterval,
		Grace:    s.cfg.OrphanGrace,
	}); err != nil {
		return err
	}
	pools, err := s.store.ListPools(ctx, "", "")
	if err != nil {
		return fmt.Errorf("list pools: %w", err)
	}
	for _, p := range pools {
		if err := st.StartPool(ctx, p.ID); err != nil {
			return err
		}
	}
	return nil
}

// URL is the API's base URL, for example http://127.0.0.1:8080.
func (s *Server) URL() string { return "http://" + s.listener.Addr().String() }

// TemporalUIAddress is the embedded web UI's address, or "".
func (s *Server) TemporalUIAddress() string {
	if s.temporal == nil {
		return ""
	}
	return s.temporal.UIAddress()
}

// TemporalClient is the server's Temporal client (for tests and tools).
func (s *Server) TemporalClient() client.Client { return s.client }

// Metrics is the server's metrics (for tests and benchmarks).
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// Runtime returns the pooled runtime client of a workspace (for tests and
// benchmarks that measure the runtime without the API in front).
func (s *Server) Runtime(ctx context.Context, workspaceID string) (*rtclient.Client, error) {
	ws, err := s.store.GetWorkspace(ctx, workspaceID)
	if err != nil {
		return nil, err
	}
	return s.connect.Client(ctx, ws)
}

// Installation is this installation's id, which labels the sandboxes it
// makes on shared engines (for tests and tools).
func (s *Server) Installation() string { return s.installation }

// Store is the server's store (for tests and tools).
func (s *Server) Store() *models.Store { return s.store }

// Wait blocks until ctx is done or the API server fails.
func (s *Server) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-s.serveErr:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// Stop stops every part in reverse order of start. Workspaces and their
// workflows stay as they are: a restart on the same data dir carries on.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		var errList []error
		if s.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errList = append(errList, s.http.Shutdown(ctx))
			cancel()
		}
		if s.console != nil {
			// Its sign-in sweep uses the store, closed below.
			s.console.Close()
		}
		if s.worker != nil {
			s.worker.Stop()
		}
		if s.client != nil {
			s.client.Close()
		}
		if s.pool != nil {
			s.pool.Close()
		}
		if s.backends != nil {
			// After the runtime connections: nothing uses a backend's
			// port-forwards or clients any more.
			errList = append(errList, s.backends.Close())
		}
		if s.host != nil {
			errList = append(errList, s.host.Close())
		}
		if s.temporal != nil {
			errList = append(errList, s.temporal.Stop())
		}
		if s.store != nil {
			errList = append(errList, s.store.Close())
		}
		s.stopErr = errors.Join(errList...)
	})
	return s.stopErr
}

// quiet returns a logger for the Temporal SDK that drops its Info chatter.
func quiet(l *slog.Logger) *slog.Logger {
	return slog.New(levelFilter{l.Handler(), slog.LevelWarn})
}

type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.Handler.Enabled(ctx, l)
}

func (f levelFilter) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFilter{f.Handler.WithAttrs(a), f.min}
}

func (f levelFilter) WithGroup(n string) slog.Handler {
	return levelFilter{f.Handler.WithGroup(n), f.min}
}
