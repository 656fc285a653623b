package client

import (
	"context"
	"net/http"

	"github.com/primerhq/primer/wire"
)

// ExtendRequest is the body of POST /v1/workspaces/{id}/extend: one of By
// (a Go duration added to each deadline) and Until (an RFC 3339 time).
type ExtendRequest struct {
	By    string `json:"by,omitempty"`
	Until string `json:"until,omitempty"`
}

// ExtendWorkspace pushes a workspace's deadlines (expires_at, its lease,
// its idle deadline) out, never past its max_expires_at.
func (c *Client) ExtendWorkspace(ctx context.Context, id string, req ExtendRequest) (*wire.Workspace, error) {
	return doInto[wire.Workspace](ctx, c, http.MethodPost, "/v1/workspaces/"+seg(id)+"/extend", nil, req)
}
