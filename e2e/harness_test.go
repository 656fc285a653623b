// Package e2e runs Primer end to end: a real `primer serve` (worker.Start)
// with the embedded Temporal server, SQLite (or PostgreSQL), the local and
// worktree backends and their runtimes, driven through the REST client and
// primectl.
package e2e

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/cli"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/worker"
)

// primer is one running platform in a test.
type primer struct {
	t       *testing.T
	cfg     worker.Config
	srv     *worker.Server
	api     *client.Client
	key     string // the first admin key, from the data dir
	stopped bool
}

type option func(*worker.Config)

func withProbeInterval(d time.Duration) option {
	return func(c *worker.Config) { c.ProbeInterval = d }
}

// withPostgres points the platform at a fresh schema in the PostgreSQL of
// PRIMER_TEST_DATABASE_URL, dropped when the test ends (testenv.PostgresURL).
func withPostgres(t *testing.T) option {
	url := testenv.PostgresURL(t)
	return func(c *worker.Config) { c.DatabaseURL = url }
}

func withUI() option {
	return func(c *worker.Config) { c.TemporalUIPort = freePort(nil) }
}

// startPrimer starts `primer serve` on free ports in a fresh data dir.
func startPrimer(t *testing.T, opts ...option) *primer {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: runs without -short")
	}
	cfg := worker.Config{
		Addr:           "127.0.0.1:" + strconv.Itoa(freePort(t)),
		DataDir:        t.TempDir(),
		TemporalPort:   freePort(t),
		TemporalUIPort: -1,
		ProbeInterval:  200 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	p := &primer{t: t, cfg: cfg}
	p.start()
	t.Cleanup(p.stop)
	return p
}

func (p *primer) start() {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	level := slog.LevelWarn
	if os.Getenv("PRIMER_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	srv, err := worker.Start(ctx, p.cfg, logger)
	if err != nil {
		p.t.Fatalf("start primer: %v", err)
	}
	p.srv = srv
	key, err := os.ReadFile(srv.AdminKeyPath())
	if err != nil {
		p.t.Fatalf("read admin key: %v", err)
	}
	p.key = strings.TrimSpace(string(key))
	p.api = client.New(srv.URL(), client.WithToken(p.key))
	p.stopped = false
}

func (p *primer) stop() {
	if p.stopped || p.srv == nil {
		return
	}
	p.stopped = true
	if err := p.srv.Stop(); err != nil {
		p.t.Logf("stop primer: %v", err)
	}
}

// restart stops the platform and starts it again on the same data dir and ports.
func (p *primer) restart() {
	p.t.Helper()
	p.stop()
	p.start()
}

// primectl runs the CLI in-process against this platform.
func (p *primer) primectl(stdin string, args ...string) (stdout, stderr string, code int) {
	p.t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full := append([]string{"--url", p.srv.URL(), "--token", p.key}, args...)
	var in io.Reader = strings.NewReader(stdin)
	code = cli.Run(ctx, full, in, &out, &errOut)
	return out.String(), errOut.String(), code
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		if t != nil {
			t.Fatalf("free port: %v", err)
		}
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// eventually polls cond until it is true or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", d, what)
}
