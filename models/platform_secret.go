package models

import (
	"bytes"
	"context"
	"encoding/hex"

	"gorm.io/gorm/clause"

	"github.com/primerhq/primer/errs"
)

// PlatformSecret is a named random secret of this installation, made once
// and shared by every process on the database: a key the platform derives
// tokens from (the E2B door's envd access tokens) so that nothing per
// token need be stored. Value never leaves the platform: not in an API
// response, a log or workflow history.
type PlatformSecret struct {
	Name      string `gorm:"primaryKey;size:64"`
	Value     string `gorm:"size:128;not null"`
	CreatedAt int64  `gorm:"not null;default:0"`
}

// PlatformSecret returns the secret named name (32 random bytes), making it
// on first use; concurrent first calls, from any process, agree on one. A
// secret never changes once made, so the store keeps it after the first
// read: a caller on a hot path (the model gateway checks a credential per
// call) costs no statement, and callers need no cache of their own. Each
// caller gets its own copy, so one that writes into it changes no other's.
func (s *Store) PlatformSecret(ctx context.Context, name string) ([]byte, error) {
	if name == "" {
		return nil, errs.E(errs.Invalid, "platform secret: name is required")
	}
	if b, ok := s.secrets.Load(name); ok {
		return bytes.Clone(b.([]byte)), nil
	}
	in := &PlatformSecret{Name: name, Value: randomHex(32)}
	if err := s.w.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(in).Error; err != nil {
		return nil, dbError(ctx, err, "platform secret "+name+": create")
	}
	var got PlatformSecret
	if err := s.w.WithContext(ctx).Where("name = ?", name).Take(&got).Error; err != nil {
		return nil, dbError(ctx, err, "platform secret "+name+": read")
	}
	b, err := hex.DecodeString(got.Value)
	if err != nil || len(b) == 0 {
		return nil, errs.E(errs.Other, "platform secret %s: stored value is malformed", name)
	}
	s.secrets.Store(name, b)
	return bytes.Clone(b), nil
}
