// Package server is primer-runtime's WebSocket server: file operations and
// command execution confined to one workspace root.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/primerhq/primer/errs"
)

// Config configures a Server.
type Config struct {
	// Root is the workspace directory; every path is relative to it.
	Root string
	// Token is the bearer token every connection must present.
	Token string
	// Env is the environment every command starts with.
	Env map[string]string
	// Logger receives connection and error logs; nil discards them.
	Logger *slog.Logger
	// MaxFileBytes limits read and write sizes; zero means
	// protocol.DefaultMaxFileBytes.
	MaxFileBytes int64
}

// Server serves the runtime protocol over WebSocket.
type Server struct {
	cfg Config
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	return nil, errs.E(errs.Other, "runtime server: not implemented yet")
}

// ServeHTTP accepts a WebSocket on any path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not implemented", http.StatusNotImplemented)
}

// Close closes every connection and kills running processes.
func (s *Server) Close() error { return nil }

// ListenAndServe serves s on addr until ctx ends.
func ListenAndServe(ctx context.Context, addr string, s *Server) error {
	return errors.New("not implemented")
}
