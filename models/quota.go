package models

import (
	"context"
	"math"
	"strconv"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// TenantUsage returns what tenantID holds now: its workspaces (every row,
// deleting and terminating ones included, until the row is gone), the sums
// of their CPU and memory limits, and its pools. An unknown tenant holds
// nothing; the caller decides whether that is NotFound.
func (s *Store) TenantUsage(ctx context.Context, tenantID string) (wire.Usage, error) {
	u, err := usageOf(s.r.WithContext(ctx), tenantOrDefault(tenantID))
	if err != nil {
		return wire.Usage{}, dbError(ctx, err, "tenant "+tenantID+": usage")
	}
	return u, nil
}

// usageOf reads tenantID's usage in db (a transaction when enforcing).
func usageOf(db *gorm.DB, tenantID string) (wire.Usage, error) {
	var u wire.Usage
	var ws struct {
		N      int64
		CPU    float64
		Mem    int64
		Paused int64
	}
	// A paused workspace holds no CPU or memory: it counts as a
	// workspace and against max_paused, not against the compute quotas.
	err := db.Model(&wire.Workspace{}).Where("tenant_id = ?", tenantID).
		Select("count(*) AS n, "+
			"coalesce(sum(CASE WHEN phase = ? THEN 0 ELSE cpu_cores END), 0) AS cpu, "+
			"coalesce(sum(CASE WHEN phase = ? THEN 0 ELSE memory_bytes END), 0) AS mem, "+
			"coalesce(sum(CASE WHEN phase = ? THEN 1 ELSE 0 END), 0) AS paused", wire.PhasePaused, wire.PhasePaused, wire.PhasePaused).
		Scan(&ws).Error
	if err != nil {
		return u, err
	}
	u.Workspaces, u.CPUCores, u.MemoryBytes, u.Paused = ws.N, ws.CPU, ws.Mem, ws.Paused

	if err := db.Model(&wire.Pool{}).Where("tenant_id = ?", tenantID).Count(&u.Pools).Error; err != nil {
		return u, err
	}
	if u.SnapshotBytes, err = snapshotBytes(db, tenantID); err != nil {
		return u, err
	}
	return u, nil
}

// tenantOrDefault is the tenant a row with tenantID belongs to: an empty id
// is the default tenant, as the column default says.
func tenantOrDefault(tenantID string) string {
	if tenantID == "" {
		return wire.DefaultTenantID
	}
	return tenantID
}

// inQuota runs fn in a write transaction for a create in tenantID, with
// the tenant's quota; fn checks it and inserts.
//
// A tenant without limits (the common case, the default tenant) costs one
// read and no lock, so its creates do not queue behind each other. With
// limits, the creates of the tenant take turns: first in this process (a
// gate per tenant, waited for with ctx), then in the database, where the
// transaction locks the tenant's row FOR UPDATE and re-reads the quota
// (SQLite's single writer serialises anyway). The gate matters on
// PostgreSQL: without it a burst of creates would fill the connection pool
// with transactions waiting for the row lock, and the one holding it could
// then starve for a connection GORM needs to prepare a statement.
//
// A quota set while creates are in flight applies to the creates that
// start after it is stored.
func (s *Store) inQuota(ctx context.Context, tenantID string, fn func(tx *gorm.DB, q wire.Quota) error) error {
	var ts []wire.Tenant
	if err := s.w.WithContext(ctx).Where("id = ?", tenantID).Limit(1).Find(&ts).Error; err != nil {
		return err
	}
	if len(ts) == 0 || !limited(ts[0].Quota) {
		return s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return fn(tx, wire.Quota{}) })
	}
	g, _ := s.quotaGates.LoadOrStore(tenantID, make(chan struct{}, 1))
	gate := g.(chan struct{})
	select {
	case gate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err() // the caller's writeError makes it Canceled or Timeout
	}
	defer func() { <-gate }()
	return s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		q, err := lockQuota(tx, tenantID)
		if err != nil {
			return err
		}
		return fn(tx, q)
	})
}

// lockQuota locks tenantID's row FOR UPDATE in tx and returns its quota, so
// concurrent creates in one tenant take turns between reading the usage and
// inserting, across processes too. A tenant without a row has no quota:
// rows of a tenant being created or removed concurrently are the tenants
// API's concern, not a limit.
func lockQuota(tx *gorm.DB, tenantID string) (wire.Quota, error) {
	var ts []wire.Tenant
	if err := tx.Clauses(forUpdate).Where("id = ?", tenantID).Limit(1).Find(&ts).Error; err != nil {
		return wire.Quota{}, err
	}
	if len(ts) == 0 {
		return wire.Quota{}, nil
	}
	return ts[0].Quota, nil
}

// limited reports whether q limits anything.
func limited(q wire.Quota) bool { return q != wire.Quota{} }

// checkWorkspaceQuota refuses w when adding it to tenantID's usage would
// pass a quota: Exhausted naming the quota, its limit and the use. A tenant
// limiting CPU (memory) refuses a workspace with no CPU (memory) limit,
// which could take any amount. It runs in inQuota's transaction.
func checkWorkspaceQuota(tx *gorm.DB, tenantID string, q wire.Quota, w *wire.Workspace) error {
	if !limited(q) {
		return nil
	}
	switch {
	case q.MaxCPUCores > 0 && w.CPUCores <= 0:
		return errs.E(errs.Invalid, "tenant %s: quota max_cpu_cores: limit %s: workspace %s has no cpu limit; its template must set cpu_cores under this quota",
			tenantID, fmtCores(q.MaxCPUCores), w.ID)
	case q.MaxMemoryBytes > 0 && w.MemoryBytes <= 0:
		return errs.E(errs.Invalid, "tenant %s: quota max_memory_bytes: limit %d: workspace %s has no memory limit; its template must set memory_bytes under this quota",
			tenantID, q.MaxMemoryBytes, w.ID)
	}
	u, err := usageOf(tx, tenantID)
	if err != nil {
		return err
	}
	switch {
	case q.MaxWorkspaces > 0 && u.Workspaces+1 > q.MaxWorkspaces:
		return exhausted(tenantID, "max_workspaces", strconv.FormatInt(q.MaxWorkspaces, 10), strconv.FormatInt(u.Workspaces, 10), "")
	case q.MaxCPUCores > 0 && u.CPUCores+w.CPUCores > q.MaxCPUCores+cpuSlack:
		return exhausted(tenantID, "max_cpu_cores", fmtCores(q.MaxCPUCores), fmtCores(u.CPUCores), fmtCores(w.CPUCores))
	case q.MaxMemoryBytes > 0 && u.MemoryBytes+w.MemoryBytes > q.MaxMemoryBytes:
		return exhausted(tenantID, "max_memory_bytes", strconv.FormatInt(q.MaxMemoryBytes, 10), strconv.FormatInt(u.MemoryBytes, 10), strconv.FormatInt(w.MemoryBytes, 10))
	}
	return nil
}

// checkPoolQuota refuses one more pool when tenantID holds MaxPools. It
// runs in inQuota's transaction.
func checkPoolQuota(tx *gorm.DB, tenantID string, q wire.Quota) error {
	if q.MaxPools <= 0 {
		return nil
	}
	var n int64
	if err := tx.Model(&wire.Pool{}).Where("tenant_id = ?", tenantID).Count(&n).Error; err != nil {
		return err
	}
	if n+1 > q.MaxPools {
		return exhausted(tenantID, "max_pools", strconv.FormatInt(q.MaxPools, 10), strconv.FormatInt(n, 10), "")
	}
	return nil
}

// cpuSlack absorbs float rounding in CPU sums (0.1+0.2 cores fit a 0.3 limit).
const cpuSlack = 1e-9

// exhausted is the error of a passed quota, e.g. "tenant acme: quota
// max_workspaces: limit 10, in use 10"; asked is what the refused create
// needed, when it is more than one.
func exhausted(tenantID, quota, limit, inUse, asked string) error {
	if asked != "" {
		return errs.E(errs.Exhausted, "tenant %s: quota %s: limit %s, in use %s, requested %s", tenantID, quota, limit, inUse, asked)
	}
	return errs.E(errs.Exhausted, "tenant %s: quota %s: limit %s, in use %s", tenantID, quota, limit, inUse)
}

// fmtCores prints a core count without float noise: 1.5, and 0.3 for a sum
// of 0.1 and 0.2 (millicores are the finest any backend takes).
func fmtCores(c float64) string { return strconv.FormatFloat(math.Round(c*1000)/1000, 'f', -1, 64) }

// SetWorkspaceLimits records cpu and mem as the limits workspace id runs
// with, checked against its tenant's quota as if the workspace were made
// with them now: provisioning and replacing a workspace make its sandbox
// from the template as it is then, so the limits the tenant's quota sums
// must be those, not the ones recorded at create. Nothing changes when
// they are the recorded ones. Exhausted (naming the quota) when the new
// limits would pass it, Invalid when the tenant limits CPU (memory) and
// there is no such limit; NotFound if the workspace is gone.
func (s *Store) SetWorkspaceLimits(ctx context.Context, id string, cpu float64, mem int64) error {
	w, err := s.GetWorkspace(ctx, id)
	if err != nil {
		return err
	}
	if w.CPUCores == cpu && w.MemoryBytes == mem {
		return nil
	}
	err = s.inQuota(ctx, w.TenantID, func(tx *gorm.DB, q wire.Quota) error {
		var cur []wire.Workspace
		if err := tx.Clauses(forUpdate).Where("id = ?", id).Limit(1).Find(&cur).Error; err != nil {
			return err
		}
		if len(cur) == 0 {
			return notFound("workspace", id)
		}
		if err := checkLimitsQuota(tx, w.TenantID, q, &cur[0], cpu, mem); err != nil {
			return err
		}
		return tx.Model(&wire.Workspace{}).Where("id = ?", id).
			Updates(map[string]any{"cpu_cores": cpu, "memory_bytes": mem, "updated_at": tx.NowFunc()}).Error
	})
	return writeError(ctx, err, "workspace", id, "set limits")
}

// checkLimitsQuota refuses the limits cpu and mem for w, whose recorded
// limits already count in tenantID's usage, when they would pass q. It runs
// in inQuota's transaction.
func checkLimitsQuota(tx *gorm.DB, tenantID string, q wire.Quota, w *wire.Workspace, cpu float64, mem int64) error {
	if !limited(q) {
		return nil
	}
	switch {
	case q.MaxCPUCores > 0 && cpu <= 0:
		return errs.E(errs.Invalid, "tenant %s: quota max_cpu_cores: limit %s: workspace %s has no cpu limit; its template must set cpu_cores under this quota",
			tenantID, fmtCores(q.MaxCPUCores), w.ID)
	case q.MaxMemoryBytes > 0 && mem <= 0:
		return errs.E(errs.Invalid, "tenant %s: quota max_memory_bytes: limit %d: workspace %s has no memory limit; its template must set memory_bytes under this quota",
			tenantID, q.MaxMemoryBytes, w.ID)
	}
	u, err := usageOf(tx, tenantID)
	if err != nil {
		return err
	}
	others := wire.Usage{CPUCores: u.CPUCores - w.CPUCores, MemoryBytes: u.MemoryBytes - w.MemoryBytes}
	// Only a limit that grows is checked: a workspace moving to smaller
	// limits is never refused, even in a tenant over a lowered quota.
	switch {
	case q.MaxCPUCores > 0 && cpu > w.CPUCores && others.CPUCores+cpu > q.MaxCPUCores+cpuSlack:
		return exhausted(tenantID, "max_cpu_cores", fmtCores(q.MaxCPUCores), fmtCores(others.CPUCores), fmtCores(cpu))
	case q.MaxMemoryBytes > 0 && mem > w.MemoryBytes && others.MemoryBytes+mem > q.MaxMemoryBytes:
		return exhausted(tenantID, "max_memory_bytes", strconv.FormatInt(q.MaxMemoryBytes, 10), strconv.FormatInt(others.MemoryBytes, 10), strconv.FormatInt(mem, 10))
	}
	return nil
}

// CheckTemplateLimits says whether templateID's workspaces may run with
// the limits cpu and mem: every tenant holding workspaces of the template
// must stay within its quota with each of them at the new limits (as a
// provision or replace would record them, SetWorkspaceLimits), and the
// template's own tenant must have room for one workspace with them.
// Exhausted or Invalid naming the tenant and quota, as at create. It is a
// check before a template change, not a reservation: the provision
// enforces it again.
func (s *Store) CheckTemplateLimits(ctx context.Context, templateID, templateTenant string, cpu float64, mem int64) error {
	db := s.r.WithContext(ctx)
	var ws []wire.Workspace
	if err := db.Where("template_id = ?", templateID).Find(&ws).Error; err != nil {
		return dbError(ctx, err, "template "+templateID+": workspaces")
	}
	byTenant := map[string][]wire.Workspace{tenantOrDefault(templateTenant): nil}
	for _, w := range ws {
		byTenant[w.TenantID] = append(byTenant[w.TenantID], w)
	}
	for tenantID, held := range byTenant {
		var ts []wire.Tenant
		if err := db.Where("id = ?", tenantID).Limit(1).Find(&ts).Error; err != nil {
			return dbError(ctx, err, "tenant "+tenantID)
		}
		if len(ts) == 0 || !limited(ts[0].Quota) {
			continue
		}
		q := ts[0].Quota
		// A template without a limit under a quota that has one is
		// refused only when workspaces of it would run that way now; with
		// none, a create would refuse it (as before this check).
		switch {
		case len(held) > 0 && q.MaxCPUCores > 0 && cpu <= 0:
			return errs.E(errs.Invalid, "tenant %s: quota max_cpu_cores: limit %s: workspace %s would have no cpu limit; the template must set one under this quota",
				tenantID, fmtCores(q.MaxCPUCores), held[0].ID)
		case len(held) > 0 && q.MaxMemoryBytes > 0 && mem <= 0:
			return errs.E(errs.Invalid, "tenant %s: quota max_memory_bytes: limit %d: workspace %s would have no memory limit; the template must set one under this quota",
				tenantID, q.MaxMemoryBytes, held[0].ID)
		}
		if len(held) == 0 {
			// None yet: one alone must fit.
			switch {
			case q.MaxCPUCores > 0 && cpu > q.MaxCPUCores+cpuSlack:
				return errs.E(errs.Exhausted, "tenant %s: quota max_cpu_cores: limit %s: a workspace of the template would need %s",
					tenantID, fmtCores(q.MaxCPUCores), fmtCores(cpu))
			case q.MaxMemoryBytes > 0 && mem > q.MaxMemoryBytes:
				return errs.E(errs.Exhausted, "tenant %s: quota max_memory_bytes: limit %d: a workspace of the template would need %d",
					tenantID, q.MaxMemoryBytes, mem)
			}
			continue
		}
		u, err := usageOf(db, tenantID)
		if err != nil {
			return dbError(ctx, err, "tenant "+tenantID+": usage")
		}
		// What the tenant would hold with its workspaces of the template
		// at the new limits. Only a use that grows is refused.
		next := wire.Usage{CPUCores: u.CPUCores, MemoryBytes: u.MemoryBytes}
		for _, w := range held {
			next.CPUCores += cpu - w.CPUCores
			next.MemoryBytes += mem - w.MemoryBytes
		}
		switch {
		case q.MaxCPUCores > 0 && next.CPUCores > q.MaxCPUCores+cpuSlack && next.CPUCores > u.CPUCores+cpuSlack:
			return errs.E(errs.Exhausted, "tenant %s: quota max_cpu_cores: limit %s, in use %s; its %d workspace(s) of the template at %s each would make it %s",
				tenantID, fmtCores(q.MaxCPUCores), fmtCores(u.CPUCores), len(held), fmtCores(cpu), fmtCores(next.CPUCores))
		case q.MaxMemoryBytes > 0 && next.MemoryBytes > q.MaxMemoryBytes && next.MemoryBytes > u.MemoryBytes:
			return errs.E(errs.Exhausted, "tenant %s: quota max_memory_bytes: limit %d, in use %d; its %d workspace(s) of the template at %d each would make it %d",
				tenantID, q.MaxMemoryBytes, u.MemoryBytes, len(held), mem, next.MemoryBytes)
		}
	}
	return nil
}
