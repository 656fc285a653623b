package models

import (
	"time"

	"gorm.io/gorm"

	"github.com/primerhq/primer/wire"
)

// migrateKeyParents gives the keys made before parents were recorded the
// parent their created_by names when a member key minted them (an admin
// key's keys stay roots: revoking an old admin key must not take every key
// it ever made with it), then bounds those keys by their chain: a key under
// a revoked key is revoked at the same time, and one expiring after an
// ancestor (or never) expires with it. It changes nothing on a database
// whose keys all have their parents, so it is cheap on every start.
func migrateKeyParents(tx *gorm.DB) error {
	res := tx.Exec(`UPDATE api_keys SET parent_id = created_by
		WHERE parent_id = '' AND created_by <> '' AND created_by IN (SELECT id FROM api_keys WHERE role <> ?)`, wire.RoleAdmin)
	if res.Error != nil || res.RowsAffected == 0 {
		return res.Error
	}
	var ks []wire.APIKey
	if err := tx.Find(&ks).Error; err != nil {
		return err
	}
	byID := make(map[string]*wire.APIKey, len(ks))
	for i := range ks {
		byID[ks[i].ID] = &ks[i]
	}
	for i := range ks {
		k := &ks[i]
		revoked, expires := k.RevokedAt, k.ExpiresAt
		for p, depth := byID[k.ParentID], 0; p != nil && depth <= wire.MaxKeyDepth; p, depth = byID[p.ParentID], depth+1 {
			if revoked == nil && p.RevokedAt != nil {
				revoked = p.RevokedAt
			}
			if p.ExpiresAt != nil && (expires == nil || p.ExpiresAt.Before(*expires)) {
				expires = p.ExpiresAt
			}
		}
		if revoked == k.RevokedAt && expires == k.ExpiresAt {
			continue
		}
		if err := tx.Model(&wire.APIKey{}).Where("id = ?", k.ID).Updates(map[string]any{
			"revoked_at": timeOrNil(revoked), "expires_at": timeOrNil(expires),
		}).Error; err != nil {
			return err
		}
	}
	return nil
}

// timeOrNil is t for an update map: a nil *time.Time as SQL NULL.
func timeOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return storedTime(*t)
}
