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
	store rows
	kinds sync.Map // provider id -> backend kind; a provider's kind never changes
	// users holds the default user of a template generation: a
	// generation's document never changes.
	users sync.Map // templateGen -> string
}

// rows reads a workspace's provider and template; *models.Store is one.
type rows interface {
	GetProvider(ctx context.Context, id string) (*wire.Provider, error)
	GetTemplate(ctx context.Context, id string) (*wire.Template, error)
}

// templateGen names one generation of a template.
type templateGen struct {
	id  string
	gen int64
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
	sb := &Sandbox{Workspace: ws, Backend: kind, WholeFS: WholeFS(kind), DefaultUser: s.templateUser(r.Context(), ws)}
	s.h.ServeHTTP(w, r.WithContext(WithSandbox(r.Context(), sb)))
}

// templateUser is the user the template of ws names (spec.backend.user of
// a container, Kubernetes or vm template: its commands run as it by
// default), "" when it names
// none or cannot be read: then E2B's default, DefaultUser, applies. The
// generation ws was made from is read once.
func (s *Server) templateUser(ctx context.Context, ws *wire.Workspace) string {
	key := templateGen{ws.TemplateID, ws.TemplateGeneration}
	if u, ok := s.users.Load(key); ok {
		return u.(string)
	}
	t, err := s.store.GetTemplate(ctx, ws.TemplateID)
	if err != nil {
		return ""
	}
	var doc struct {
		User string `json:"user"`
	}
	_ = json.Unmarshal(t.Backend, &doc)
	user := doc.User
	if t.Generation == ws.TemplateGeneration {
		s.users.Store(key, user)
	}
	return user
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
