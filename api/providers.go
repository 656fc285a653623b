package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// idPattern is what provider and template ids look like: lower-case DNS-ish
// names, so they are safe in paths, labels and Kubernetes object names.
var idPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,126}[a-z0-9])?$`)

// validID checks a user-chosen id; field names the input field.
func validID(field, id string) error {
	if id == "" {
		return errs.Field(field, "%s: required", field)
	}
	if !idPattern.MatchString(id) {
		return errs.Field(field, "%s: %q is not a valid id (lower-case letters, digits, '.', '_', '-', 1-128 characters, starting and ending with a letter or digit)", field, id)
	}
	return nil
}

func list[T any](v []T) wire.Items[T] {
	if v == nil {
		v = []T{}
	}
	return wire.Items[T]{Items: v}
}

// emptyObject stands in for a missing config, so factories always get an object.
var emptyObject = json.RawMessage(`{}`)

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return emptyObject
	}
	return raw
}

// provider checks the spec and returns the row it describes. old is the
// stored provider on update: its shared flag stays unless the spec sets it.
// Only an admin may make a provider shared or of a host backend kind.
func (s *server) provider(c *gin.Context, spec wire.ProviderSpec, old *wire.Provider) (*wire.Provider, error) {
	if spec.Provider == "" {
		return nil, errs.Field("spec.provider", "spec.provider: required (one of %s)", strings.Join(s.types(), ", "))
	}
	if err := hostOnly(c, spec.Provider); err != nil {
		return nil, err
	}
	shared := old != nil && old.Shared
	if spec.Shared != nil {
		if *spec.Shared && !shared && !callerOf(c).admin() {
			return nil, errs.E(errs.Forbidden, "provider %s: only an admin may share a provider", spec.ID)
		}
		shared = *spec.Shared
	}
	config, err := s.providerConfig(c, spec.Provider, orEmptyObject(spec.Config), old)
	if err != nil {
		return nil, err
	}
	p := &wire.Provider{ID: spec.ID, Provider: spec.Provider, Config: config, Shared: shared}
	if err := s.cfg.Backends.Validate(p); err != nil {
		return nil, err
	}
	return p, nil
}

func (s *server) createProvider(c *gin.Context) {
	var spec wire.ProviderSpec
	if err := s.decodeJSON(c, &spec, "spec.", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := validID("spec.id", spec.ID); err != nil {
		s.fail(c, err)
		return
	}
	if spec.ID == wire.LocalProviderID {
		s.fail(c, errs.E(errs.Conflict, "provider %s: already exists (reserved)", spec.ID))
		return
	}
	p, err := s.provider(c, spec, nil)
	if err != nil {
		s.fail(c, err)
		return
	}
	p.TenantID = callerTenant(c)
	ctx := c.Request.Context()
	if err := s.cfg.Store.CreateProvider(ctx, p); err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("provider created", "provider_id", p.ID, "provider", p.Provider)
	c.Header("Location", "/v1/providers/"+p.ID)
	c.JSON(http.StatusCreated, s.providerOut(c, *p))
}

func (s *server) listProviders(c *gin.Context) {
	ps, err := s.cfg.Store.ListProviders(c.Request.Context(), listTenant(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	for i := range ps {
		// The tenant's own and shared ones; the shared ones of others
		// without their config.
		ps[i] = s.providerOut(c, ps[i])
	}
	c.JSON(http.StatusOK, list(ps))
}

func (s *server) getProvider(c *gin.Context) {
	p, err := s.providerOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.providerOut(c, *p))
}

func (s *server) updateProvider(c *gin.Context) {
	id := c.Param("id")
	if id == wire.LocalProviderID {
		s.fail(c, errs.E(errs.Forbidden, "provider %s: reserved; it cannot be changed", id))
		return
	}
	var spec wire.ProviderSpec
	if err := s.decodeJSON(c, &spec, "spec.", false); err != nil {
		s.fail(c, err)
		return
	}
	if err := pathID(c, "spec.id", &spec.ID); err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	old, err := s.ownProviderOf(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := sharedReadOnly(c, old, "change"); err != nil {
		s.fail(c, err)
		return
	}
	p, err := s.provider(c, spec, old)
	if err != nil {
		s.fail(c, err)
		return
	}
	if old.Provider != p.Provider {
		// Templates carry a backend document of the provider's type;
		// switching the type under them would make every one invalid.
		// Every tenant's count: a shared provider's templates may be
		// another tenant's.
		ts, err := s.cfg.Store.ListTemplates(ctx, id, "")
		if err != nil {
			s.fail(c, err)
			return
		}
		if len(ts) > 0 {
			s.fail(c, errs.E(errs.Conflict, "provider %s: cannot change type from %s to %s while %d templates use it",
				id, old.Provider, p.Provider, len(ts)))
			return
		}
	}
	if err := s.cfg.Store.UpdateProvider(ctx, p); err != nil {
		s.fail(c, err)
		return
	}
	p, err = s.cfg.Store.GetProvider(ctx, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("provider updated", "provider_id", p.ID, "provider", p.Provider)
	c.JSON(http.StatusOK, s.providerOut(c, *p))
}

func (s *server) deleteProvider(c *gin.Context) {
	id := c.Param("id")
	if id == wire.LocalProviderID {
		s.fail(c, errs.E(errs.Forbidden, "provider %s: reserved; it cannot be deleted", id))
		return
	}
	old, err := s.ownProviderOf(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := sharedReadOnly(c, old, "delete"); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cfg.Store.DeleteProvider(c.Request.Context(), id); err != nil {
		s.fail(c, err)
		return
	}
	// Its backend's clients and port-forwards go with it.
	if err := s.cfg.Backends.Drop(id); err != nil {
		s.log.Warn("provider: close backend", "provider_id", id, "error", err.Error())
	}
	s.log.Info("provider deleted", "provider_id", id)
	c.Status(http.StatusNoContent)
}

// types returns the known provider types, sorted for stable messages.
func (s *server) types() []string {
	t := s.cfg.Backends.Types()
	slices.Sort(t)
	return t
}
