package client

import (
	"context"
	"net/http"

	"github.com/primerhq/primer/wire"
)

// CreateTenant creates a tenant (admin keys only).
func (c *Client) CreateTenant(ctx context.Context, spec wire.TenantSpec) (*wire.Tenant, error) {
	return doInto[wire.Tenant](ctx, c, http.MethodPost, "/v1/tenants", nil, spec)
}

// ListTenants returns every tenant to an admin key, its own to any other.
func (c *Client) ListTenants(ctx context.Context) ([]wire.Tenant, error) {
	return listInto[wire.Tenant](ctx, c, "/v1/tenants", nil)
}

// GetTenant returns the tenant id with its usage; NotFound for another
// tenant's unless the key is an admin's.
func (c *Client) GetTenant(ctx context.Context, id string) (*wire.TenantInfo, error) {
	return doInto[wire.TenantInfo](ctx, c, http.MethodGet, "/v1/tenants/"+seg(id), nil, nil)
}

// UpdateTenant replaces the description and quota of the tenant id (admin
// keys only).
func (c *Client) UpdateTenant(ctx context.Context, id string, spec wire.TenantSpec) (*wire.Tenant, error) {
	return doInto[wire.Tenant](ctx, c, http.MethodPut, "/v1/tenants/"+seg(id), nil, spec)
}

// DeleteTenant deletes the tenant id (admin keys only); Conflict while it
// owns resources or active keys.
func (c *Client) DeleteTenant(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/tenants/"+seg(id), nil, nil, nil)
}
