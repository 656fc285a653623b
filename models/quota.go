package models

import (
	"context"
	"math"
	"strconv"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
)

// TenantUsage returns what tenantID holds now: its workspaces (every row,
// deleting and terminating ones included, until the row is gone), the sums
// of their CPU and memory limits, and its pools. An unknown tenant holds
// nothing; the caller decides whether that is NotFound.
func (s *Store) TenantUsage(ctx context.Context, tenantID string) (Usage, error) {
	u, err := usageOf(s.r.WithContext(ctx), tenantOrDefault(tenantID))
	if err != nil {
		return Usage{}, dbError(ctx, err, "tenant "+tenantID+": usage")
	}
	return u, nil
}

// usageOf reads tenantID's usage in db (a transaction when enforcing).
func usageOf(db *gorm.DB, tenantID string) (Usage, error) {
	var u Usage
	var ws struct {
		N   int64
		CPU float64
		Mem int64
	}
	err := db.Model(&Workspace{}).Where("tenant_id = ?", tenantID).
		Select("count(*) AS n, coalesce(sum(cpu_cores), 0) AS cpu, coalesce(sum(memory_bytes), 0) AS mem").
		Scan(&ws).Error
	if err != nil {
		return u, err
	}
	u.Workspaces, u.CPUCores, u.MemoryBytes = ws.N, ws.CPU, ws.Mem
	if err := db.Model(&Pool{}).Where("tenant_id = ?", tenantID).Count(&u.Pools).Error; err != nil {
		return u, err
	}
	return u, nil
}

// tenantOrDefault is the tenant a row with tenantID belongs to: an empty id
// is the default tenant, as the column default says.
func tenantOrDefault(tenantID string) string {
	if tenantID == "" {
		return DefaultTenantID
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
func (s *Store) inQuota(ctx context.Context, tenantID string, fn func(tx *gorm.DB, q Quota) error) error {
	var ts []Tenant
	if err := s.w.WithContext(ctx).Where("id = ?", tenantID).Limit(1).Find(&ts).Error; err != nil {
		return err
	}
	if len(ts) == 0 || !ts[0].Quota.limited() {
		return s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return fn(tx, Quota{}) })
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
func lockQuota(tx *gorm.DB, tenantID string) (Quota, error) {
	var ts []Tenant
	if err := tx.Clauses(forUpdate).Where("id = ?", tenantID).Limit(1).Find(&ts).Error; err != nil {
		return Quota{}, err
	}
	if len(ts) == 0 {
		return Quota{}, nil
	}
	return ts[0].Quota, nil
}

// limited reports whether q limits anything.
func (q Quota) limited() bool { return q != Quota{} }

// checkWorkspaceQuota refuses w when adding it to tenantID's usage would
// pass a quota: Exhausted naming the quota, its limit and the use. A tenant
// limiting CPU (memory) refuses a workspace with no CPU (memory) limit,
// which could take any amount. It runs in inQuota's transaction.
func checkWorkspaceQuota(tx *gorm.DB, tenantID string, q Quota, w *Workspace) error {
	if !q.limited() {
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
func checkPoolQuota(tx *gorm.DB, tenantID string, q Quota) error {
	if q.MaxPools <= 0 {
		return nil
	}
	var n int64
	if err := tx.Model(&Pool{}).Where("tenant_id = ?", tenantID).Count(&n).Error; err != nil {
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
