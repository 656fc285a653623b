package client

import (
	"context"
	"net/http"

	"github.com/primerhq/primer/wire"
)

// ExtendWorkspace pushes a workspace's deadlines (expires_at, its lease,
// its idle deadline) out, never past its max_expires_at.
func (c *Client) ExtendWorkspace(ctx context.Context, id string, req wire.ExtendRequest) (*wire.Workspace, error) {
	return doInto[wire.Workspace](ctx, c, http.MethodPost, "/v1/workspaces/"+seg(id)+"/extend", nil, req)
}
