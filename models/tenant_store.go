package models

import (
	"context"
	"regexp"

	"github.com/primerhq/primer/errs"
)

// tenantIDPattern is what a tenant id may look like: it appears in search
// attributes, labels and network names.
var tenantIDPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// CreateTenant inserts t; Conflict if the id exists, Invalid for a bad id
// or a negative quota.
func (s *Store) CreateTenant(ctx context.Context, t *Tenant) error {
	if !tenantIDPattern.MatchString(t.ID) {
		return errs.Field("id", "tenant %q: id must be 1-40 lower-case letters, digits and dashes, starting and ending with a letter or digit", t.ID)
	}
	if err := t.Quota.validate(); err != nil {
		return err
	}
	return writeError(ctx, s.w.WithContext(ctx).Create(t).Error, "tenant", t.ID, "create")
}

// GetTenant returns the tenant; NotFound if absent.
func (s *Store) GetTenant(ctx context.Context, id string) (*Tenant, error) {
	var t Tenant
	if err := s.r.WithContext(ctx).Take(&t, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "tenant", id)
	}
	return &t, nil
}

// validate refuses negative limits (zero is no limit).
func (q Quota) validate() error {
	switch {
	case q.MaxWorkspaces < 0:
		return errs.Field("quota.max_workspaces", "quota.max_workspaces: %d is negative (0 is no limit)", q.MaxWorkspaces)
	case q.MaxCPUCores < 0:
		return errs.Field("quota.max_cpu_cores", "quota.max_cpu_cores: %v is negative (0 is no limit)", q.MaxCPUCores)
	case q.MaxMemoryBytes < 0:
		return errs.Field("quota.max_memory_bytes", "quota.max_memory_bytes: %d is negative (0 is no limit)", q.MaxMemoryBytes)
	case q.MaxPools < 0:
		return errs.Field("quota.max_pools", "quota.max_pools: %d is negative (0 is no limit)", q.MaxPools)
	}
	return nil
}
