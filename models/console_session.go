package models

import (
	"context"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// ConsoleSession is one signed-in console browser, stored so a sign-in
// survives a restart of primer and works on every API replica (no sticky
// sessions). The browser's cookie holds the session token; the row holds
// only its hash, so a read of the database cannot sign anyone in. The
// token acts as the key it was made with (Role, TenantID) and only while
// that key works: revoking or expiring the key ends its sessions.
type ConsoleSession struct {
	// Hash is the hex SHA-256 of the session token (HashAPIKey).
	Hash     string `gorm:"primaryKey;size:64" json:"-"`
	KeyID    string `gorm:"size:64;not null;index" json:"key_id"`
	TenantID string `gorm:"size:64;not null;index" json:"tenant_id"`
	Role     string `gorm:"size:16;not null" json:"role"`
	// ExpiresAt slides forward as the session is used (TouchConsoleSession).
	ExpiresAt time.Time `gorm:"not null;index" json:"expires_at"`
	CreatedAt time.Time `json:"created_at"`
}

// consoleTokenPrefix starts every console session token: pcs.<secret>.
const consoleTokenPrefix = "pcs."

// NewConsoleToken returns a fresh console session token and its hash.
func NewConsoleToken() (token, hash string) {
	token = consoleTokenPrefix + randomHex(32)
	return token, HashAPIKey(token)
}

// IsConsoleToken reports whether tok has the form of a console session
// token (it says nothing about whether one is stored).
func IsConsoleToken(tok string) bool {
	return strings.HasPrefix(tok, consoleTokenPrefix) && len(tok) == len(consoleTokenPrefix)+64
}

// CreateConsoleSession stores cs within bounds: a key holds at most perKey
// sessions (its earliest-expiring, the least recently used, end to make
// room) and all keys together at most max (past it Exhausted). Expired
// sessions are removed first, so they never count.
func (s *Store) CreateConsoleSession(ctx context.Context, cs *ConsoleSession, perKey, max int) error {
	cs.ExpiresAt = storedTime(cs.ExpiresAt)
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		now := storedTime(time.Now())
		if err := tx.Where("expires_at <= ?", now).Delete(&ConsoleSession{}).Error; err != nil {
			return err
		}
		var same []string
		if err := tx.Model(&ConsoleSession{}).Where("key_id = ?", cs.KeyID).
			Order("expires_at DESC").Pluck("hash", &same).Error; err != nil {
			return err
		}
		if len(same) >= perKey {
			if err := tx.Where("hash IN ?", same[perKey-1:]).Delete(&ConsoleSession{}).Error; err != nil {
				return err
			}
		}
		var n int64
		if err := tx.Model(&ConsoleSession{}).Count(&n).Error; err != nil {
			return err
		}
		if n >= int64(max) {
			return errs.E(errs.Exhausted, "console: %d sessions are signed in, the most allowed; try again later", n)
		}
		return tx.Create(cs).Error
	})
	return writeError(ctx, err, "console session of key", cs.KeyID, "create")
}

// ConsoleSession returns the live session whose token hashes to hash: not
// expired, and its key (and every key above it) still working. A session
// whose key stopped working is removed. NotFound otherwise; the error never
// echoes the hash.
func (s *Store) ConsoleSession(ctx context.Context, hash string) (*ConsoleSession, error) {
	var cs ConsoleSession
	err := s.r.WithContext(ctx).Take(&cs, "hash = ?", hash).Error
	if err != nil {
		return nil, readError(ctx, err, "console session", "(token)")
	}
	now := time.Now()
	if !cs.ExpiresAt.After(now) {
		return nil, notFound("console session", "(token)")
	}
	chain, err := s.APIKeyChain(ctx, cs.KeyID)
	if err != nil && !errs.Is(err, errs.NotFound) {
		return nil, err
	}
	if err == nil {
		err = ChainWorks(chain, now)
	}
	if err != nil {
		// The key was revoked or expired (or deleted with its tenant):
		// its sessions end with it.
		_ = s.DeleteConsoleSession(ctx, hash)
		return nil, errs.E(errs.NotFound, "console session: ended: %w", err)
	}
	return &cs, nil
}

// TouchConsoleSession moves the session's expiry to expires.
func (s *Store) TouchConsoleSession(ctx context.Context, hash string, expires time.Time) error {
	err := s.w.WithContext(ctx).Model(&ConsoleSession{}).Where("hash = ?", hash).
		Update("expires_at", storedTime(expires)).Error
	return writeError(ctx, err, "console session", "(token)", "touch")
}

// DeleteConsoleSession ends the session (sign-out); a missing one is no error.
func (s *Store) DeleteConsoleSession(ctx context.Context, hash string) error {
	err := s.w.WithContext(ctx).Where("hash = ?", hash).Delete(&ConsoleSession{}).Error
	return writeError(ctx, err, "console session", "(token)", "delete")
}

// SweepConsoleSessions removes the sessions expired at now and those of
// revoked or expired keys, and returns how many remain.
func (s *Store) SweepConsoleSessions(ctx context.Context, now time.Time) (int64, error) {
	now = storedTime(now)
	var n int64
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("expires_at <= ?", now).Delete(&ConsoleSession{}).Error; err != nil {
			return err
		}
		dead := tx.Model(&wire.APIKey{}).Select("id").Where("revoked_at IS NOT NULL OR (expires_at IS NOT NULL AND expires_at <= ?)", now)
		if err := tx.Where("key_id IN (?)", dead).Delete(&ConsoleSession{}).Error; err != nil {
			return err
		}
		return tx.Model(&ConsoleSession{}).Count(&n).Error
	})
	if err != nil {
		return 0, dbError(ctx, err, "console sessions: sweep")
	}
	return n, nil
}
