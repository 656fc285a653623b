package e2b

import (
	"context"
	"net/http"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// E2B's sandbox states (ListedSandbox.state).
const (
	stateRunning = "running"
	statePaused  = "paused"
)

// pauseWait bounds how long a pause or a connect's resume waits for the
// workspace to get there: E2B answers both once they are done (the SDK
// uses a resumed sandbox at once), and a pause stops the sandbox's
// compute, which a slow engine may take a while to do.
const pauseWait = 5 * time.Minute

// state is w's E2B state: paused while its compute is stopped, running
// otherwise (pending, failed and escalated workspaces are alive: their
// workflow is bringing them up or back).
func state(w *wire.Workspace) string {
	if w.Phase == wire.PhasePaused {
		return statePaused
	}
	return stateRunning
}

// pauseSandbox pauses the sandbox through /v1 and answers once it is
// paused, as E2B's pause does: 204; 409 when it is paused already; 404
// when there is none (to this caller) or it is being killed. /v1 refuses a
// viewer 403 before it looks at the id, so the door asks /v1 first.
func (d *Door) pauseSandbox(w http.ResponseWriter, r *http.Request, api *client.Client) {
	ctx := r.Context()
	id := r.PathValue("id")
	ws, err := api.PauseWorkspace(ctx, id, wire.PauseRequest{})
	switch {
	case errs.Is(err, errs.NotFound):
		d.fail(w, notFound(id))
		return
	case errs.Is(err, errs.Conflict) || errs.Is(err, errs.Precondition):
		// /v1 says the workspace is in no state to pause: paused already
		// (409, as E2B), or terminating (gone to E2B: 404).
		cur, gerr := d.workspace(ctx, api, id)
		switch {
		case gerr != nil:
			d.fail(w, gerr)
		case cur.Phase == wire.PhasePaused:
			d.fail(w, errs.E(errs.Conflict, "sandbox %s: already paused", id))
		default:
			d.fail(w, err)
		}
		return
	case err != nil:
		d.fail(w, err)
		return
	case gone(ws):
		d.fail(w, notFound(id))
		return
	case ws.Phase == wire.PhasePaused:
		// /v1 answers a workspace as it was when the pause was asked.
		d.fail(w, errs.E(errs.Conflict, "sandbox %s: already paused", id))
		return
	}
	if _, err := d.waitPhase(ctx, api, id, wire.PhasePaused); err != nil {
		d.fail(w, err)
		return
	}
	d.log.Info("e2b sandbox paused", "workspace_id", id)
	w.WriteHeader(http.StatusNoContent)
}

// resume starts the paused sandbox ws again through /v1 and waits until it
// runs. A resume that does not come back leaves the workspace as its
// workflow has it (failed or escalated, its files kept): unlike a create's
// sandbox, the caller's work is in it.
func (d *Door) resume(ctx context.Context, api *client.Client, ws *wire.Workspace) (*wire.Workspace, error) {
	if _, err := api.ResumeWorkspace(ctx, ws.ID); err != nil {
		if errs.Is(err, errs.NotFound) {
			return nil, notFound(ws.ID)
		}
		return nil, err
	}
	got, err := d.waitPhase(ctx, api, ws.ID, wire.PhaseRunning)
	if err != nil {
		return nil, err
	}
	d.log.Info("e2b sandbox resumed", "workspace_id", ws.ID)
	return got, nil
}

// waitPhase waits, within pauseWait, until workspace id is in phase. A
// workspace that fails, escalates or is killed meanwhile ends the wait: it
// will not get there.
func (d *Door) waitPhase(ctx context.Context, api *client.Client, id, phase string) (*wire.Workspace, error) {
	wctx, cancel := context.WithTimeout(ctx, pauseWait)
	defer cancel()
	var ended *wire.Workspace
	got, err := api.WaitWorkspace(wctx, id, phase, func(w *wire.Workspace) {
		switch w.Phase {
		case wire.PhaseFailed, wire.PhaseEscalated, wire.PhaseTerminating:
			ended = w
			cancel()
		}
	})
	switch {
	case ended != nil && gone(ended):
		return nil, notFound(id)
	case ended != nil:
		return nil, errs.E(errs.Unavailable, "sandbox %s: %s, not %s: %s", id, ended.Phase, phase, ended.Reason)
	case errs.Is(err, errs.NotFound):
		return nil, notFound(id)
	case err != nil && ctx.Err() == nil && wctx.Err() != nil:
		return nil, errs.E(errs.Timeout, "sandbox %s: not %s within %s", id, phase, pauseWait)
	}
	return got, err
}
