package client

import (
	"context"
	"net/http"
	"time"

	"github.com/primerhq/primer/wire"
)

// CreateAPIKeyRequest is the body of POST /v1/apikeys.
type CreateAPIKeyRequest struct {
	// TenantID is the key's tenant; empty: the caller's.
	TenantID string `json:"tenant_id,omitempty"`
	Role     string `json:"role"`
	Name     string `json:"name,omitempty"`
	// ExpiresAt or TTL (a Go duration, or days as "30d"): at most one;
	// neither, the key does not expire.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	TTL       string     `json:"ttl,omitempty"`
	// Root (admin keys only) makes a key minted under no key, which
	// outlives the key that made it. Without it the new key is the
	// caller's child: it never expires after the caller and stops working
	// when the caller is revoked.
	Root bool `json:"root,omitempty"`
}

// CreatedAPIKey is a new key's row and, this once, the key itself.
type CreatedAPIKey struct {
	wire.APIKey
	// Key is the bearer key. The server keeps only its hash: it is never
	// shown again.
	Key string `json:"key"`
}

// CreateAPIKey makes a key. Members may make member and viewer keys of
// their own tenant; admins any key.
func (c *Client) CreateAPIKey(ctx context.Context, req CreateAPIKeyRequest) (*CreatedAPIKey, error) {
	return doInto[CreatedAPIKey](ctx, c, http.MethodPost, "/v1/apikeys", nil, req)
}

// ListAPIKeys returns the keys the caller may see: an admin's of tenant
// ("" = every tenant), anyone else's own tenant's.
func (c *Client) ListAPIKeys(ctx context.Context, tenant string) ([]wire.APIKey, error) {
	return listInto[wire.APIKey](ctx, c, "/v1/apikeys", query("tenant", tenant))
}

// ListAPIKeyTree returns the same keys as ListAPIKeys as a key tree, depth
// first: each key followed by the keys minted under it, with its depth.
func (c *Client) ListAPIKeyTree(ctx context.Context, tenant string) ([]wire.APIKeyNode, error) {
	return listInto[wire.APIKeyNode](ctx, c, "/v1/apikeys", query("tenant", tenant, "tree", "1"))
}

// GetAPIKey returns the key row id (never the key).
func (c *Client) GetAPIKey(ctx context.Context, id string) (*wire.APIKey, error) {
	return doInto[wire.APIKey](ctx, c, http.MethodGet, "/v1/apikeys/"+seg(id), nil, nil)
}

// RevokeAPIKey revokes the key id and every key minted under it at once
// and returns its row; revoking a revoked key changes nothing.
func (c *Client) RevokeAPIKey(ctx context.Context, id string) (*wire.APIKey, error) {
	return doInto[wire.APIKey](ctx, c, http.MethodPost, "/v1/apikeys/"+seg(id)+"/revoke", nil, nil)
}
