package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// ReplaceInput names the workspace whose sandbox is replaced by stale
// recovery, with the handle the workflow holds (nil when provisioning
// never succeeded).
type ReplaceInput struct {
	WorkspaceID string
	Handle      *backend.Handle
}

// RecoveredInput says which recovery attempt brought a workspace back and
// since when its sessions were lost.
type RecoveredInput struct {
	WorkspaceID string
	Attempt     int
	// LostSince is when the workspace went failed; sessions that ended
	// workspace_lost since then are resumed. Zero resumes every lost one.
	LostSince time.Time
}

// ResumedSession is a new session opened on a replacement for one lost
// with the old sandbox.
type ResumedSession struct {
	ID          string `json:"id"`
	ResumedFrom string `json:"resumed_from"`
}

// RecoveredOutput lists the sessions resumed on the replacement.
type RecoveredOutput struct {
	Sessions []ResumedSession
}

// WebhookInput is one notification to a template's webhook. The URL is
// read from the template, never passed through history: it may carry a
// token.
type WebhookInput struct {
	WorkspaceID string
	Event       string
	Phase       string
	Reason      string
	Attempts    int
}

// WebhookOutput is the receiver's HTTP status.
type WebhookOutput struct {
	Status int
}

// ResetInput names a returned pool workspace to reset.
type ResetInput struct {
	WorkspaceID string
}

// ResetOutput says what the reset stopped and ended.
type ResetOutput struct {
	Killed        int
	SessionsEnded int
}

// WebhookTimeout bounds one webhook delivery (a workspace's escalation, an
// eval run's end).
const WebhookTimeout = 10 * time.Second

// lostSlack widens the window of lost sessions to resume: the workflow's
// clock and the database's may differ a little.
const lostSlack = 10 * time.Second

// Replace tears a workspace's sandbox down and provisions a replacement
// under the same workspace id, with a new runtime token. Backends that can
// (backend.Keeper) keep the sandbox's data, so the replacement finds the
// workspace's files and its .state history; template files are then written
// only where missing, and init commands run again (what they set up outside
// the workspace went with the old sandbox). It is safe to retry: every try
// tears down whatever the last one left and provisions again.
func (a *Activities) Replace(ctx context.Context, in ReplaceInput) (ProvisionOutput, error) {
	defer KeepAliveInterruptible(ctx)()
	var step string
	dctx, cancel, ranOut := beforeDeadline(ctx)
	defer cancel()
	h, err := a.replace(dctx, in, &step)
	if err != nil {
		return ProvisionOutput{}, interrupted(ctx, timedOut(err, ranOut(), in.WorkspaceID, "replace", step))
	}
	return ProvisionOutput{Handle: h}, nil
}

func (a *Activities) replace(ctx context.Context, in ReplaceInput, step *string) (backend.Handle, error) {
	id := in.WorkspaceID
	ws, err := a.Store.GetWorkspace(ctx, id)
	if err != nil {
		return backend.Handle{}, errs.Within("workspace "+id+": replace", err)
	}
	// Refused replacements leave the old sandbox alone; provision checks
	// again (with the quota) before it makes the new one.
	if err := a.mayMakeWorkspace(ctx, ws); err != nil {
		return backend.Handle{}, err
	}
	b, err := BackendFor(ctx, a.Store, a.Backends, ws)
	if err != nil {
		return backend.Handle{}, errs.Within("workspace "+id+": replace", err)
	}
	h := backend.Handle{Backend: ws.Backend, WorkspaceID: id}
	if in.Handle != nil {
		h = *in.Handle
	} else if stored, ok, err := backend.DecodeHandle(ws.ID, ws.Handle); err == nil && ok {
		h = stored
	}
	a.Connector.Drop(id)
	if k, ok := b.(backend.Keeper); ok {
		err = k.Teardown(ctx, h)
	} else {
		err = b.Destroy(ctx, h)
	}
	if err != nil {
		return backend.Handle{}, RedactErr(fmt.Errorf("workspace %s: replace: tear down: %w", id, err), ws.RuntimeToken)
	}
	// A new token: whoever held the old one (the old sandbox's processes)
	// cannot reach the replacement.
	if err := a.Store.SetWorkspaceRuntime(ctx, id, nil, ws.Path, models.NewToken()); err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: replace: store runtime token: %w", id, err)
	}
	h, err = a.provision(ctx, id, true, step)
	if err != nil {
		// A replacement that does not come up must not keep running while
		// the workspace is failed or escalated: tear it down again, keeping
		// the data, on a context that outlives this attempt's.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		a.Connector.Drop(id)
		var terr error
		if k, ok := b.(backend.Keeper); ok {
			terr = k.Teardown(tctx, backend.Handle{Backend: ws.Backend, WorkspaceID: id})
		}
		if terr != nil {
			a.logger().Warn("tear down a failed replacement", "workspace_id", id, "error", terr)
		}
		return backend.Handle{}, err
	}
	return h, nil
}

// Recovered finishes a recovery: every session lost with the old sandbox
// gets a new open session on the replacement, linked by resumed_from, and
// workspace.recovered says which. It runs as a local activity and is
// idempotent: a session is resumed once.
func (a *Activities) Recovered(ctx context.Context, in RecoveredInput) (RecoveredOutput, error) {
	since := in.LostSince
	if !since.IsZero() {
		since = since.Add(-lostSlack)
	}
	ss, err := a.Store.ResumeLostSessions(ctx, in.WorkspaceID, since)
	if err != nil {
		return RecoveredOutput{}, Classify(errs.Within("workspace "+in.WorkspaceID+": resume sessions", err))
	}
	out := RecoveredOutput{Sessions: make([]ResumedSession, 0, len(ss))}
	for _, s := range ss {
		out.Sessions = append(out.Sessions, ResumedSession{ID: s.ID, ResumedFrom: s.ResumedFrom})
	}
	if _, err := a.recordEvent(ctx, in.WorkspaceID, wire.EventRecovered, map[string]any{
		"attempt":  in.Attempt,
		"sessions": out.Sessions,
	}); err != nil {
		return RecoveredOutput{}, Classify(err)
	}
	a.logger().Info("workspace recovered", "workspace_id", in.WorkspaceID, "attempt", in.Attempt, "sessions_resumed", len(ss))
	return out, nil
}

// NotifyWebhook POSTs a JSON notice of an escalation to the template's
// recovery.webhook_url. A 4xx answer is not retried; a 5xx or a network
// error is. Errors and logs name the receiver's host only: the URL may
// carry a token.
func (a *Activities) NotifyWebhook(ctx context.Context, in WebhookInput) (WebhookOutput, error) {
	out, err := a.notifyWebhook(ctx, in)
	if err != nil {
		return WebhookOutput{}, Classify(err)
	}
	return out, nil
}

func (a *Activities) notifyWebhook(ctx context.Context, in WebhookInput) (WebhookOutput, error) {
	ws, err := a.Store.GetWorkspace(ctx, in.WorkspaceID)
	if err != nil {
		return WebhookOutput{}, errs.Within("workspace "+in.WorkspaceID+": webhook", err)
	}
	common, err := TemplateCommon(ctx, a.Store, ws.TemplateID)
	if err != nil {
		return WebhookOutput{}, errs.Within("workspace "+in.WorkspaceID+": webhook", err)
	}
	if common.Recovery == nil || common.Recovery.WebhookURL == "" {
		return WebhookOutput{}, nil
	}
	target := common.Recovery.WebhookURL
	host := target
	if u, err := url.Parse(target); err == nil {
		host = u.Scheme + "://" + u.Host
	}
	body, err := json.Marshal(map[string]any{
		"event":        in.Event,
		"workspace_id": ws.ID,
		"template_id":  ws.TemplateID,
		"provider_id":  ws.ProviderID,
		"backend":      ws.Backend,
		"phase":        in.Phase,
		"reason":       in.Reason,
		"attempts":     in.Attempts,
		"time":         time.Now().UTC().Format(time.RFC3339Nano),
	})
	if err != nil {
		return WebhookOutput{}, errs.E(errs.Invalid, "workspace %s: webhook: encode: %w", ws.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return WebhookOutput{}, errs.E(errs.Invalid, "workspace %s: webhook %s: bad request", ws.ID, host)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "primer")
	resp, err := a.outboundClient().Do(req)
	if err != nil && outbound.IsRefused(err) {
		// Refused again on every attempt: not retried.
		return WebhookOutput{}, errs.E(errs.Forbidden, "workspace %s: webhook %s: refused by the outbound policy (%s)", ws.ID, host, outbound.Env)
	}
	if err != nil {
		// The client's error quotes the whole URL: say only the host.
		return WebhookOutput{}, errs.E(errs.Unavailable, "workspace %s: webhook %s: not delivered", ws.ID, host)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		a.logger().Info("webhook delivered", "workspace_id", ws.ID, "event", in.Event, "host", host, "status", resp.StatusCode)
		return WebhookOutput{Status: resp.StatusCode}, nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return WebhookOutput{}, errs.E(errs.Invalid, "workspace %s: webhook %s: refused with status %d", ws.ID, host, resp.StatusCode)
	default:
		return WebhookOutput{}, errs.E(errs.Unavailable, "workspace %s: webhook %s: status %d", ws.ID, host, resp.StatusCode)
	}
}

// Reset makes a returned pool workspace as good as new: the runtime stops
// every process and empties the workspace, the template's files and init
// commands are applied again, the lessee's sessions end
// (workspace_returned), and the workspace is idle in its pool again.
func (a *Activities) Reset(ctx context.Context, in ResetInput) (ResetOutput, error) {
	defer KeepAliveInterruptible(ctx)()
	out, err := a.reset(ctx, in)
	if err != nil {
		return ResetOutput{}, interrupted(ctx, Classify(err))
	}
	return out, nil
}

func (a *Activities) reset(ctx context.Context, in ResetInput) (ResetOutput, error) {
	id := in.WorkspaceID
	ws, err := a.Store.GetWorkspace(ctx, id)
	if err != nil {
		return ResetOutput{}, errs.Within("workspace "+id+": reset", err)
	}
	if ws.PoolID == "" {
		return ResetOutput{}, errs.E(errs.Invalid, "workspace %s: reset: not in a pool", id)
	}
	tmpl, err := a.Store.GetTemplate(ctx, ws.TemplateID)
	if err != nil {
		return ResetOutput{}, errs.Within("workspace "+id+": reset: template "+ws.TemplateID, err)
	}
	cl, err := a.Connector.Client(ctx, ws)
	if err != nil {
		return ResetOutput{}, errs.Within("workspace "+id+": reset", err)
	}
	res, _, err := a.resetSandbox(ctx, cl, ws, tmpl)
	if err != nil {
		return ResetOutput{}, err
	}
	ended, err := a.Store.EndWorkspaceSessions(ctx, id, wire.ReasonWorkspaceReturned)
	if err != nil {
		return ResetOutput{}, fmt.Errorf("workspace %s: reset: end sessions: %w", id, err)
	}
	if err := a.Store.SetPoolState(ctx, id, wire.PoolReturning, wire.PoolIdle); err != nil && !errs.Is(err, errs.Conflict) {
		return ResetOutput{}, errs.Within("workspace "+id+": reset", err)
	}
	out := ResetOutput{Killed: res.Killed, SessionsEnded: len(ended)}
	if _, err := a.recordEvent(ctx, id, wire.EventReturned, map[string]any{
		"pool_id": ws.PoolID, "killed": out.Killed, "sessions_ended": out.SessionsEnded,
	}); err != nil {
		return ResetOutput{}, err
	}
	if a.Lifecycle != nil {
		if err := a.Lifecycle.NotifyPool(ctx, ws.PoolID); err != nil {
			a.logger().Warn("notify pool after return", "workspace_id", id, "pool_id", ws.PoolID, "error", err)
		}
	}
	a.logger().Info("workspace returned to its pool", "workspace_id", id, "pool_id", ws.PoolID, "killed", out.Killed)
	return out, nil
}

// TemplateCommon reads the common part of a template's backend document.
func TemplateCommon(ctx context.Context, store *models.Store, templateID string) (backend.Common, error) {
	tmpl, err := store.GetTemplate(ctx, templateID)
	if err != nil {
		return backend.Common{}, fmt.Errorf("template %s: %w", templateID, err)
	}
	return CommonOf(tmpl)
}

// CommonOf decodes the common part of tmpl's backend document.
func CommonOf(tmpl *wire.Template) (backend.Common, error) {
	var common backend.Common
	if len(tmpl.Backend) > 0 {
		if err := json.Unmarshal(tmpl.Backend, &common); err != nil {
			return common, errs.E(errs.Invalid, "template %s: backend: %w", tmpl.ID, err)
		}
	}
	return common, nil
}
