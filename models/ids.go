package models

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns prefix + "-" + 16 random hex characters, e.g. "ws-1a2b3c4d5e6f7a8b".
// 64 random bits keep collisions negligible at Primer's scale; a collision
// still surfaces as a Conflict from the store rather than an overwrite.
func NewID(prefix string) string {
	return prefix + "-" + randomHex(8)
}

// NewToken returns a fresh runtime bearer token: 32 random bytes as 64 hex characters.
func NewToken() string {
	return randomHex(32)
}

// randomHex returns n random bytes from crypto/rand as hex. crypto/rand.Read
// never fails on supported platforms (it crashes the program instead), so
// there is no error to return.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
