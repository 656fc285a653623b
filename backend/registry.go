package backend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Factory builds a backend from a provider's config document. It validates
// the config and returns an Invalid error naming the field at fault.
type Factory func(config json.RawMessage) (Backend, error)

// Registry builds and caches one Backend per provider, rebuilding it when the
// provider's config changes. It is safe for concurrent use.
type Registry struct {
	factories map[string]Factory

	// configs are the provider config types by backend type, for the
	// access rules (access.go).
	configs map[string]reflect.Type

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

// WithConfigs records the provider config type of each backend type (a
// value of it: container.ProviderConfig{}), so that the API can check the
// access rules of a provider document (DecodeConfig, AdminSettings). It
// returns r.
func (r *Registry) WithConfigs(configs map[string]any) *Registry {
	r.configs = map[string]reflect.Type{}
	for kind, c := range configs {
		t := reflect.TypeOf(c)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		r.configs[kind] = t
	}
	return r
}

// ConfigTypes returns the provider config types by backend type.
func (r *Registry) ConfigTypes() map[string]reflect.Type {
	return maps.Clone(r.configs)
}

// DecodeConfig decodes a provider config of backend type kind into a new
// value of its config type (a pointer), strictly and without defaults or
// side effects: nothing is read from the host. ok is false when the
// registry knows no config type for kind.
func (r *Registry) DecodeConfig(kind string, config json.RawMessage) (v any, ok bool, err error) {
	t, ok := r.configs[kind]
	if !ok {
		return nil, false, nil
	}
	p := reflect.New(t).Interface()
	if err := DecodeStrict(config, "spec.config", p); err != nil {
		return nil, true, err
	}
	return p, true, nil
}

// Validate checks that a provider row names a known backend type with a valid
// config, without caching anything: the backend built to check it is closed
// again (see Closer).
func (r *Registry) Validate(p *wire.Provider) error {
	f, ok := r.factories[p.Provider]
	if !ok {
		return errs.Field("spec.provider", "unknown provider type %q", p.Provider)
	}
	b, err := f(p.Config)
	if err != nil {
		return err
	}
	if err := closeBackend(b); err != nil {
		return fmt.Errorf("provider %s: close the backend built to validate it: %w", p.ID, err)
	}
	return nil
}

// For returns the backend for a provider row. When the provider's config
// changed since the cached backend was built, the new one replaces it and
// the old one is closed (see Closer); calls still running on it may fail,
// as they would against a provider that moved.
func (r *Registry) For(p *wire.Provider) (Backend, error) {
	r.mu.Lock()
	old, ok := r.cache[p.ID]
	if ok && bytes.Equal(old.config, p.Config) {
		r.mu.Unlock()
		return old.backend, nil
	}
	f, fok := r.factories[p.Provider]
	if !fok {
		r.mu.Unlock()
		return nil, errs.E(errs.Invalid, "provider %s: unknown provider type %q", p.ID, p.Provider)
	}
	b, err := f(p.Config)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	r.cache[p.ID] = cached{config: append(json.RawMessage(nil), p.Config...), backend: b}
	r.mu.Unlock()
	if ok {
		// Outside the lock: closing stops port-forwards and connections,
		// which must not hold up every other provider's callers.
		_ = closeBackend(old.backend)
	}
	return b, nil
}

// Drop forgets the backend of a deleted provider and closes it (see
// Closer). Dropping a provider with no backend built is not an error.
func (r *Registry) Drop(providerID string) error {
	r.mu.Lock()
	c, ok := r.cache[providerID]
	delete(r.cache, providerID)
	r.mu.Unlock()
	if !ok {
		return nil
	}
	if err := closeBackend(c.backend); err != nil {
		return fmt.Errorf("provider %s: close backend: %w", providerID, err)
	}
	return nil
}

// Close closes every backend the registry built and forgets them, at
// shutdown. A For after Close builds afresh.
func (r *Registry) Close() error {
	r.mu.Lock()
	cache := r.cache
	r.cache = map[string]cached{}
	r.mu.Unlock()
	var errList []error
	for id, c := range cache {
		if err := closeBackend(c.backend); err != nil {
			errList = append(errList, fmt.Errorf("provider %s: close backend: %w", id, err))
		}
	}
	return errors.Join(errList...)
}

// Types returns the backend types the registry knows.
func (r *Registry) Types() []string {
	out := make([]string, 0, len(r.factories))
	for t := range r.factories {
		out = append(out, t)
	}
	return out
}
