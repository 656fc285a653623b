package envd

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Server is the in-sandbox API as the /e2b/envd router calls it (package
// e2b's Envd): Version for the REST answers, ServeEnvd for a request whose
// workspace the router resolved and authorised.
type Server struct {
	h     http.Handler
	store providers
	kinds sync.Map // provider id -> backend kind; a provider's kind never changes
}

// providers reads a workspace's provider; *models.Store is one.
type providers interface {
	GetProvider(ctx context.Context, id string) (*wire.Provider, error)
}

// NewServer returns the Server over conn's runtimes.
func NewServer(conn *connector.Connector, opts Options) *Server {
	return &Server{h: New(conn, opts), store: conn.Store}
}

// Version is the envd version sandboxes report.
func (s *Server) Version() string { return Version }

// ServeEnvd serves r for workspace ws.
func (s *Server) ServeEnvd(w http.ResponseWriter, r *http.Request, ws *wire.Workspace) {
	kind, err := s.kindOf(r.Context(), ws.ProviderID)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]any{"code": "internal", "message": err.Error()})
		return
	}
	sb := &Sandbox{Workspace: ws, Backend: kind, WholeFS: WholeFS(kind)}
	s.h.ServeHTTP(w, r.WithContext(WithSandbox(r.Context(), sb)))
}

// WholeFS says whether a backend kind's runtime owns its sandbox's whole
// file system (--fs=whole): every kind but the two that run on Primer's
// own machine.
func WholeFS(kind string) bool {
	return kind != wire.BackendLocal && kind != wire.BackendWorktree
}

func (s *Server) kindOf(ctx context.Context, providerID string) (string, error) {
	if k, ok := s.kinds.Load(providerID); ok {
		return k.(string), nil
	}
	p, err := s.store.GetProvider(ctx, providerID)
	if err != nil {
		return "", errs.Within("envd: provider "+providerID, err)
	}
	s.kinds.Store(providerID, p.Provider)
	return p.Provider, nil
}
