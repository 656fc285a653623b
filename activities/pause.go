package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// PauseInput asks for a workspace's compute to stop, its files kept.
type PauseInput struct {
	WorkspaceID string
	// Mode is wire.SnapshotModeFilesystem (empty means it) or
	// wire.SnapshotModeFull.
	Mode string
	// Reason is recorded with workspace.paused.
	Reason string
	// Handle is the handle the workflow holds; used when the row has none.
	Handle *backend.Handle `json:",omitempty"`
}

// PauseOutput is the paused sandbox's handle (which may differ from the
// running one's).
type PauseOutput struct {
	Handle backend.Handle
}

// ResumeInput asks for a paused workspace's compute to start again.
type ResumeInput struct {
	WorkspaceID string
	// Reason is recorded with workspace.resumed.
	Reason string
	// Handle is the handle the workflow holds; used when the row has none.
	Handle *backend.Handle `json:",omitempty"`
}

// ResumeOutput is the resumed sandbox's handle.
type ResumeOutput struct {
	Handle backend.Handle
}

// Pause stops a workspace's compute through its backend's Pauser and
// keeps its files (and, in full mode, its processes' state): it stores
// the paused sandbox's handle and the pause's mode, stops this worker's
// Prober from watching the workspace, and records workspace.paused. The
// workflow then moves the phase to paused. A backend without a Pauser, or
// without full snapshots for a full pause, fails it for good (Invalid).
func (a *Activities) Pause(ctx context.Context, in PauseInput) (PauseOutput, error) {
	defer KeepAlive(ctx)()
	h, err := a.pause(ctx, in)
	if err != nil {
		return PauseOutput{}, Classify(err)
	}
	return PauseOutput{Handle: h}, nil
}

func (a *Activities) pause(ctx context.Context, in PauseInput) (backend.Handle, error) {
	what := "workspace " + in.WorkspaceID + ": pause"
	ws, p, h, err := a.pauserOf(ctx, in.WorkspaceID, in.Handle, what)
	if err != nil {
		return backend.Handle{}, err
	}
	mode := in.Mode
	if mode == "" {
		mode = wire.SnapshotModeFilesystem
	}
	if mode != wire.SnapshotModeFilesystem {
		b, err := BackendFor(ctx, a.Store, a.Backends, ws)
		if err != nil {
			return backend.Handle{}, errs.Within(what, err)
		}
		if _, err := snapshotterOf(b, ws.Backend, mode); err != nil {
			return backend.Handle{}, errs.Within(what, err)
		}
	}
	// The tenant's max_paused is checked, and the pause counted, before
	// the backend pauses: two pauses at once cannot both take the last
	// place.
	if err := a.Store.ReservePause(ctx, ws, mode); err != nil {
		return backend.Handle{}, errs.Within(what, err)
	}
	if pr := a.proberFor(ctx); pr != nil {
		pr.Unwatch(in.WorkspaceID)
	}
	nh, err := p.Pause(ctx, h, mode)
	if err != nil {
		if lastAttempt(ctx, err) {
			// Give the place back: the workspace runs on.
			if cerr := a.Store.SetWorkspacePausedMode(context.WithoutCancel(ctx), ws.ID, ""); cerr != nil {
				a.logger().Warn("release the pause's place", "workspace_id", ws.ID, "error", cerr)
			}
		}
		return backend.Handle{}, RedactErr(errs.Within(what, err), ws.RuntimeToken)
	}
	a.Connector.Drop(in.WorkspaceID)
	if err := a.storeHandle(ctx, ws, nh, what); err != nil {
		return backend.Handle{}, err
	}
	if _, err := a.recordEvent(ctx, ws.ID, wire.EventPaused, map[string]any{"mode": mode, "reason": in.Reason}); err != nil {
		return backend.Handle{}, err
	}
	a.logger().Info("workspace paused", "workspace_id", ws.ID, "backend", ws.Backend, "mode", mode, "reason", in.Reason)
	return nh, nil
}

// Resume starts a paused workspace's compute again through its backend's
// Pauser with the runtime token and env it was provisioned with, stores
// the handle, clears the pause's mode, moves the idle deadline (if any) a
// full idle period on, and records workspace.resumed. The workflow then
// moves the phase to pending; its probe makes it running.
func (a *Activities) Resume(ctx context.Context, in ResumeInput) (ResumeOutput, error) {
	defer KeepAlive(ctx)()
	h, err := a.resume(ctx, in)
	if err != nil {
		return ResumeOutput{}, Classify(err)
	}
	return ResumeOutput{Handle: h}, nil
}

func (a *Activities) resume(ctx context.Context, in ResumeInput) (backend.Handle, error) {
	what := "workspace " + in.WorkspaceID + ": resume"
	ws, p, h, err := a.pauserOf(ctx, in.WorkspaceID, in.Handle, what)
	if err != nil {
		return backend.Handle{}, err
	}
	common, err := TemplateCommon(ctx, a.Store, ws.TemplateID)
	if err != nil {
		return backend.Handle{}, errs.Within(what, err)
	}
	if common.Env, err = a.Connector.WorkspaceEnv(ctx, ws.ID, common); err != nil {
		return backend.Handle{}, errs.Within(what, err)
	}
	env := func(context.Context) (map[string]string, error) { return common.Env, nil }
	nh, err := p.Resume(ctx, h, ws.RuntimeToken, env)
	if err != nil {
		return backend.Handle{}, RedactErr(errs.Within(what, err), provisionSecrets(ws.RuntimeToken, common.Env)...)
	}
	a.Connector.Drop(in.WorkspaceID)
	if err := a.storeHandle(ctx, ws, nh, what); err != nil {
		return backend.Handle{}, err
	}
	if err := a.Store.SetWorkspacePausedMode(ctx, ws.ID, ""); err != nil {
		return backend.Handle{}, errs.Within(what, err)
	}
	// A workspace paused because it went idle would be paused again at
	// its first probe: resuming it is activity.
	if _, idle := common.Lifetimes(); idle > 0 && ws.IdleDeadline != nil {
		if err := a.Store.TouchWorkspace(ctx, ws.ID, time.Now().Add(idle)); err != nil {
			a.logger().Warn("move the idle deadline at resume", "workspace_id", ws.ID, "error", err)
		}
	}
	if _, err := a.recordEvent(ctx, ws.ID, wire.EventResumed, map[string]any{"reason": in.Reason}); err != nil {
		return backend.Handle{}, err
	}
	a.logger().Info("workspace resumed", "workspace_id", ws.ID, "backend", ws.Backend, "reason", in.Reason)
	return nh, nil
}

// pauserOf reads workspace id, its handle (the row's, else fallback) and
// its backend as a Pauser; Invalid when the backend cannot pause.
func (a *Activities) pauserOf(ctx context.Context, id string, fallback *backend.Handle, what string) (*wire.Workspace, backend.Pauser, backend.Handle, error) {
	ws, err := a.Store.GetWorkspace(ctx, id)
	if err != nil {
		return nil, nil, backend.Handle{}, errs.Within(what, err)
	}
	h, found, err := backend.DecodeHandle(ws.ID, ws.Handle)
	if err != nil {
		return nil, nil, backend.Handle{}, errs.Within(what, err)
	}
	if !found && fallback != nil {
		h, found = *fallback, true
	}
	if !found {
		return nil, nil, backend.Handle{}, errs.E(errs.Invalid, "%s: the workspace has no sandbox", what)
	}
	b, err := BackendFor(ctx, a.Store, a.Backends, ws)
	if err != nil {
		return nil, nil, backend.Handle{}, errs.Within(what, err)
	}
	p, ok := b.(backend.Pauser)
	if !ok {
		return nil, nil, backend.Handle{}, errs.E(errs.Invalid, "%s: the %s backend cannot pause", what, ws.Backend)
	}
	return ws, p, h, nil
}

// storeHandle stores a new handle of ws's sandbox, keeping its token.
func (a *Activities) storeHandle(ctx context.Context, ws *wire.Workspace, h backend.Handle, what string) error {
	raw, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("%s: encode handle: %w", what, err)
	}
	if err := a.Store.SetWorkspaceRuntime(ctx, ws.ID, raw, h.Path, ws.RuntimeToken); err != nil {
		return fmt.Errorf("%s: store handle: %w", what, err)
	}
	return nil
}
