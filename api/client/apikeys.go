package client

import (
	"context"
	"net/http"

	"github.com/primerhq/primer/wire"
)

// CreateAPIKey makes a key. Members may make member and viewer keys of
// their own tenant; admins any key.
func (c *Client) CreateAPIKey(ctx context.Context, req wire.CreateAPIKeyRequest) (*wire.CreatedAPIKey, error) {
	return doInto[wire.CreatedAPIKey](ctx, c, http.MethodPost, "/v1/apikeys", nil, req)
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
