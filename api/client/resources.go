package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// TemplateListOptions filters ListTemplates. Empty fields match all.
type TemplateListOptions struct {
	ProviderID string
}

// WorkspaceListOptions filters ListWorkspaces. Empty fields match all.
type WorkspaceListOptions struct {
	Phase      string
	TemplateID string
	ProviderID string
	Backend    string
	PoolID     string
	PoolState  string // idle, leased or returning
	Limit      int    // 0: no limit
}

// SessionListOptions filters ListSessions. Empty fields match all.
type SessionListOptions struct {
	WorkspaceID string
	Status      string
}

// query builds url.Values from name/value pairs, skipping empty values.
func query(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

// CreateProvider creates a provider.
func (c *Client) CreateProvider(ctx context.Context, spec wire.ProviderSpec) (*wire.Provider, error) {
	return doInto[wire.Provider](ctx, c, http.MethodPost, "/v1/providers", nil, spec)
}

// GetProvider returns the provider id.
func (c *Client) GetProvider(ctx context.Context, id string) (*wire.Provider, error) {
	return doInto[wire.Provider](ctx, c, http.MethodGet, "/v1/providers/"+seg(id), nil, nil)
}

// ListProviders returns every provider.
func (c *Client) ListProviders(ctx context.Context) ([]wire.Provider, error) {
	return listInto[wire.Provider](ctx, c, "/v1/providers", nil)
}

// UpdateProvider replaces the provider id with spec (spec.ID may be empty).
func (c *Client) UpdateProvider(ctx context.Context, id string, spec wire.ProviderSpec) (*wire.Provider, error) {
	return doInto[wire.Provider](ctx, c, http.MethodPut, "/v1/providers/"+seg(id), nil, spec)
}

// DeleteProvider deletes the provider id.
func (c *Client) DeleteProvider(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/providers/"+seg(id), nil, nil, nil)
}

// CreateTemplate creates a template.
func (c *Client) CreateTemplate(ctx context.Context, spec wire.TemplateSpec) (*wire.Template, error) {
	return doInto[wire.Template](ctx, c, http.MethodPost, "/v1/templates", nil, spec)
}

// GetTemplate returns the template id.
func (c *Client) GetTemplate(ctx context.Context, id string) (*wire.Template, error) {
	return doInto[wire.Template](ctx, c, http.MethodGet, "/v1/templates/"+seg(id), nil, nil)
}

// ListTemplates returns the templates opts selects.
func (c *Client) ListTemplates(ctx context.Context, opts TemplateListOptions) ([]wire.Template, error) {
	q := query("provider_id", opts.ProviderID)
	return listInto[wire.Template](ctx, c, "/v1/templates", q)
}

// UpdateTemplate replaces the template id with spec (spec.ID may be empty).
func (c *Client) UpdateTemplate(ctx context.Context, id string, spec wire.TemplateSpec) (*wire.Template, error) {
	return doInto[wire.Template](ctx, c, http.MethodPut, "/v1/templates/"+seg(id), nil, spec)
}

// DeleteTemplate deletes the template id.
func (c *Client) DeleteTemplate(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/templates/"+seg(id), nil, nil, nil)
}

// CreateWorkspace creates a workspace; it is returned in phase pending while
// its workflow provisions it (see WaitWorkspace).
func (c *Client) CreateWorkspace(ctx context.Context, req wire.CreateWorkspaceRequest) (*wire.Workspace, error) {
	return doInto[wire.Workspace](ctx, c, http.MethodPost, "/v1/workspaces", nil, req)
}

// GetWorkspace returns the workspace id; NotFound once it is destroyed.
func (c *Client) GetWorkspace(ctx context.Context, id string) (*wire.Workspace, error) {
	return doInto[wire.Workspace](ctx, c, http.MethodGet, "/v1/workspaces/"+seg(id), nil, nil)
}

// ListWorkspaces returns the workspaces opts selects, newest first.
func (c *Client) ListWorkspaces(ctx context.Context, opts WorkspaceListOptions) ([]wire.Workspace, error) {
	q := query("phase", opts.Phase, "template_id", opts.TemplateID, "provider_id", opts.ProviderID, "backend", opts.Backend,
		"pool_id", opts.PoolID, "pool_state", opts.PoolState)
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	return listInto[wire.Workspace](ctx, c, "/v1/workspaces", q)
}

// DeleteWorkspace asks for the workspace to be destroyed and returns it in
// phase terminating; WaitGone waits until it is.
func (c *Client) DeleteWorkspace(ctx context.Context, id string) (*wire.Workspace, error) {
	return doInto[wire.Workspace](ctx, c, http.MethodDelete, "/v1/workspaces/"+seg(id), nil, nil)
}

// ReturnWorkspace gives a workspace leased from a pool back to it; it is
// returned with pool state returning while its workflow resets it.
func (c *Client) ReturnWorkspace(ctx context.Context, id string) (*wire.Workspace, error) {
	return doInto[wire.Workspace](ctx, c, http.MethodPost, "/v1/workspaces/"+seg(id)+"/return", nil, nil)
}

// RecoverWorkspace asks an escalated or failed workspace's workflow to try
// a replacement now.
func (c *Client) RecoverWorkspace(ctx context.Context, id string) (*wire.Workspace, error) {
	return doInto[wire.Workspace](ctx, c, http.MethodPost, "/v1/workspaces/"+seg(id)+"/recover", nil, nil)
}

// WaitWorkspace polls the workspace id until it is in phase and returns it.
// progress, if not nil, sees the workspace at first and at every change of
// phase or reason. Waiting for running fails when the workspace ends failed
// or escalated, or starts terminating (it will not get there by itself); an error from a
// poll after the first that says the server is unavailable is retried, so a
// server restart does not end the wait. ctx bounds the wait.
func (c *Client) WaitWorkspace(ctx context.Context, id, phase string, progress func(*wire.Workspace)) (*wire.Workspace, error) {
	var last *wire.Workspace
	tick := time.NewTicker(c.pollInterval)
	defer tick.Stop()
	for {
		w, err := c.GetWorkspace(ctx, id)
		switch {
		case err == nil:
			if progress != nil && (last == nil || last.Phase != w.Phase || last.Reason != w.Reason) {
				progress(w)
			}
			last = w
			if w.Phase == phase {
				return w, nil
			}
			if phase == wire.PhaseRunning && (w.Phase == wire.PhaseFailed || w.Phase == wire.PhaseEscalated || w.Phase == wire.PhaseTerminating) {
				if w.Reason != "" {
					return w, errs.E(errs.Precondition, "workspace %s: %s: %s", id, w.Phase, w.Reason)
				}
				return w, errs.E(errs.Precondition, "workspace %s: %s", id, w.Phase)
			}
		case last != nil && retryable(err) && ctx.Err() == nil:
			// A server restart or overload mid-wait: keep polling.
		default:
			return last, waitError(ctx, id, phase, last, err)
		}
		select {
		case <-ctx.Done():
			return last, waitError(ctx, id, phase, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// WaitGone polls until the workspace id no longer exists (GET is 404).
// progress, if not nil, sees the workspace at every change of phase or reason.
func (c *Client) WaitGone(ctx context.Context, id string, progress func(*wire.Workspace)) error {
	var last *wire.Workspace
	tick := time.NewTicker(c.pollInterval)
	defer tick.Stop()
	for {
		w, err := c.GetWorkspace(ctx, id)
		switch {
		case err == nil:
			if progress != nil && (last == nil || last.Phase != w.Phase || last.Reason != w.Reason) {
				progress(w)
			}
			last = w
		case errs.Is(err, errs.NotFound):
			return nil
		case last != nil && retryable(err) && ctx.Err() == nil:
		default:
			return waitError(ctx, id, "gone", last, err)
		}
		select {
		case <-ctx.Done():
			return waitError(ctx, id, "gone", last, ctx.Err())
		case <-tick.C:
		}
	}
}

// retryable reports whether a poll error is worth another poll.
func retryable(err error) bool {
	k := errs.KindOf(err)
	return k == errs.Unavailable || k == errs.Timeout
}

// waitError says what the workspace was doing when the wait ended.
func waitError(ctx context.Context, id, phase string, last *wire.Workspace, err error) error {
	if ctx.Err() != nil && last != nil {
		kind := errs.Timeout
		if ctx.Err() == context.Canceled {
			kind = errs.Canceled
		}
		return wrap(kind, err, "workspace %s: wait for %s: still %s", id, phase, last.Phase)
	}
	return wrap(errs.KindOf(err), err, "workspace %s: wait for %s", id, phase)
}

// CreateSession opens a session on a workspace.
func (c *Client) CreateSession(ctx context.Context, req wire.CreateSessionRequest) (*wire.Session, error) {
	return doInto[wire.Session](ctx, c, http.MethodPost, "/v1/sessions", nil, req)
}

// GetSession returns the session id.
func (c *Client) GetSession(ctx context.Context, id string) (*wire.Session, error) {
	return doInto[wire.Session](ctx, c, http.MethodGet, "/v1/sessions/"+seg(id), nil, nil)
}

// ListSessions returns the sessions opts selects.
func (c *Client) ListSessions(ctx context.Context, opts SessionListOptions) ([]wire.Session, error) {
	q := query("workspace_id", opts.WorkspaceID, "status", opts.Status)
	return listInto[wire.Session](ctx, c, "/v1/sessions", q)
}

// EndSession ends the session id with reason (empty: the server's default,
// ended_by_user). An ended session keeps its first reason.
func (c *Client) EndSession(ctx context.Context, id, reason string) (*wire.Session, error) {
	body := struct {
		Reason string `json:"reason,omitempty"`
	}{reason}
	return doInto[wire.Session](ctx, c, http.MethodPost, "/v1/sessions/"+seg(id)+"/end", nil, body)
}

// doInto makes a JSON call whose answer is one T.
func doInto[T any](ctx context.Context, c *Client, method, path string, q url.Values, body any) (*T, error) {
	var out T
	if err := c.doJSON(ctx, method, path, q, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// listInto makes a GET whose answer is {"items": [T...]}.
func listInto[T any](ctx context.Context, c *Client, path string, q url.Values) ([]T, error) {
	var out wire.Items[T]
	if err := c.doJSON(ctx, http.MethodGet, path, q, nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}
