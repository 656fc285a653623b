// Package connector is the platform's data plane to workspace runtimes: it
// finds a workspace's runtime through its backend and hands out the pooled
// connection to it. The API's exec, file and session tool calls and the
// activities' probes and provisions share one Connector, so a workspace has
// one WebSocket whoever calls.
//
// The control plane reads API -> workflows -> activities -> backend; the
// data plane reads API -> connector -> runtime.
package connector

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/wire"
)

// Connector finds a workspace's runtime and hands out the pooled connection
// to it. The activities (probe, provision) and the API (files, exec) share
// one Connector, so a workspace has one WebSocket whoever calls.
type Connector struct {
	Store    *models.Store
	Backends *backend.Registry
	Pool     *client.Pool
}

// Client returns the connection to ws's runtime, dialing it when the pool
// has none. It asks the backend for the endpoint every time: a backend whose
// runtime lives in the platform process serves it again there after a
// restart. A workspace without a handle yet is a Precondition error.
func (c *Connector) Client(ctx context.Context, ws *wire.Workspace) (*client.Client, error) {
	h, ok, err := backend.DecodeHandle(ws.ID, ws.Handle)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errs.E(errs.Precondition, "workspace %s: not provisioned yet", ws.ID)
	}
	return c.ClientFor(ctx, ws, h)
}

// ClientFor is Client with the handle already known (a provision that has
// not stored it yet).
func (c *Connector) ClientFor(ctx context.Context, ws *wire.Workspace, h backend.Handle) (*client.Client, error) {
	cl, err := c.Connect(ctx, ws, h)
	if err != nil {
		return nil, errs.Within("workspace "+ws.ID, err)
	}
	return cl, nil
}

// Connect resolves the endpoint and gets the pooled client. Its errors name
// the step that failed but not the workspace, so a probe can use them as its
// miss reason as they are.
func (c *Connector) Connect(ctx context.Context, ws *wire.Workspace, h backend.Handle) (*client.Client, error) {
	if ws.RuntimeToken == "" {
		return nil, errs.E(errs.Precondition, "no runtime token yet")
	}
	_, b, err := c.Backend(ctx, ws)
	if err != nil {
		return nil, err
	}
	return c.ConnectBackend(ctx, b, ws, h)
}

// Backend reads ws's provider and returns it and its backend, with errors
// worded as Connect's.
func (c *Connector) Backend(ctx context.Context, ws *wire.Workspace) (*wire.Provider, backend.Backend, error) {
	p, err := c.Store.GetProvider(ctx, ws.ProviderID)
	if err != nil {
		return nil, nil, fmt.Errorf("provider: %w", err)
	}
	b, err := c.Backends.For(p)
	if err != nil {
		return nil, nil, fmt.Errorf("provider %s: %w", p.ID, err)
	}
	return p, b, nil
}

// ConnectBackend is Connect with ws's backend already resolved (Backend):
// the liveness Prober holds it with the workspace's row, so a healthy
// workspace's probe reads no row.
func (c *Connector) ConnectBackend(ctx context.Context, b backend.Backend, ws *wire.Workspace, h backend.Handle) (*client.Client, error) {
	if ws.RuntimeToken == "" {
		return nil, errs.E(errs.Precondition, "no runtime token yet")
	}
	var ep backend.Endpoint
	var err error
	rh, hosted := b.(backend.RuntimeHost)
	if !hosted {
		// A live connection needs no endpoint lookup (for a container, an
		// engine call); a dead one is dropped and the endpoint asked again.
		if cl, ok := c.Pool.Live(ws.ID, ws.RuntimeToken); ok {
			return cl, nil
		}
	}
	if hosted {
		// The runtime lives in this process: after a restart it is served
		// again, with the template's env, which the handle never holds. The
		// template is read only then, not on every call.
		ep, err = rh.ServeRuntime(ctx, h, ws.RuntimeToken, func(ctx context.Context) (map[string]string, error) {
			return c.templateEnv(ctx, ws)
		})
	} else {
		ep, err = b.Endpoint(ctx, h, ws.RuntimeToken)
	}
	if err != nil {
		return nil, fmt.Errorf("runtime endpoint: %w", err)
	}
	cl, err := c.Pool.Get(ctx, ws.ID, ep.URL, ws.RuntimeToken)
	if errs.Is(err, errs.Forbidden) {
		if tk, ok := b.(backend.TokenKeeper); ok {
			cl, err = c.reattach(ctx, ws, h, tk, ep, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("runtime connect: %w", err)
	}
	return cl, nil
}

// reattach takes the runtime token the backend keeps when the runtime
// refused the stored one, connects with it and stores it: the sandbox is
// the truth about its own token. refused is returned when the backend's
// token is the stored one or is refused too.
func (c *Connector) reattach(ctx context.Context, ws *wire.Workspace, h backend.Handle, tk backend.TokenKeeper, ep backend.Endpoint, refused error) (*client.Client, error) {
	token, err := tk.RuntimeToken(ctx, h)
	switch {
	case err != nil:
		// Both reasons stay in the message: the refusal is the error's
		// kind, and why re-attaching did not help is what an operator needs.
		return nil, fmt.Errorf("%w; re-attach: %v", refused, err)
	case token == "" || token == ws.RuntimeToken:
		return nil, refused
	}
	cl, err := c.Pool.Get(ctx, ws.ID, ep.URL, token)
	if err != nil {
		return nil, fmt.Errorf("%w; re-attach with the backend's token: %v", refused, err)
	}
	if err := c.Store.SetWorkspaceRuntime(ctx, ws.ID, ws.Handle, ws.Path, token); err != nil {
		c.Drop(ws.ID)
		return nil, fmt.Errorf("store the runtime token kept by the backend: %w", err)
	}
	ws.RuntimeToken = token
	return cl, nil
}

// templateEnv returns the env of the workspace's template.
func (c *Connector) templateEnv(ctx context.Context, ws *wire.Workspace) (map[string]string, error) {
	t, err := c.Store.GetTemplate(ctx, ws.TemplateID)
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	var common backend.Common
	if err := json.Unmarshal(t.Backend, &common); err != nil {
		return nil, errs.E(errs.Invalid, "template %s: backend: %w", t.ID, err)
	}
	return c.WorkspaceEnv(ctx, ws.ID, common)
}

// WorkspaceEnv is the environment a workspace of a template with common
// starts with: the template's env, and with a model gateway the variables
// pointing at it and the workspace's gateway credential (never a key).
func (c *Connector) WorkspaceEnv(ctx context.Context, workspaceID string, common backend.Common) (map[string]string, error) {
	if common.ModelGateway == nil {
		return common.Env, nil
	}
	cred, err := c.Store.GatewayCredential(ctx, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("model gateway credential: %w", err)
	}
	return backend.GatewayEnv(common.Env, common.ModelGateway, common.ModelGateway.PortFor(common.Kind, workspaceID), cred), nil
}

// Drop closes the pooled connection of a workspace, if any.
func (c *Connector) Drop(workspaceID string) {
	if c != nil && c.Pool != nil {
		c.Pool.Drop(workspaceID)
	}
}
