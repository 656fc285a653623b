package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// apiKeyPrefix starts every API key: pmr.<key id>.<secret>.
const apiKeyPrefix = "pmr"

// NewAPIKey returns a fresh key id, the whole key to hand to its user once,
// and the hash to store. The key is pmr.<id>.<64 hex secret characters>.
func NewAPIKey() (id, key, hash string) {
	id = NewID("key")
	key = apiKeyPrefix + "." + id + "." + randomHex(32)
	return id, key, HashAPIKey(key)
}

// HashAPIKey is the stored form of key: its SHA-256 as hex. The secret is
// 256 random bits, so a fast hash is enough: there is nothing to guess.
func HashAPIKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// ParseAPIKey returns the key id of a well-formed key, or Unauthenticated
// saying it is malformed (without echoing it).
func ParseAPIKey(key string) (string, error) {
	parts := strings.Split(key, ".")
	if len(parts) != 3 || parts[0] != apiKeyPrefix || !strings.HasPrefix(parts[1], "key-") ||
		len(parts[1]) > 64 || len(parts[2]) != 64 {
		return "", errs.E(errs.Unauthenticated, "api key: malformed; want pmr.<key id>.<secret>")
	}
	if _, err := hex.DecodeString(parts[2]); err != nil {
		return "", errs.E(errs.Unauthenticated, "api key: malformed; want pmr.<key id>.<secret>")
	}
	return parts[1], nil
}

// CreateAPIKey inserts k; Conflict if the id exists, NotFound (field
// tenant_id) if its tenant does not exist, Invalid for an unknown role.
//
// A key with a ParentID lives inside its parent's life: the parent must be
// working (not revoked, not expired, nor any of its ancestors), an
// ExpiresAt after the parent's is Invalid (field expires_at), and no
// ExpiresAt takes the parent's. The parent's row is locked while the key is
// inserted, so a revoke of the parent that races the insert sees the new key.
func (s *Store) CreateAPIKey(ctx context.Context, k *wire.APIKey) error {
	switch k.Role {
	case wire.RoleAdmin, wire.RoleMember, wire.RoleViewer:
	default:
		return errs.Field("role", "api key: role %q: want admin, member or viewer", k.Role)
	}
	if k.ID == "" || len(k.Hash) != 64 {
		return errs.E(errs.Invalid, "api key: id and hash are required")
	}
	if k.ExpiresAt != nil {
		t := storedTime(*k.ExpiresAt)
		k.ExpiresAt = &t
	}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&wire.Tenant{}).Where("id = ?", k.TenantID).Count(&n).Error; err != nil {
			return dbError(ctx, err, "api key "+k.ID+": create")
		}
		if n == 0 {
			return &errs.Error{Kind: errs.NotFound, Field: "tenant_id", Msg: "api key: tenant " + k.TenantID + ": not found"}
		}
		if k.ParentID != "" {
			if err := lockRow(tx, forUpdate, &wire.APIKey{}, "api key", k.ParentID); err != nil {
				return err
			}
			chain, err := keyChain(tx, k.ParentID)
			if err != nil {
				return dbError(ctx, err, "api key "+k.ID+": create")
			}
			if err := boundByParent(k, chain, time.Now()); err != nil {
				return err
			}
		}
		return tx.Create(k).Error
	})
	return writeError(ctx, err, "api key", k.ID, "create")
}

// boundByParent checks that k may be minted under chain (its parent first,
// then the parent's ancestors) at now, and gives k the parent's expiry when
// it has none.
func boundByParent(k *wire.APIKey, chain []wire.APIKey, now time.Time) error {
	if why := chainProblem(chain, now); why != "" {
		return errs.E(errs.Forbidden, "api key: the key %s minting it %s", k.ParentID, why)
	}
	if len(chain) >= wire.MaxKeyDepth {
		return errs.E(errs.Forbidden, "api key: the key %s minting it is %d keys deep; a key that deep may not mint another", k.ParentID, len(chain))
	}
	limit := ChainExpiry(chain)
	switch {
	case limit == nil:
	case k.ExpiresAt == nil:
		t := *limit
		k.ExpiresAt = &t
	case k.ExpiresAt.After(*limit):
		return errs.Field("expires_at", "expires_at: %s is after %s, when the key minting it (%s) stops working; a key never outlives its parent",
			k.ExpiresAt.UTC().Format(time.RFC3339), limit.UTC().Format(time.RFC3339), k.ParentID)
	}
	return nil
}

// ChainWorks returns nil if every key of chain (a key, then its ancestors
// up to its root) is neither revoked nor expired at now, else an
// Unauthenticated error saying which is, without echoing any secret.
func ChainWorks(chain []wire.APIKey, now time.Time) error {
	if len(chain) == 0 {
		return errs.E(errs.Unauthenticated, "api key: unknown")
	}
	if why := chainProblem(chain, now); why != "" {
		return errs.E(errs.Unauthenticated, "api key %s: %s", chain[0].ID, why)
	}
	return nil
}

// chainProblem says why chain does not work at now ("" if it does): the
// first key of it that is revoked or expired, or a missing ancestor.
func chainProblem(chain []wire.APIKey, now time.Time) string {
	for i, k := range chain {
		whose := ""
		if i > 0 {
			whose = " (the key " + k.ID + " above it)"
		}
		switch {
		case k.RevokedAt != nil:
			return "revoked" + whose
		case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
			return "expired at " + k.ExpiresAt.UTC().Format(time.RFC3339) + whose
		}
	}
	if last := chain[len(chain)-1]; last.ParentID != "" {
		// The walk stopped below a root: a parent row is gone, or the
		// chain is deeper than any mint allows.
		return "minted under " + last.ParentID + ", which is unknown"
	}
	return ""
}

// ChainExpiry is the earliest expiry of chain: when the first key of it
// stops working by time alone; nil if none of them expires.
func ChainExpiry(chain []wire.APIKey) *time.Time {
	var at *time.Time
	for _, k := range chain {
		if k.ExpiresAt != nil && (at == nil || k.ExpiresAt.Before(*at)) {
			at = k.ExpiresAt
		}
	}
	return at
}

// keyChainSQL walks from a key up through its parents in one statement.
// The depth bound keeps a corrupt cycle from looping.
const keyChainSQL = `WITH RECURSIVE chain AS (
	SELECT api_keys.*, 0 AS depth FROM api_keys WHERE id = ?
	UNION ALL
	SELECT k.*, c.depth + 1 FROM api_keys k JOIN chain c ON k.id = c.parent_id WHERE c.parent_id <> '' AND c.depth < ?
) SELECT * FROM chain ORDER BY depth`

// keyChain returns the key id and its ancestors, the key first, root last;
// empty if id is unknown.
func keyChain(db *gorm.DB, id string) ([]wire.APIKey, error) {
	var rows []struct {
		wire.APIKey
		Depth int
	}
	if err := db.Raw(keyChainSQL, id, wire.MaxKeyDepth+1).Scan(&rows).Error; err != nil {
		return nil, err
	}
	ks := make([]wire.APIKey, len(rows))
	for i, r := range rows {
		ks[i] = r.APIKey
	}
	return ks, nil
}

// APIKeyChain returns the key id and every key above it (its parent, the
// parent's parent, up to the root), the key first, in one read; NotFound
// if id is unknown. Authentication checks the whole chain.
func (s *Store) APIKeyChain(ctx context.Context, id string) ([]wire.APIKey, error) {
	ks, err := keyChain(s.r.WithContext(ctx), id)
	if err != nil {
		return nil, dbError(ctx, err, "api key "+id+": get chain")
	}
	if len(ks) == 0 {
		return nil, notFound("api key", id)
	}
	return ks, nil
}

// GetAPIKey returns the key row; NotFound if absent.
func (s *Store) GetAPIKey(ctx context.Context, id string) (*wire.APIKey, error) {
	var k wire.APIKey
	if err := s.r.WithContext(ctx).Take(&k, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "api key", id)
	}
	return &k, nil
}

// CountAPIKeys returns how many keys exist, revoked ones included: zero only
// on a database no `primer serve` has started on yet.
func (s *Store) CountAPIKeys(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.WithContext(ctx).Model(&wire.APIKey{}).Count(&n).Error; err != nil {
		return 0, dbError(ctx, err, "api keys: count")
	}
	return n, nil
}

// ListAPIKeys returns the keys of tenant ("" = every tenant), revoked and
// expired ones included, oldest first.
func (s *Store) ListAPIKeys(ctx context.Context, tenant string) ([]wire.APIKey, error) {
	q := s.r.WithContext(ctx).Order("created_at, id")
	if tenant != "" {
		q = q.Where("tenant_id = ?", tenant)
	}
	ks := []wire.APIKey{}
	if err := q.Find(&ks).Error; err != nil {
		return nil, dbError(ctx, err, "api keys: list")
	}
	return ks, nil
}

// RevokeAPIKey marks the key revoked now, with every key minted under it
// (its whole subtree: they stop working with it), and returns the key and
// how many keys of its subtree this call revoked; NotFound if absent.
// Revoking a revoked key keeps its first revocation time and still revokes
// what is left of its subtree.
//
// The subtree is walked one level per statement inside the transaction, so
// on PostgreSQL each level reads what committed before it: a key minted
// under a key of the subtree while this runs (its insert locked the parent
// row, which this revoke waits for) is found by the next level.
func (s *Store) RevokeAPIKey(ctx context.Context, id string) (*wire.APIKey, int, error) {
	now := storedTime(time.Now())
	var below int
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(&wire.APIKey{}).Where("id = ? AND revoked_at IS NULL", id).Update("revoked_at", now).Error; err != nil {
			return err
		}
		level := []string{id}
		for depth := 0; len(level) > 0 && depth <= wire.MaxKeyDepth; depth++ {
			var next []string
			if err := tx.Model(&wire.APIKey{}).Where("parent_id IN ?", level).Order("id").Pluck("id", &next).Error; err != nil {
				return err
			}
			if len(next) == 0 {
				break
			}
			res := tx.Model(&wire.APIKey{}).Where("id IN ? AND revoked_at IS NULL", next).Update("revoked_at", now)
			if res.Error != nil {
				return res.Error
			}
			below += int(res.RowsAffected)
			level = next
		}
		return nil
	})
	if err != nil {
		return nil, 0, writeError(ctx, err, "api key", id, "revoke")
	}
	// Nothing revoked and no row: GetAPIKey says not found.
	k, err := s.GetAPIKey(ctx, id)
	return k, below, err
}

// KeyTree orders ks as a forest, depth first: each key is followed by the
// keys minted under it, oldest first. A key whose parent is not in ks
// (a root, or a key minted by another tenant's admin key) starts a tree.
func KeyTree(ks []wire.APIKey) []wire.APIKeyNode {
	in := make(map[string]bool, len(ks))
	for _, k := range ks {
		in[k.ID] = true
	}
	children := map[string][]wire.APIKey{}
	var roots []wire.APIKey
	for _, k := range ks {
		if k.ParentID != "" && in[k.ParentID] && k.ParentID != k.ID {
			children[k.ParentID] = append(children[k.ParentID], k)
		} else {
			roots = append(roots, k)
		}
	}
	out := make([]wire.APIKeyNode, 0, len(ks))
	seen := make(map[string]bool, len(ks))
	var walk func(k wire.APIKey, depth int)
	walk = func(k wire.APIKey, depth int) {
		if seen[k.ID] {
			return
		}
		seen[k.ID] = true
		out = append(out, wire.APIKeyNode{APIKey: k, Depth: depth})
		for _, c := range children[k.ID] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	// A cycle (impossible through the API) has no root: list it flat.
	for _, k := range ks {
		walk(k, 0)
	}
	return out
}

// TouchAPIKey records that the key id was used at at. It is a plain
// update of one column; an unknown id is not an error (the key may have
// been deleted with nothing to record).
func (s *Store) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	err := s.w.WithContext(ctx).Model(&wire.APIKey{}).Where("id = ?", id).Update("last_used_at", storedTime(at)).Error
	return writeError(ctx, err, "api key", id, "touch")
}
