package models

import (
	"encoding/hex"
	"strings"

	"github.com/primerhq/primer/errs"
)

// e2bKeyPrefix starts the E2B form of an API key. E2B's Python SDK refuses,
// before sending anything, a key that does not match ^e2b_[0-9a-f]+$.
const e2bKeyPrefix = "e2b_"

// keyIDHex is how many hex characters follow "key-" in a key id NewID made.
const keyIDHex = 16

// E2BKey returns key (pmr.key-<16 hex>.<64 hex>) in its E2B form,
// e2b_<16 hex><64 hex>: the same key re-encoded, so it has the same id,
// the same hash and nothing new is stored. ok is false for a key that has
// no such form (one whose id is not key-<16 hex>).
func E2BKey(key string) (string, bool) {
	id, err := ParseAPIKey(key)
	if err != nil {
		return "", false
	}
	hexID := strings.TrimPrefix(id, "key-")
	if len(hexID) != keyIDHex || !isLowerHex(hexID) {
		return "", false
	}
	secret := key[strings.LastIndexByte(key, '.')+1:]
	if !isLowerHex(secret) {
		return "", false
	}
	return e2bKeyPrefix + hexID + secret, true
}

// IsE2BKey reports whether key has the E2B form's prefix.
func IsE2BKey(key string) bool { return strings.HasPrefix(key, e2bKeyPrefix) }

// FromE2BKey returns the Primer form of an E2B-form key, or
// Unauthenticated saying it is malformed (never echoing it).
func FromE2BKey(key string) (string, error) {
	rest, ok := strings.CutPrefix(key, e2bKeyPrefix)
	if !ok || len(rest) != keyIDHex+64 || !isLowerHex(rest) {
		return "", errs.E(errs.Unauthenticated, "api key: malformed; want e2b_<80 hex characters> or pmr.<key id>.<secret>")
	}
	return apiKeyPrefix + ".key-" + rest[:keyIDHex] + "." + rest[keyIDHex:], nil
}

func isLowerHex(s string) bool {
	if _, err := hex.DecodeString(s); err != nil {
		return false
	}
	return strings.ToLower(s) == s
}
