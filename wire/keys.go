package wire

import "time"

// CreateAPIKeyRequest is the body of POST /v1/apikeys. TenantID is an
// admin's choice (a member's keys stay in its tenant); ExpiresAt or TTL
// bound the key, never past the minting key's own expiry.
type CreateAPIKeyRequest struct {
	TenantID  string     `json:"tenant_id,omitempty"`
	Role      string     `json:"role"`
	Name      string     `json:"name,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	TTL       string     `json:"ttl,omitempty"`
	// Root (admins only) makes a key with no parent: revoking the key
	// that made it does not revoke it.
	Root bool `json:"root,omitempty"`
}

// CreatedAPIKey answers a create: the key's record and, this once, the
// key itself.
type CreatedAPIKey struct {
	APIKey
	Key string `json:"key"`
	// E2BKey is Key re-encoded for E2B's SDKs (e2b_<hex>, which the
	// Python SDK's client-side check accepts): the same key, sent as
	// X-API-KEY to /e2b. Shown this once, like Key.
	E2BKey string `json:"e2b_key,omitempty"`
}

// RevokedAPIKey answers a revoke: the key and how many keys minted under
// it were revoked with it.
type RevokedAPIKey struct {
	APIKey
	RevokedBelow int `json:"revoked_below"`
}
