package api

import (
	"encoding/json"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// providerConfig applies the access rules of provider config fields
// (backend/access.go) to a provider document of backend type kind and
// returns the config to store. Only an admin may set a field whose effect
// lands on the platform's host (a path, an environment variable, a
// command, the platform's own credentials): anyone else gets a 403 naming
// the field, before anything reads the host (validating a vm provider
// reads its key file). Inline secrets sent as Redacted keep old's values
// (old: the stored provider on update), unless an endpoint changed: then
// they are dropped, so a stored credential never follows the provider to
// an endpoint its sender did not give it for.
func (s *server) providerConfig(c *gin.Context, kind string, raw json.RawMessage, old *wire.Provider) (json.RawMessage, error) {
	admin := callerOf(c).admin()
	cfg, known, err := s.cfg.Backends.DecodeConfig(kind, raw)
	switch {
	case !known && !slices.Contains(s.cfg.Backends.Types(), kind):
		return raw, nil // the registry's Validate names the unknown type
	case !known && !admin:
		return nil, errs.E(errs.Forbidden, "spec.provider: provider type %s has no access rules; only an admin may create one", kind)
	case !known:
		return raw, nil
	case err != nil:
		return nil, err
	}
	if err := adminOnly(c, cfg, "spec.config"); err != nil {
		return nil, err
	}
	if !admin {
		if err := s.providerAddrs(c, cfg); err != nil {
			return nil, err
		}
	}
	var stored any
	if old != nil && old.Provider == kind {
		if v, _, err := s.cfg.Backends.DecodeConfig(kind, old.Config); err == nil {
			stored = v
		}
	}
	changed, err := backend.RestoreSecrets(cfg, stored, "spec.config")
	if err != nil || !changed {
		return raw, err
	}
	// The placeholders are replaced: store the document as decoded.
	return json.Marshal(cfg)
}

// providerOut is p as the caller may see it (providerView) with every
// inline secret of its config Redacted. A stored config that no longer
// decodes is left out rather than answered in clear.
func (s *server) providerOut(c *gin.Context, p wire.Provider) wire.Provider {
	p = providerView(c, p)
	if len(p.Config) == 0 {
		return p
	}
	cfg, known, err := s.cfg.Backends.DecodeConfig(p.Provider, p.Config)
	switch {
	case !known:
		return p
	case err != nil:
		p.Config = nil
		return p
	}
	if backend.RedactSecrets(cfg) {
		doc, err := json.Marshal(cfg)
		if err != nil {
			doc = nil
		}
		p.Config = doc
	}
	return p
}

// sharedReadOnly refuses a caller that is not an admin a change to a
// shared provider, even of its own tenant (an admin's providers live in
// the default tenant, whose members must not repoint them): other tenants'
// env values and runtime tokens go wherever it points.
func sharedReadOnly(c *gin.Context, p *wire.Provider, verb string) error {
	if p.Shared && !callerOf(c).admin() {
		return errs.E(errs.Forbidden, "provider %s: shared; only an admin may %s it", p.ID, verb)
	}
	return nil
}

// adminOnly refuses a caller that is not an admin a document v (a pointer
// to a struct with access tags) that sets an admin-only field, naming it
// under prefix.
func adminOnly(c *gin.Context, v any, prefix string) error {
	if callerOf(c).admin() {
		return nil
	}
	if set := backend.AdminSettings(v, prefix); len(set) > 0 {
		return set[0].Err()
	}
	return nil
}

// providerAddrs checks the addresses a non-admin's provider config makes
// the platform dial (a container engine's tcp host and connect_host, vm
// hosts and the jump host) against the outbound policy: loopback,
// link-local, metadata and the platform's own addresses are refused unless
// an admin allowlisted them. An admin's providers are the host's own.
func (s *server) providerAddrs(c *gin.Context, cfg any) error {
	addrs := backend.Addresses(cfg, "spec.config")
	for _, f := range slices.Sorted(maps.Keys(addrs)) {
		a := strings.TrimPrefix(addrs[f], "tcp://")
		if _, _, err := net.SplitHostPort(a); err != nil {
			// No port (a vm host on 22, a bare connect host): judge the
			// host; an allowlist entry with a port does not match it.
			a = net.JoinHostPort(strings.Trim(a, "[]"), "0")
		}
		if err := s.cfg.Outbound.CheckAddr(c.Request.Context(), f, a); err != nil {
			return err
		}
	}
	return nil
}
