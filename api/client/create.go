package client

import (
	"context"
	"net/http"

	"github.com/primerhq/primer/wire"
)

// Create creates a workspace like CreateWorkspace and also says where it
// came from.
func (c *Client) Create(ctx context.Context, req wire.CreateWorkspaceRequest) (*wire.Created, error) {
	return doInto[wire.Created](ctx, c, http.MethodPost, "/v1/workspaces", nil, req)
}
