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

// PoolSpec is the body of POST and PUT /v1/pools: the `spec` of a
// `kind: workspace_pool` document.
type PoolSpec struct {
	ID         string `json:"id,omitempty"`
	TemplateID string `json:"template_id"`
	// Size is how many workspaces the pool holds, idle or leased: 1 to
	// 100; 0 means the server's default (3).
	Size int `json:"size,omitempty"`
	// LeaseTTL is how long a lease lasts unless returned or extended (a
	// Go duration such as "30m"); empty: until returned.
	LeaseTTL string `json:"lease_ttl,omitempty"`
}

// PoolStatus counts a pool's workspaces by what they are doing now.
type PoolStatus struct {
	Idle      int `json:"idle"`      // running, ready to be leased
	Starting  int `json:"starting"`  // idle but still being provisioned
	Leased    int `json:"leased"`    // out with a lessee
	Returning int `json:"returning"` // given back, being reset
}

// Pool is a warm pool with its live counts.
type Pool struct {
	wire.Pool
	Status PoolStatus `json:"status"`
}

// PoolListOptions filters ListPools. Empty fields match all.
type PoolListOptions struct {
	TemplateID string
}

// LeaseRequest is the optional body of POST /v1/pools/{id}/lease.
type LeaseRequest struct {
	// Labels are given to a workspace created for a cold lease.
	Labels map[string]string `json:"labels,omitempty"`
	// LeaseTTL overrides the pool's lease_ttl for this lease.
	LeaseTTL string `json:"lease_ttl,omitempty"`
}

// Lease is a leased workspace and where it came from: LeaseWarm (running
// already) or LeaseCold (just created, still pending; see WaitWorkspace).
type Lease struct {
	Workspace *wire.Workspace `json:"workspace"`
	Source    string          `json:"source"`
}

// CreatePool creates a warm pool and starts its workflow, which fills it.
func (c *Client) CreatePool(ctx context.Context, spec PoolSpec) (*Pool, error) {
	return doInto[Pool](ctx, c, http.MethodPost, "/v1/pools", nil, spec)
}

// GetPool returns the pool id with its live counts.
func (c *Client) GetPool(ctx context.Context, id string) (*Pool, error) {
	return doInto[Pool](ctx, c, http.MethodGet, "/v1/pools/"+seg(id), nil, nil)
}

// ListPools returns the pools opts selects, ordered by id.
func (c *Client) ListPools(ctx context.Context, opts PoolListOptions) ([]Pool, error) {
	return listInto[Pool](ctx, c, "/v1/pools", query("template_id", opts.TemplateID))
}

// UpdatePool replaces the pool id's template and size (spec.ID may be
// empty); the pool grows, shrinks or rolls over to the template after it.
func (c *Client) UpdatePool(ctx context.Context, id string, spec PoolSpec) (*Pool, error) {
	return doInto[Pool](ctx, c, http.MethodPut, "/v1/pools/"+seg(id), nil, spec)
}

// DeletePool deletes the pool id and returns it as it was. Its idle
// workspaces are deleted after the call returns; leased ones stay with
// their lessees, out of the pool.
func (c *Client) DeletePool(ctx context.Context, id string) (*Pool, error) {
	return doInto[Pool](ctx, c, http.MethodDelete, "/v1/pools/"+seg(id), nil, nil)
}

// LeasePool takes a workspace from the pool id: an idle running one when
// there is one, else a new one of the pool's template.
func (c *Client) LeasePool(ctx context.Context, id string, req LeaseRequest) (*Lease, error) {
	var body any
	if len(req.Labels) > 0 {
		body = req
	}
	return doInto[Lease](ctx, c, http.MethodPost, "/v1/pools/"+seg(id)+"/lease", nil, body)
}
