// Package e2e runs Primer end to end: a real `primer serve` (worker.Start)
// with the embedded Temporal server, SQLite (or PostgreSQL), the local and
// worktree backends and their runtimes, driven through the REST client and
// primectl.
package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/cli"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/worker"
)

// primer is one running platform in a test.
type primer struct {
	t   *testing.T
	cfg worker.Config
	srv *worker.Server
	api *client.Client
	key string // the first admin key, from the data dir
	// checked makes a client's answers checked against the OpenAPI
	// document, as hc's are (openapi_check_test.go); p.api and primectl
	// use it, raw requests hc.
	checked client.Option
	hc      *http.Client
	stopped bool
	// logTo, when set (startPrimerLog), also receives the platform's log lines,
	// at debug level, so a test can search everything it logged.
	logTo io.Writer
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

// loopbackFakes is the allowlist every e2e platform starts with: the fake
// model servers (llmtest) and webhook receivers (httptest) the tests start
// listen on 127.0.0.1, on ports chosen after the platform is up. Loopback
// by name (localhost), ::1, link-local and metadata addresses stay
// refused; the attack tests start with withOutboundAllow instead.
const loopbackFakes = "127.0.0.1"

// withOutboundAllow sets the platform's outbound allowlist
// (PRIMER_OUTBOUND_ALLOW) to list instead of loopbackFakes; "" allows no
// internal address at all, as a platform without the setting.
func withOutboundAllow(list string) option {
	return func(c *worker.Config) { c.OutboundAllow = list }
}

func withUI() option {
	return func(c *worker.Config) { c.TemporalUIPort = freePort(nil) }
}

// withOpenAccess serves /v1 without keys, every request the default
// tenant's admin (worker.Config.OpenAccess): for benchmarks that compare
// a call with and without authentication.
func withOpenAccess() option {
	return func(c *worker.Config) { c.OpenAccess = true }
}

// startPrimer starts `primer serve` on free ports in a fresh data dir.
func startPrimer(t *testing.T, opts ...option) *primer {
	t.Helper()
	return startPrimerLog(t, nil, opts...)
}

// startPrimerLog is startPrimer that also copies every log line of the
// platform, debug level included, to logTo (when not nil; it must be safe
// for concurrent writes), so a test can search everything it logged.
func startPrimerLog(t *testing.T, logTo io.Writer, opts ...option) *primer {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: runs without -short")
	}
	p := &primer{t: t, cfg: worker.Config{
		Addr:           "127.0.0.1:" + strconv.Itoa(freePort(t)),
		DataDir:        t.TempDir(),
		TemporalPort:   freePort(t),
		TemporalUIPort: -1,
		ProbeInterval:  200 * time.Millisecond,
		OutboundAllow:  loopbackFakes,
	}}
	for _, o := range opts {
		o(&p.cfg)
	}
	p.logTo = logTo
	// Cleanups run last first: the platform stops, then what its
	// installation left on the engines goes.
	t.Cleanup(p.removeLeftovers)
	t.Cleanup(p.stop)
	addr, tport := p.cfg.Addr, p.cfg.TemporalPort
	for try := 1; ; try++ {
		err := p.tryStart()
		if err == nil {
			break
		}
		// freePort's port is free when it answers, not when the platform
		// binds it: with other tests (or another go test process) opening
		// ports, it may be taken in between. Ports the test chose itself
		// are kept.
		if try < 4 && strings.Contains(err.Error(), "address already in use") && p.cfg.Addr == addr && p.cfg.TemporalPort == tport {
			t.Logf("start primer: %v; again on other ports", err)
			addr, tport = "127.0.0.1:"+strconv.Itoa(freePort(t)), freePort(t)
			p.cfg.Addr, p.cfg.TemporalPort = addr, tport
			continue
		}
		t.Fatalf("start primer: %v", err)
	}
	return p
}

func (p *primer) start() {
	p.t.Helper()
	if err := p.tryStart(); err != nil {
		p.t.Fatalf("start primer: %v", err)
	}
}

// tryStart starts the platform on p.cfg.
func (p *primer) tryStart() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	level := slog.LevelWarn
	if os.Getenv("PRIMER_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	if p.logTo != nil {
		handler = teeHandler{handler, slog.NewTextHandler(p.logTo, &slog.HandlerOptions{Level: slog.LevelDebug})}
	}
	logger := slog.New(handler)
	srv, err := worker.Start(ctx, p.cfg, logger)
	if err != nil {
		return err
	}
	p.srv = srv
	p.stopped = false
	key, err := os.ReadFile(srv.AdminKeyPath())
	if err != nil {
		return fmt.Errorf("read admin key: %w", err)
	}
	p.key = strings.TrimSpace(string(key))
	if p.checked == nil {
		p.hc, p.checked = checkedHTTP(p.t)
	}
	p.api = client.New(srv.URL(), client.WithToken(p.key), p.checked)
	return nil
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

// removeLeftovers removes the containers and volumes the platform's
// installation still has on the engines once it stopped (workspaces a test
// did not delete), and logs their names: CI runs had left running
// workspace containers behind, with nothing to say which test made them.
func (p *primer) removeLeftovers() {
	if p.srv == nil {
		return
	}
	removed, err := containertest.RemoveInstallation(p.srv.Installation())
	if len(removed) > 0 {
		p.t.Logf("removed what this test's platform left on the engines: %s", strings.Join(removed, ", "))
	}
	if err != nil {
		p.t.Logf("remove what this test's platform left on the engines: %v", err)
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
	code = cli.RunWith(ctx, full, in, &out, &errOut, p.checked)
	if code != 0 && errOut.Len() > 0 {
		// Callers that check only the code still show why it failed.
		p.t.Logf("primectl %s: exit %d, stderr:\n%s", strings.Join(args, " "), code, errOut.String())
	}
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

// teeHandler sends each record to both handlers, each by its own level.
type teeHandler struct{ a, b slog.Handler }

func (h teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.a.Enabled(ctx, l) || h.b.Enabled(ctx, l)
}

func (h teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var err error
	if h.a.Enabled(ctx, r.Level) {
		err = h.a.Handle(ctx, r.Clone())
	}
	if h.b.Enabled(ctx, r.Level) {
		err = errors.Join(err, h.b.Handle(ctx, r))
	}
	return err
}

func (h teeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return teeHandler{h.a.WithAttrs(attrs), h.b.WithAttrs(attrs)}
}

func (h teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{h.a.WithGroup(name), h.b.WithGroup(name)}
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	r := make([]byte, n)
	_, _ = rand.Read(r)
	return hex.EncodeToString(r)
}
