// Package temporalserver embeds a Temporal dev server (frontend, history,
// matching and worker services in-process, persisted in one SQLite file) and
// the Temporal web UI in the primer process, for when no external Temporal
// cluster is configured.
package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/temporal"

	"github.com/primerhq/primer/errs"
)

// clusterName names the single local cluster; it is persisted in the
// database's cluster metadata and in the namespace's replication config.
const clusterName = "active"

// Startup limits. The server itself gives its services 60 s (twice the
// membership join time); the rest bounds the checks after it.
const (
	readyTimeout  = 60 * time.Second
	uiReadyTimout = 15 * time.Second
	pollInterval  = 100 * time.Millisecond
)

// Server is a running embedded Temporal server and, unless disabled, its web UI.
type Server struct {
	log      *slog.Logger
	stopping *atomic.Bool // silences the server's logger, see serverLogger
	frontend string
	uiAddr   string
	server   temporal.Server
	ui       *uiserver.Server
	uiDone   chan struct{}

	stopOnce sync.Once
	stopErr  error
}

// Start starts the server on cfg.DataDir and returns once the frontend
// answers and the namespace and its search attributes exist. The database
// and namespace are created at the first start; later starts on the same
// DataDir keep every workflow. Stop must be called to release the ports.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	begin := time.Now()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, errs.E(errs.Canceled, "temporal server: start: %w", err)
	}
	// Fail with a clear error before the server's own listeners would,
	// which the server treats as fatal.
	if err := checkPortFree(cfg.Host, cfg.Port); err != nil {
		return nil, err
	}
	if cfg.UIPort != UIDisabled {
		if err := checkPortFree(cfg.Host, cfg.UIPort); err != nil {
			return nil, err
		}
	}
	sqlCfg, err := prepareDatabase(ctx, cfg)
	if err != nil {
		return nil, err
	}
	conf, err := serverConfig(cfg, sqlCfg)
	if err != nil {
		return nil, err
	}

	s := &Server{
		log:      cfg.Logger,
		stopping: new(atomic.Bool),
		frontend: net.JoinHostPort(cfg.dialHost(), strconv.Itoa(cfg.Port)),
	}
	err = recoverFatal(func() error {
		srv, err := temporal.NewServer(
			temporal.WithConfig(conf),
			temporal.ForServices(temporal.DefaultServices),
			temporal.WithLogger(serverLogger{log: cfg.Logger, stopping: s.stopping}),
			temporal.WithDynamicConfigClient(dynamicConfig()),
			temporal.WithCustomMetricsHandler(metrics.NoopMetricsHandler),
			temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
			temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper {
				return authorization.NewNoopClaimMapper()
			}),
		)
		if err != nil {
			return err
		}
		s.server = srv
		return srv.Start()
	})
	if err != nil {
		if s.server != nil {
			_ = recoverFatal(s.server.Stop)
		}
		return nil, fmt.Errorf("temporal server: start: %w", err)
	}

	if err := ensureNamespace(ctx, s.frontend, cfg); err != nil {
		_ = s.Stop()
		if ctx.Err() != nil {
			return nil, errs.E(errs.Canceled, "temporal server: start: %w", ctx.Err())
		}
		return nil, err
	}
	if cfg.UIPort != UIDisabled {
		if err := s.startUI(ctx, cfg); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	s.log.Info("temporal server started",
		"frontend", s.frontend, "ui", s.uiAddr, "namespace", cfg.Namespace,
		"data_dir", cfg.DataDir, "duration", time.Since(begin).Round(time.Millisecond))
	return s, nil
}

// FrontendAddress is the host:port SDK clients dial.
func (s *Server) FrontendAddress() string { return s.frontend }

// UIAddress is the web UI's base URL (http://host:port), or "" when disabled.
func (s *Server) UIAddress() string { return s.uiAddr }

// Stop stops the web UI, then the server's services. It is safe to call more
// than once; later calls return the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		if s.ui != nil {
			s.ui.Stop()
			<-s.uiDone
		}
		if err := recoverFatal(s.server.Stop); err != nil {
			s.stopErr = fmt.Errorf("temporal server: stop: %w", err)
			return
		}
		s.log.Info("temporal server stopped", "frontend", s.frontend)
	})
	return s.stopErr
}

// serverConfig is the static server config: all four services in-process,
// the frontend on cfg.Host:cfg.Port, the others on free loopback ports.
func serverConfig(cfg Config, sqlCfg *config.SQL) (*config.Config, error) {
	// The internal services and every membership port are picked fresh on
	// each start; ringpop finds its peers through the database, so nothing
	// depends on them staying the same across restarts.
	bindIP := cfg.dialHost()
	ports, err := freePorts(bindIP, 7, cfg.Port, cfg.UIPort, DefaultPort, DefaultUIPort)
	if err != nil {
		return nil, err
	}
	frontend := net.JoinHostPort(cfg.dialHost(), strconv.Itoa(cfg.Port))

	conf := &config.Config{}
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = bindIP
	conf.Persistence = config.Persistence{
		DefaultStore:     "sqlite",
		VisibilityStore:  "sqlite",
		NumHistoryShards: numHistoryShards,
		DataStores:       map[string]config.DataStore{"sqlite": {SQL: sqlCfg}},
	}
	conf.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			// No ClusterID: the server generates one at the first start and
			// keeps the persisted one after, without a mismatch warning.
			clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{
		"frontend": {RPC: config.RPC{GRPCPort: cfg.Port, MembershipPort: ports[0], BindOnIP: cfg.Host}},
		"history":  {RPC: config.RPC{GRPCPort: ports[1], MembershipPort: ports[2], BindOnIP: bindIP}},
		"matching": {RPC: config.RPC{GRPCPort: ports[3], MembershipPort: ports[4], BindOnIP: bindIP}},
		"worker":   {RPC: config.RPC{GRPCPort: ports[5], MembershipPort: ports[6], BindOnIP: bindIP}},
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	// The worker service's system workflows (scheduler, batcher) dial this.
	conf.PublicClient.HostPort = frontend
	return conf, nil
}

// startUI starts the web UI in the background and waits for it to answer.
func (s *Server) startUI(ctx context.Context, cfg Config) (err error) {
	host := cfg.dialHost()
	addr := "http://" + net.JoinHostPort(host, strconv.Itoa(cfg.UIPort))
	defer func() {
		// NewServer panics on a config it cannot use.
		if r := recover(); r != nil {
			err = fmt.Errorf("temporal ui: start: %v", r)
		}
	}()
	ui := uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		Host:                cfg.Host,
		Port:                cfg.UIPort,
		TemporalGRPCAddress: s.frontend,
		EnableUI:            true,
		DefaultNamespace:    cfg.Namespace,
		HideLogs:            true,
		// Served over plain HTTP, so the CSRF cookie cannot be Secure.
		CORS: uiconfig.CORS{CookieInsecure: true},
		// The UI must work offline and not nag about UI releases Primer pins.
		DisableNewsFetch: true,
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Start blocks until Stop. On a listen error it calls the echo
		// logger's Fatal, which exits the process; checkPortFree makes that
		// a lost race rather than the common case.
		if err := ui.Start(); err != nil {
			s.log.Error("temporal ui stopped", "error", err)
		}
	}()
	s.ui, s.uiDone = ui, done

	ctx, cancel := context.WithTimeout(ctx, uiReadyTimout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	err = poll(ctx, func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("healthz: status %d", resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		return errs.E(errs.Unavailable, "temporal ui %s: not ready: %w", addr, err)
	}
	s.uiAddr = addr
	return nil
}

// recoverFatal runs f and turns the panic of serverLogger.Fatal into an error.
// Other panics are not ours to hide.
func recoverFatal(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			fp, ok := r.(fatalPanic)
			if !ok {
				panic(r)
			}
			err = errors.New(fp.msg)
		}
	}()
	return f()
}

// poll calls f until it succeeds or ctx ends, and returns f's last error.
func poll(ctx context.Context, f func() error) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}
