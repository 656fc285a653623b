package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/primerhq/primer/errs"
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
func (s *Store) CreateAPIKey(ctx context.Context, k *APIKey) error {
	switch k.Role {
	case RoleAdmin, RoleMember, RoleViewer:
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
	var n int64
	if err := s.r.WithContext(ctx).Model(&Tenant{}).Where("id = ?", k.TenantID).Count(&n).Error; err != nil {
		return dbError(ctx, err, "api key "+k.ID+": create")
	}
	if n == 0 {
		return &errs.Error{Kind: errs.NotFound, Field: "tenant_id", Msg: "api key: tenant " + k.TenantID + ": not found"}
	}
	return writeError(ctx, s.w.WithContext(ctx).Create(k).Error, "api key", k.ID, "create")
}

// GetAPIKey returns the key row; NotFound if absent.
func (s *Store) GetAPIKey(ctx context.Context, id string) (*APIKey, error) {
	var k APIKey
	if err := s.r.WithContext(ctx).Take(&k, "id = ?", id).Error; err != nil {
		return nil, readError(ctx, err, "api key", id)
	}
	return &k, nil
}

// CountAPIKeys returns how many keys exist, revoked ones included: zero only
// on a database no `primer serve` has started on yet.
func (s *Store) CountAPIKeys(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.WithContext(ctx).Model(&APIKey{}).Count(&n).Error; err != nil {
		return 0, dbError(ctx, err, "api keys: count")
	}
	return n, nil
}

// ListAPIKeys returns the keys of tenant ("" = every tenant), revoked and
// expired ones included, oldest first.
func (s *Store) ListAPIKeys(ctx context.Context, tenant string) ([]APIKey, error) {
	q := s.r.WithContext(ctx).Order("created_at, id")
	if tenant != "" {
		q = q.Where("tenant_id = ?", tenant)
	}
	ks := []APIKey{}
	if err := q.Find(&ks).Error; err != nil {
		return nil, dbError(ctx, err, "api keys: list")
	}
	return ks, nil
}

// RevokeAPIKey marks the key revoked now and returns it; NotFound if absent.
// Revoking a revoked key keeps its first revocation time.
func (s *Store) RevokeAPIKey(ctx context.Context, id string) (*APIKey, error) {
	res := s.w.WithContext(ctx).Model(&APIKey{}).Where("id = ? AND revoked_at IS NULL", id).
		Update("revoked_at", storedTime(time.Now()))
	if res.Error != nil {
		return nil, writeError(ctx, res.Error, "api key", id, "revoke")
	}
	// Zero rows: already revoked, or absent (GetAPIKey tells which).
	return s.GetAPIKey(ctx, id)
}

// TouchAPIKey records that the key id was used at at. It is a plain
// update of one column; an unknown id is not an error (the key may have
// been deleted with nothing to record).
func (s *Store) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	err := s.w.WithContext(ctx).Model(&APIKey{}).Where("id = ?", id).Update("last_used_at", storedTime(at)).Error
	return writeError(ctx, err, "api key", id, "touch")
}
