package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// CreateFork inserts a fork's implicit snapshot (phase creating) and its
// children's workspace rows in one transaction under the tenant's quota:
// the children are checked together, as one request for len(children)
// workspaces, so a fork that does not fit whole makes nothing (Exhausted
// naming the quota). The caller sets the rows' ids, template, provider
// and limits; every child must carry snap's id as its SnapshotID.
func (s *Store) CreateFork(ctx context.Context, snap *wire.Snapshot, children []*wire.Workspace) error {
	if snap.ID == "" {
		return errs.Field("id", "snapshot: id is required")
	}
	snap.TenantID = tenantOrDefault(snap.TenantID)
	snap.Phase, snap.Reason, snap.Bytes, snap.ReadyAt = wire.SnapshotCreating, "", 0, nil
	now := storedTime(time.Now())
	for _, w := range children {
		if w.ID == "" || w.SnapshotID != snap.ID || w.PoolID != "" {
			return errs.E(errs.Other, "fork %s: child %q: want an id, snapshot_id %s and no pool", snap.ID, w.ID, snap.ID)
		}
		w.TenantID = snap.TenantID
		w.CreatedAt, w.UpdatedAt = now, now
	}
	err := s.inQuota(ctx, snap.TenantID, func(tx *gorm.DB, q wire.Quota) error {
		if err := checkSnapshotQuota(tx, snap.TenantID, q); err != nil {
			return err
		}
		if err := checkForkQuota(tx, snap.TenantID, q, children); err != nil {
			return err
		}
		var gens []int64
		if len(children) > 0 {
			err := tx.Model(&wire.Template{}).Clauses(forShare).Where("id = ?", children[0].TemplateID).Pluck("generation", &gens).Error
			if err != nil {
				return err
			}
		}
		if err := tx.Create(snap).Error; err != nil {
			return err
		}
		for _, w := range children {
			w.TemplateGeneration = 0
			if len(gens) > 0 {
				w.TemplateGeneration = gens[0]
			}
			if err := tx.Create(w).Error; err != nil {
				return err
			}
		}
		return nil
	})
	return writeError(ctx, err, "snapshot", snap.ID, "fork")
}

// checkForkQuota refuses children when adding all of them to tenantID's
// usage would pass a quota, as checkWorkspaceQuota does for one.
func checkForkQuota(tx *gorm.DB, tenantID string, q wire.Quota, children []*wire.Workspace) error {
	if !limited(q) || len(children) == 0 {
		return nil
	}
	var cpu float64
	var mem int64
	for _, w := range children {
		// One child without a limit is refused as a single create of it
		// would be.
		if err := checkLimitsPresent(tenantID, q, w); err != nil {
			return err
		}
		cpu += w.CPUCores
		mem += w.MemoryBytes
	}
	u, err := usageOf(tx, tenantID)
	if err != nil {
		return err
	}
	n := int64(len(children))
	asked := fmt.Sprint(n)
	switch {
	case q.MaxWorkspaces > 0 && u.Workspaces+n > q.MaxWorkspaces:
		return exhausted(tenantID, "max_workspaces", fmt.Sprint(q.MaxWorkspaces), fmt.Sprint(u.Workspaces), asked)
	case q.MaxCPUCores > 0 && u.CPUCores+cpu > q.MaxCPUCores+cpuSlack:
		return exhausted(tenantID, "max_cpu_cores", fmtCores(q.MaxCPUCores), fmtCores(u.CPUCores), fmtCores(cpu))
	case q.MaxMemoryBytes > 0 && u.MemoryBytes+mem > q.MaxMemoryBytes:
		return exhausted(tenantID, "max_memory_bytes", fmt.Sprint(q.MaxMemoryBytes), fmt.Sprint(u.MemoryBytes), fmt.Sprint(mem))
	}
	return nil
}

// checkLimitsPresent refuses w when q limits CPU (memory) and w has no such
// limit, which could take any amount.
func checkLimitsPresent(tenantID string, q wire.Quota, w *wire.Workspace) error {
	switch {
	case q.MaxCPUCores > 0 && w.CPUCores <= 0:
		return errs.E(errs.Invalid, "tenant %s: quota max_cpu_cores: limit %s: workspace %s has no cpu limit; its template must set cpu_cores under this quota",
			tenantID, fmtCores(q.MaxCPUCores), w.ID)
	case q.MaxMemoryBytes > 0 && w.MemoryBytes <= 0:
		return errs.E(errs.Invalid, "tenant %s: quota max_memory_bytes: limit %d: workspace %s has no memory limit; its template must set memory_bytes under this quota",
			tenantID, q.MaxMemoryBytes, w.ID)
	}
	return nil
}
