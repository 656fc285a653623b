// Package runtimetest starts a runtime server on a loopback listener for
// tests of the server, the client and their users.
package runtimetest

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/server"
)

// Token is the bearer token of servers started by Start.
const Token = "test-token-0123456789"

// Env is a running server and a client connected to it.
type Env struct {
	// Dir is a temporary directory holding Root; files beside Root let
	// tests prove nothing outside the workspace changed.
	Dir    string
	Root   string
	URL    string
	Server *server.Server
	HTTP   *httptest.Server
	Client *client.Client
}

// Start runs a server rooted at a fresh directory with cfg (Root, Token and
// Logger are filled in) and dials it. Everything stops when the test ends.
func Start(tb testing.TB, cfg server.Config) *Env {
	tb.Helper()
	return StartIn(tb, tb.TempDir(), cfg)
}

// StartIn is Start with the workspace at dir/ws, which may hold what an
// earlier server left: a test restarts the runtime by calling it again with
// the first Env's Dir.
func StartIn(tb testing.TB, dir string, cfg server.Config) *Env {
	tb.Helper()
	cfg.Root = filepath.Join(dir, "ws")
	if cfg.Token == "" {
		cfg.Token = Token
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := server.New(cfg)
	if err != nil {
		tb.Fatalf("server.New: %v", err)
	}
	hs := httptest.NewServer(s)
	e := &Env{Dir: dir, Root: cfg.Root, Server: s, HTTP: hs, URL: "ws" + strings.TrimPrefix(hs.URL, "http")}
	tb.Cleanup(func() {
		if e.Client != nil {
			_ = e.Client.Close()
		}
		_ = s.Close()
		hs.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, e.URL, cfg.Token)
	if err != nil {
		tb.Fatalf("client.Dial: %v", err)
	}
	e.Client = c
	return e
}

// Ctx returns a context that ends with the test or after a minute.
func Ctx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// WriteHost writes a file on the host, relative to Dir.
func (e *Env) WriteHost(tb testing.TB, rel, data string) {
	tb.Helper()
	p := filepath.Join(e.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		tb.Fatal(err)
	}
}
