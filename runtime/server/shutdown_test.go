package server_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// TestShutdownStopsTheRuntime: a runtime serving as its own process
// (ListenAndServe, as primer-runtime does) takes the shutdown op as it
// takes SIGTERM: it answers, closes the connection, kills the processes
// it started, stops listening and returns cleanly.
func TestShutdownStopsTheRuntime(t *testing.T) {
	ctx := runtimetest.Ctx(t)
	addrs := make(chan string, 1)
	s, err := server.New(server.Config{Root: filepath.Join(t.TempDir(), "ws"), Token: runtimetest.Token, Logger: slog.New(listenAddr{addrs})})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	// Not the test's context: only the shutdown op may stop it.
	go func() { served <- server.ListenAndServe(context.Background(), "127.0.0.1:0", s) }()
	url := "ws://" + <-addrs
	c, err := client.Dial(ctx, url, runtimetest.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.ProcStart(ctx, client.ProcRequest{Args: []string{"sleep", "600"}})
	if err != nil {
		t.Fatal(err)
	}

	if err := c.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown = %v, want an answer", err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("ListenAndServe after shutdown = %v, want a clean stop", err)
		}
	case <-ctx.Done():
		t.Fatal("the runtime still serves after shutdown")
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("the connection stayed open after shutdown")
	}
	if err := syscall.Kill(p.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d started before the shutdown: kill(0) = %v, want gone", p.PID, err)
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if c2, err := client.Dial(dctx, url, runtimetest.Token); err == nil {
		c2.Close()
		t.Fatal("a new connection was accepted after shutdown")
	}
}

// TestShutdownRefusedWhenEmbedded: a runtime served inside another
// process (the local backend's) has no process of its own to stop: it
// refuses, and serves on.
func TestShutdownRefusedWhenEmbedded(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	if err := e.Client.Shutdown(ctx); !errs.Is(err, errs.Invalid) {
		t.Fatalf("shutdown of an embedded runtime = %v, want invalid", err)
	}
	if err := e.Client.Ping(ctx); err != nil {
		t.Fatalf("ping after the refused shutdown: %v", err)
	}
}

// listenAddr is a log handler that sends the address of the runtime's
// "runtime listening" record.
type listenAddr struct{ addrs chan<- string }

func (listenAddr) Enabled(context.Context, slog.Level) bool { return true }
func (h listenAddr) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h listenAddr) WithGroup(string) slog.Handler          { return h }
func (h listenAddr) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "runtime listening" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "addr" {
			h.addrs <- a.Value.String()
			return false
		}
		return true
	})
	return nil
}
