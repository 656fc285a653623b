package client

import (
	"context"
	"net/http"

	"github.com/primerhq/primer/wire"
)

// Created is the answer of a create: the workspace and where it came from,
// LeaseWarm (an idle member of a pool of the template, running already) or
// LeaseCold (a new workspace, still pending; see WaitWorkspace).
type Created struct {
	wire.Workspace
	Source string `json:"source"`
}

// Create creates a workspace like CreateWorkspace and also says where it
// came from.
func (c *Client) Create(ctx context.Context, req CreateWorkspaceRequest) (*Created, error) {
	return doInto[Created](ctx, c, http.MethodPost, "/v1/workspaces", nil, req)
}
