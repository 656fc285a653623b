package models

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// tenantIDPattern is what a tenant id may look like: it appears in search
// attributes, labels and network names.
var tenantIDPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// CreateTenant inserts t; Conflict if the id exists, Invalid for a bad id
// or a negative quota.
func (s *Store) CreateTenant(ctx context.Context, t *wire.Tenant) error {
	if !tenantIDPattern.MatchString(t.ID) {
		return errs.Field("id", "tenant %q: id must be 1-40 lower-case letters, digits and dashes, starting and ending with a letter or digit", t.ID)
	}
	if err := validateQuota(t.Quota); err != nil {
		return err
	}
	return writeError(ctx, s.w.WithContext(ctx).Create(t).Error, "tenant", t.ID, "create")
}

// GetTenant returns the tenant; NotFound if absent.
func (s *Store) GetTenant(ctx context.Context, id string) (*wire.Tenant, error) {
	var t wire.Tenant
	if err := s.r.WithContext(ctx).Take(&t, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "tenant", id)
	}
	return &t, nil
}

// validate refuses negative limits (zero is no limit).
func validateQuota(q wire.Quota) error {
	switch {
	case q.MaxWorkspaces < 0:
		return errs.Field("quota.max_workspaces", "quota.max_workspaces: %d is negative (0 is no limit)", q.MaxWorkspaces)
	case q.MaxCPUCores < 0:
		return errs.Field("quota.max_cpu_cores", "quota.max_cpu_cores: %v is negative (0 is no limit)", q.MaxCPUCores)
	case q.MaxMemoryBytes < 0:
		return errs.Field("quota.max_memory_bytes", "quota.max_memory_bytes: %d is negative (0 is no limit)", q.MaxMemoryBytes)
	case q.MaxPools < 0:
		return errs.Field("quota.max_pools", "quota.max_pools: %d is negative (0 is no limit)", q.MaxPools)
	case q.MaxSnapshotBytes < 0:
		return errs.Field("quota.max_snapshot_bytes", "quota.max_snapshot_bytes: %d is negative (0 is no limit)", q.MaxSnapshotBytes)
	case q.MaxPaused < 0:
		return errs.Field("quota.max_paused", "quota.max_paused: %d is negative (0 is no limit)", q.MaxPaused)
	case q.MaxModelTokensPerDay < 0:
		return errs.Field("quota.max_model_tokens_per_day", "quota.max_model_tokens_per_day: %d is negative (0 is no limit)", q.MaxModelTokensPerDay)
	case q.MaxModelRequestsPerDay < 0:
		return errs.Field("quota.max_model_requests_per_day", "quota.max_model_requests_per_day: %d is negative (0 is no limit)", q.MaxModelRequestsPerDay)
	}
	return nil
}

// ListTenants returns every tenant, by id.
func (s *Store) ListTenants(ctx context.Context) ([]wire.Tenant, error) {
	ts := []wire.Tenant{}
	if err := s.r.WithContext(ctx).Order("id").Find(&ts).Error; err != nil {
		return nil, dbError(ctx, err, "tenants: list")
	}
	return ts, nil
}

// UpdateTenant replaces the description and quota of tenant t.ID and
// returns the stored row; NotFound if absent, Invalid for a negative quota.
// Lowering a quota below the current use is allowed: it only stops new
// creates.
func (s *Store) UpdateTenant(ctx context.Context, t *wire.Tenant) (*wire.Tenant, error) {
	if err := validateQuota(t.Quota); err != nil {
		return nil, err
	}
	res := s.w.WithContext(ctx).Model(&wire.Tenant{}).Where("id = ?", t.ID).Updates(map[string]any{
		"description":                      t.Description,
		"quota_max_workspaces":             t.Quota.MaxWorkspaces,
		"quota_max_cpu_cores":              t.Quota.MaxCPUCores,
		"quota_max_memory_bytes":           t.Quota.MaxMemoryBytes,
		"quota_max_pools":                  t.Quota.MaxPools,
		"quota_max_snapshot_bytes":         t.Quota.MaxSnapshotBytes,
		"quota_max_paused":                 t.Quota.MaxPaused,
		"quota_max_model_tokens_per_day":   t.Quota.MaxModelTokensPerDay,
		"quota_max_model_requests_per_day": t.Quota.MaxModelRequestsPerDay,
		"updated_at":                       storedTime(time.Now()),
	})
	if res.Error != nil {
		return nil, writeError(ctx, res.Error, "tenant", t.ID, "update")
	}
	if res.RowsAffected == 0 {
		return nil, notFound("tenant", t.ID)
	}
	return s.GetTenant(ctx, t.ID)
}

// tenantRows is what DeleteTenant does with one kind of row a tenant owns
// (a model with a TenantID): Block selects the rows that refuse the delete
// (Conflict naming them: live resources, which their own DELETE removes;
// "" refuses on any row), Remove says the rest go with the tenant (history
// no route deletes), and Keep says they stay (the audit log, which never
// loses an entry; a tenant made again with the same id does not see the
// old one's entries, ListAudit's Since). Every model with a TenantID has
// one entry: TestTenantOwnedRowsAllRuled enumerates them.
type tenantRows struct {
	model  any
	name   string
	block  string
	remove bool
	keep   bool
}

// blockNone is the Block of rows that never refuse a tenant's delete.
const blockNone = "1 = 0"

// tenantOwned lists, in the order they are removed, the rows a tenant can
// own. Transcript entries carry no tenant: they go with their session runs.
var tenantOwned = []tenantRows{
	{model: &wire.Provider{}, name: "providers"},
	{model: &wire.Template{}, name: "templates"},
	{model: &wire.Pool{}, name: "pools"},
	{model: &wire.Workspace{}, name: "workspaces"},
	// A snapshot holds a capture on a backend: deleting it removes that,
	// so the tenant's delete waits for its snapshots' deletes.
	{model: &wire.Snapshot{}, name: "snapshots"},
	{model: &wire.Suite{}, name: "suites"},
	{model: &wire.Run{}, name: "runs"},
	{model: &wire.LLMProvider{}, name: "llm providers"},
	{model: &wire.Agent{}, name: "agents"},
	{model: &wire.SessionRun{}, name: "running session runs", block: "status <> 'ended'", remove: true},
	{model: &wire.Session{}, name: "open sessions", block: "status <> 'ended'", remove: true},
	{model: &wire.Event{}, name: "events", block: blockNone, remove: true},
	{model: &ConsoleSession{}, name: "console sessions", block: blockNone, remove: true},
	// Preview links go with their workspace; any left are dead.
	{model: &wire.Preview{}, name: "preview links", block: blockNone, remove: true},
	// Model gateway usage is the tenant's history of calls: it goes with
	// the tenant, so one made again with the same id has spent nothing.
	{model: &GatewayUsage{}, name: "model gateway usage", block: blockNone, remove: true},
	{model: &wire.APIKey{}, name: "active api keys (revoke them first)", block: "revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)", remove: true},
	{model: &wire.AuditEntry{}, name: "audit entries", keep: true},
}

// DeleteTenant deletes the tenant id. The default tenant cannot go
// (Forbidden); a tenant that still owns a live resource (a provider,
// template, pool, workspace, suite, run, LLM provider, agent, open session
// or running session run) or an active key (not revoked, not expired) is
// Conflict, naming what is left. Otherwise its history goes with it: its
// events, ended sessions with their agent runs and transcripts, and its
// revoked and expired keys, so a tenant made again with the same id starts
// empty. Its audit entries stay. The tenant row is locked first, so a
// create that locks it to check its quota cannot slip a row in between the
// check and the delete.
func (s *Store) DeleteTenant(ctx context.Context, id string) error {
	if id == wire.DefaultTenantID {
		return errs.E(errs.Forbidden, "tenant %s: the default tenant cannot be deleted", id)
	}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var t wire.Tenant
		if err := tx.Clauses(forUpdate).Take(&t, "id = ?", id).Error; err != nil {
			return readError(ctx, err, "tenant", id)
		}
		now := storedTime(time.Now())
		var left []string
		for _, o := range tenantOwned {
			if o.keep || o.block == blockNone {
				continue
			}
			q := tx.Model(o.model).Where("tenant_id = ?", id)
			switch {
			case strings.Contains(o.block, "?"):
				q = q.Where(o.block, now)
			case o.block != "":
				q = q.Where(o.block)
			}
			var n int64
			if err := q.Count(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				left = append(left, fmt.Sprintf("%d %s", n, o.name))
			}
		}
		if len(left) > 0 {
			return errs.E(errs.Conflict, "tenant %s: still owns %s", id, strings.Join(left, ", "))
		}
		if err := tx.Where("session_id IN (?)", tx.Model(&wire.SessionRun{}).Select("session_id").Where("tenant_id = ?", id)).
			Delete(&wire.TranscriptEntry{}).Error; err != nil {
			return err
		}
		for _, o := range tenantOwned {
			if o.remove {
				if err := tx.Where("tenant_id = ?", id).Delete(o.model).Error; err != nil {
					return err
				}
			}
		}
		return tx.Delete(&wire.Tenant{}, "id = ?", id).Error
	})
	return writeError(ctx, err, "tenant", id, "delete")
}
