// Command primer runs the Primer platform: `primer serve` starts the API, the
// Temporal worker and, on embedded defaults, the Temporal server and web UI;
// `--role api|worker` runs one half, against an external Temporal cluster.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	// Suite schedules name IANA time zones; the binary carries their data
	// so a minimal image without /usr/share/zoneinfo can load them.
	_ "time/tzdata"

	"github.com/primerhq/primer/api"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/console"
	"github.com/primerhq/primer/worker"
	"github.com/primerhq/primer/worker/temporalserver"
	"github.com/primerhq/primer/workflows"
)

func main() {
	if len(os.Args) >= 2 {
		switch os.Args[1] {
		case "serve":
			os.Exit(serve(os.Args[2:]))
		case "runtime-image":
			os.Exit(runtimeImage(os.Args[2:]))
		case "temporal-setup":
			os.Exit(temporalSetup(os.Args[2:]))
		}
	}
	fmt.Fprintln(os.Stderr, "usage: primer serve [flags]            run the platform (primer serve -h for flags)")
	fmt.Fprintln(os.Stderr, "       primer temporal-setup [flags]   register the namespace and search attributes on an external Temporal cluster")
	fmt.Fprintln(os.Stderr, "       primer runtime-image -o FILE    write the Kubernetes runtime image as a docker-archive")
	os.Exit(2)
}

func serve(args []string) int {
	var cfg worker.Config
	var level, role string
	fs := flag.NewFlagSet("primer serve", flag.ContinueOnError)
	fs.StringVar(&role, "role", env("PRIMER_ROLE", "all"), "all (API and worker), api or worker; api and worker need PRIMER_TEMPORAL_ADDRESS and PostgreSQL (PRIMER_ROLE)")
	fs.StringVar(&cfg.Addr, "addr", env("PRIMER_ADDR", "127.0.0.1:8080"), "API listen address (PRIMER_ADDR)")
	fs.StringVar(&cfg.DataDir, "data-dir", env("PRIMER_DATA_DIR", ""), "data directory (PRIMER_DATA_DIR; default ~/.local/share/primer)")
	fs.StringVar(&cfg.DatabaseURL, "database-url", env("PRIMER_DATABASE_URL", ""), "empty for SQLite in the data dir, or postgres://... (PRIMER_DATABASE_URL)")
	fs.StringVar(&cfg.TemporalAddress, "temporal-address", env("PRIMER_TEMPORAL_ADDRESS", ""), "external Temporal host:port; empty starts the embedded server (PRIMER_TEMPORAL_ADDRESS)")
	fs.StringVar(&cfg.TemporalNamespace, "temporal-namespace", env("PRIMER_TEMPORAL_NAMESPACE", "default"), "Temporal namespace (PRIMER_TEMPORAL_NAMESPACE)")
	fs.IntVar(&cfg.TemporalPort, "temporal-port", envInt("PRIMER_TEMPORAL_PORT", 7233), "embedded Temporal frontend port (PRIMER_TEMPORAL_PORT)")
	fs.IntVar(&cfg.TemporalUIPort, "temporal-ui-port", envInt("PRIMER_TEMPORAL_UI_PORT", 8233), "embedded Temporal web UI port, -1 to disable (PRIMER_TEMPORAL_UI_PORT)")
	fs.DurationVar(&cfg.ProbeInterval, "probe-interval", envDuration("PRIMER_PROBE_INTERVAL", 30*time.Second), "workspace probe interval (PRIMER_PROBE_INTERVAL)")
	fs.DurationVar(&cfg.PoolInterval, "pool-interval", envDuration("PRIMER_POOL_INTERVAL", 10*time.Second), "how often a warm pool is checked when nothing signals it (PRIMER_POOL_INTERVAL)")
	fs.DurationVar(&cfg.ReconcileInterval, "reconcile-interval", envDuration("PRIMER_RECONCILE_INTERVAL", time.Minute), "time between reconciler passes (PRIMER_RECONCILE_INTERVAL)")
	fs.DurationVar(&cfg.OrphanGrace, "orphan-grace", envDuration("PRIMER_ORPHAN_GRACE", 2*time.Minute), "age before the reconciler removes a sandbox no workspace owns (PRIMER_ORPHAN_GRACE)")
	fs.Int64Var(&cfg.MaxFileBytes, "max-file-bytes", int64(envInt("PRIMER_MAX_FILE_BYTES", 64<<20)), "largest file read or written through the API (PRIMER_MAX_FILE_BYTES)")
	fs.IntVar(&cfg.MaxStreamsPerKey, "max-streams-per-key", envInt("PRIMER_MAX_STREAMS_PER_KEY", api.DefaultMaxStreamsPerKey), "event streams one API key may hold open (PRIMER_MAX_STREAMS_PER_KEY)")
	fs.IntVar(&cfg.MaxStreamsPerTenant, "max-streams-per-tenant", envInt("PRIMER_MAX_STREAMS_PER_TENANT", api.DefaultMaxStreamsPerTenant), "event streams one tenant may hold open (PRIMER_MAX_STREAMS_PER_TENANT)")
	fs.IntVar(&cfg.MaxUploadsPerTenant, "max-uploads-per-tenant", envInt("PRIMER_MAX_UPLOADS_PER_TENANT", api.DefaultMaxUploadsPerTenant), "file uploads one tenant may have in flight (PRIMER_MAX_UPLOADS_PER_TENANT)")
	fs.Func("trusted-proxies", "comma-separated CIDRs or addresses of proxies whose X-Forwarded-For is believed; empty trusts none (PRIMER_TRUSTED_PROXIES)", func(v string) error {
		cfg.TrustedProxies = splitList(v)
		return nil
	})
	cfg.TrustedProxies = splitList(env("PRIMER_TRUSTED_PROXIES", ""))
	fs.DurationVar(&cfg.ConsoleSessionTTL, "console-session-ttl", envDuration("PRIMER_CONSOLE_SESSION_TTL", 12*time.Hour), "how long an idle console session lives (PRIMER_CONSOLE_SESSION_TTL)")
	fs.IntVar(&cfg.ConsoleSessionsPerKey, "console-sessions-per-key", envInt("PRIMER_CONSOLE_SESSIONS_PER_KEY", console.DefaultSessionsPerKey), "console sessions one API key may hold; more end the oldest (PRIMER_CONSOLE_SESSIONS_PER_KEY)")
	fs.IntVar(&cfg.ConsoleMaxSessions, "console-max-sessions", envInt("PRIMER_CONSOLE_MAX_SESSIONS", console.DefaultMaxSessions), "console sessions in all; more sign-ins are refused (PRIMER_CONSOLE_MAX_SESSIONS)")
	fs.StringVar(&cfg.RuntimeBinary, "runtime-binary", env("PRIMER_RUNTIME_BINARY", ""), "static primer-runtime copied into containers (PRIMER_RUNTIME_BINARY; default: beside this executable)")
	fs.StringVar(&cfg.OutboundAllow, "outbound-allow", env("PRIMER_OUTBOUND_ALLOW", ""), "internal addresses user-chosen URLs may reach: CIDRs, addresses, host names, with :port or not, comma-separated (PRIMER_OUTBOUND_ALLOW; default none: loopback, link-local, metadata and this host's addresses are refused)")
	fs.StringVar(&cfg.PreviewURL, "preview-url", env("PRIMER_PREVIEW_URL", ""), "base of preview hosts, like https://preview.example.com: links open at {port}-{workspace id}.preview.example.com, whose wildcard DNS must lead here (PRIMER_PREVIEW_URL; default none: links open under /preview/ on this host)")
	fs.StringVar(&level, "log-level", env("PRIMER_LOG_LEVEL", "info"), "debug, info, warn or error (PRIMER_LOG_LEVEL)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg.Role = worker.Role(role)
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		fmt.Fprintf(os.Stderr, "primer: log level %q: %v\n", level, err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := worker.Start(ctx, cfg, logger)
	if err != nil {
		logger.Error("primer serve failed to start", "error", err)
		return 1
	}
	if cfg.Role == worker.RoleWorker {
		fmt.Fprintf(os.Stderr, "primer worker:     %s (/healthz, /readyz, /metrics)\n", srv.URL())
	} else {
		fmt.Fprintf(os.Stderr, "primer API:        %s\n", srv.URL())
	}
	if ui := srv.TemporalUIAddress(); ui != "" {
		fmt.Fprintf(os.Stderr, "Temporal web UI:   %s\n", ui)
	}
	err = srv.Wait(ctx)
	logger.Info("primer stopping")
	if stopErr := srv.Stop(); stopErr != nil {
		logger.Error("primer stop", "error", stopErr)
	}
	if err != nil {
		logger.Error("primer serve", "error", err)
		return 1
	}
	return 0
}

// temporalSetup readies an external Temporal cluster for Primer: it
// registers the namespace when it is missing and adds Primer's search
// attributes. deploy/temporal/cluster.sh runs it; on a cluster of one's own
// it is run once (workers add missing search attributes at every start,
// but leave creating the namespace to its operator).
func temporalSetup(args []string) int {
	fs := flag.NewFlagSet("primer temporal-setup", flag.ContinueOnError)
	addr := fs.String("temporal-address", env("PRIMER_TEMPORAL_ADDRESS", ""), "Temporal frontend host:port (PRIMER_TEMPORAL_ADDRESS; required)")
	ns := fs.String("temporal-namespace", env("PRIMER_TEMPORAL_NAMESPACE", "default"), "namespace (PRIMER_TEMPORAL_NAMESPACE)")
	retention := fs.Duration("retention", 72*time.Hour, "how long closed workflows are kept, when the namespace is created")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *addr == "" || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: primer temporal-setup --temporal-address HOST:PORT [--temporal-namespace NS] [--retention 72h]")
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := temporalserver.PrepareExternal(ctx, *addr, temporalserver.Config{
		Namespace:        *ns,
		Retention:        *retention,
		SearchAttributes: workflows.SearchAttributes(),
		Logger:           logger,
	}, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "primer temporal-setup:", err)
		return 1
	}
	return 0
}

// runtimeImage writes the image the Kubernetes backend's init containers
// run (primer/runtime:<digest> unless --name says otherwise) as a
// docker-archive tarball, for `docker load`, `ctr images import` or a push
// to the cluster's registry.
func runtimeImage(args []string) int {
	fs := flag.NewFlagSet("primer runtime-image", flag.ContinueOnError)
	out := fs.String("o", "", "file to write (required)")
	bin := fs.String("runtime-binary", env("PRIMER_RUNTIME_BINARY", ""), "static primer-runtime to pack (PRIMER_RUNTIME_BINARY; default: beside this executable)")
	name := fs.String("name", "", "image name; default primer/runtime:<first 12 hex digits of the binary's SHA-256>")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: primer runtime-image -o FILE [--name NAME] [--runtime-binary PATH]")
		return 2
	}
	rb := container.FindRuntimeBinary(*bin)
	ref := *name
	if ref == "" {
		var err error
		if ref, err = kubernetes.DefaultRuntimeImage(rb); err != nil {
			fmt.Fprintln(os.Stderr, "primer runtime-image:", err)
			return 1
		}
	}
	tmp := *out + ".tmp"
	f, err := os.Create(tmp)
	if err == nil {
		err = kubernetes.WriteRuntimeImage(f, rb, ref)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, *out)
	}
	if err != nil {
		os.Remove(tmp)
		fmt.Fprintln(os.Stderr, "primer runtime-image:", err)
		return 1
	}
	fmt.Println(ref)
	return 0
}

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	v := env(key, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "primer: %s=%q is not a number\n", key, v)
		os.Exit(2)
	}
	return n
}

func envDuration(key string, def time.Duration) time.Duration {
	v := env(key, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "primer: %s=%q is not a duration (like 30s)\n", key, v)
		os.Exit(2)
	}
	return d
}

// splitList splits a comma-separated setting, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
