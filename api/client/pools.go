package client

import (
	"context"
	"net/http"

	"github.com/primerhq/primer/wire"
)

// Lease sources, as Lease.Source reports them.
const (
	LeaseWarm = "warm" // an idle workspace of the pool, running already
	LeaseCold = "cold" // a new workspace (still pending): the pool had none idle
)

// PoolListOptions filters ListPools. Empty fields match all.
type PoolListOptions struct {
	TemplateID string
}

// CreatePool creates a warm pool and starts its workflow, which fills it.
func (c *Client) CreatePool(ctx context.Context, spec wire.PoolSpec) (*wire.PoolView, error) {
	return doInto[wire.PoolView](ctx, c, http.MethodPost, "/v1/pools", nil, spec)
}

// GetPool returns the pool id with its live counts.
func (c *Client) GetPool(ctx context.Context, id string) (*wire.PoolView, error) {
	return doInto[wire.PoolView](ctx, c, http.MethodGet, "/v1/pools/"+seg(id), nil, nil)
}

// ListPools returns the pools opts selects, ordered by id.
func (c *Client) ListPools(ctx context.Context, opts PoolListOptions) ([]wire.PoolView, error) {
	return listInto[wire.PoolView](ctx, c, "/v1/pools", query("template_id", opts.TemplateID))
}

// UpdatePool replaces the pool id's template and size (spec.ID may be
// empty); the pool grows, shrinks or rolls over to the template after it.
func (c *Client) UpdatePool(ctx context.Context, id string, spec wire.PoolSpec) (*wire.PoolView, error) {
	return doInto[wire.PoolView](ctx, c, http.MethodPut, "/v1/pools/"+seg(id), nil, spec)
}

// DeletePool deletes the pool id and returns it as it was. Its idle
// workspaces are deleted after the call returns; leased ones stay with
// their lessees, out of the pool.
func (c *Client) DeletePool(ctx context.Context, id string) (*wire.PoolView, error) {
	return doInto[wire.PoolView](ctx, c, http.MethodDelete, "/v1/pools/"+seg(id), nil, nil)
}

// LeasePool takes a workspace from the pool id: an idle running one when
// there is one, else a new one of the pool's template.
func (c *Client) LeasePool(ctx context.Context, id string, req wire.LeaseRequest) (*wire.Lease, error) {
	var body any
	if len(req.Labels) > 0 {
		body = req
	}
	return doInto[wire.Lease](ctx, c, http.MethodPost, "/v1/pools/"+seg(id)+"/lease", nil, body)
}
