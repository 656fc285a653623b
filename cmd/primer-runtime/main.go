// Command primer-runtime is the server that runs inside every workspace: it
// serves file operations and command execution over one authenticated
// WebSocket per client. See runtime/PROTOCOL.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/primerhq/primer/runtime/server"
)

func main() {
	if os.Getpid() == 1 {
		// As a container's entrypoint the runtime is PID 1 and inherits
		// every orphan the workspace's commands leave behind.
		os.Exit(runAsInit())
	}
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "primer-runtime:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("primer-runtime", flag.ContinueOnError)
	listen := fs.String("listen", envOr("PRIMER_RUNTIME_LISTEN", ":7777"), "address to listen on (PRIMER_RUNTIME_LISTEN)")
	root := fs.String("root", envOr("PRIMER_RUNTIME_ROOT", "/workspace"), "workspace directory (PRIMER_RUNTIME_ROOT)")
	debug := fs.Bool("debug", os.Getenv("PRIMER_RUNTIME_DEBUG") != "", "log connections (PRIMER_RUNTIME_DEBUG)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	token := os.Getenv(server.TokenEnv)
	if token == "" {
		return fmt.Errorf("%s is required", server.TokenEnv)
	}
	// Commands must not inherit the token through the runtime's own
	// environment either.
	_ = os.Unsetenv(server.TokenEnv)

	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	s, err := server.New(server.Config{Root: *root, Token: token, Logger: log})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return server.ListenAndServe(ctx, *listen, s)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
