package backend

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
)

// Factory builds a backend from a provider's config document. It validates
// the config and returns an Invalid error naming the field at fault.
type Factory func(config json.RawMessage) (Backend, error)

// Registry builds and caches one Backend per provider, rebuilding it when the
// provider's config changes. It is safe for concurrent use.
type Registry struct {
	factories map[string]Factory

	mu    sync.Mutex
	cache map[string]cached // provider id -> backend
}

type cached struct {
	config  json.RawMessage
	backend Backend
}

// NewRegistry returns a registry that knows the given backend types, keyed by
// the provider's `provider` field (local, worktree, container, kubernetes).
func NewRegistry(factories map[string]Factory) *Registry {
	return &Registry{factories: factories, cache: map[string]cached{}}
}

// Validate checks that a provider row names a known backend type with a valid
// config, without caching anything.
func (r *Registry) Validate(p *models.Provider) error {
	f, ok := r.factories[p.Provider]
	if !ok {
		return errs.Field("spec.provider", "unknown provider type %q", p.Provider)
	}
	_, err := f(p.Config)
	return err
}

// For returns the backend for a provider row.
func (r *Registry) For(p *models.Provider) (Backend, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.cache[p.ID]; ok && bytes.Equal(c.config, p.Config) {
		return c.backend, nil
	}
	f, ok := r.factories[p.Provider]
	if !ok {
		return nil, errs.E(errs.Invalid, "provider %s: unknown provider type %q", p.ID, p.Provider)
	}
	b, err := f(p.Config)
	if err != nil {
		return nil, err
	}
	r.cache[p.ID] = cached{config: append(json.RawMessage(nil), p.Config...), backend: b}
	return b, nil
}

// Types returns the backend types the registry knows.
func (r *Registry) Types() []string {
	out := make([]string, 0, len(r.factories))
	for t := range r.factories {
		out = append(out, t)
	}
	return out
}
