package activities

import (
	"context"
	"fmt"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// resetSandbox makes a workspace's sandbox as it was when provisioned. A
// pool return (reset) and an eval case on a reused workspace share it.
//
// A backend that restores the whole sandbox (backend.Restorer) is asked
// first. When it made the sandbox again from a snapshot, the capture is
// the base: nothing more is applied, as at a provision from a snapshot.
// When it made it again from the template, the workspace is fresh: the
// runtime's reset is skipped and the template's files and init run as at a
// provision. Otherwise (nothing outside the workspace changed, or a
// backend that restores the workspace only) the runtime kills every
// process and empties the workspace root, and the template's files are
// written and its init commands run again. The client returned is the one
// to use from then on: cl's connection went with a sandbox made again.
//
// tmpl is ws's template as the caller read it, once per reset: the host
// rule, the files and init, and the request a remake provisions with all
// come from it.
func (a *Activities) resetSandbox(ctx context.Context, cl *client.Client, ws *wire.Workspace, tmpl *wire.Template) (protocol.ResetResult, *client.Client, error) {
	common, err := CommonOf(tmpl)
	if err != nil {
		return protocol.ResetResult{}, cl, errs.Within("workspace "+ws.ID+": reset", err)
	}
	if common.Env, err = a.Connector.WorkspaceEnv(ctx, ws.ID, common); err != nil {
		return protocol.ResetResult{}, cl, errs.Within("workspace "+ws.ID+": reset", err)
	}
	// The template's files and init run again, from the template as it is
	// now: the host rule holds here as at a provision.
	if err := a.mayMake(ctx, ws, tmpl); err != nil {
		return protocol.ResetResult{}, cl, err
	}
	secrets := provisionSecrets(ws.RuntimeToken, common.Env)
	rs, h, req, err := a.restorer(ctx, ws, tmpl, common)
	if err != nil {
		return protocol.ResetResult{}, cl, RedactErr(err, secrets...)
	}
	remade, running := false, 0
	if rs != nil {
		// A remake ends the old sandbox's processes without the runtime's
		// reset, which is what counts them: count them first, so a return
		// reports what it killed either way.
		running = a.runningProcs(ctx, cl, ws.ID)
		if remade, err = rs.Restore(ctx, h, req); err != nil {
			return protocol.ResetResult{}, cl, RedactErr(errs.Within("workspace "+ws.ID+": reset: restore", err), secrets...)
		}
	}
	var res protocol.ResetResult
	if remade {
		res.Killed = running
		a.Connector.Drop(ws.ID)
		if cl, err = a.waitRuntime(ctx, ws, h); err != nil {
			return res, nil, RedactErr(err, secrets...)
		}
	} else if res, err = cl.Reset(ctx); err != nil {
		return res, cl, fmt.Errorf("workspace %s: reset: runtime: %w", ws.ID, err)
	}
	if !remade || req.Snapshot == nil {
		if err := a.prepare(ctx, cl, ws.ID, common, false, nil); err != nil {
			return res, cl, RedactErr(err, secrets...)
		}
	}
	if rs != nil && remade {
		// A sandbox not remade keeps the base it had (nothing outside the
		// workspace changed): asking the engine again costs two calls per
		// eval case. A base not recorded makes the next reset remake the
		// sandbox: slower, never wrong.
		if err := rs.RecordBase(ctx, h); err != nil {
			a.logger().Warn("record the sandbox's base after a reset", "workspace_id", ws.ID, "error", RedactErr(err, secrets...))
		}
	}
	return res, cl, nil
}

// runningProcs counts the processes ws's runtime started (proc.start) that
// still run; an exec still streaming is not among them. It is what a remade
// sandbox's reset reports as killed. A runtime that cannot say counts 0:
// the count is only reported, and the reset goes on.
func (a *Activities) runningProcs(ctx context.Context, cl *client.Client, id string) int {
	procs, err := cl.ProcList(ctx)
	if err != nil {
		a.logger().Warn("list the sandbox's processes before a reset", "workspace_id", id, "error", err)
		return 0
	}
	n := 0
	for _, p := range procs {
		if p.Running {
			n++
		}
	}
	return n
}

// restorer returns ws's backend as a Restorer, with the workspace's handle
// and the request its sandbox was provisioned with (tmpl, the template as
// it is now, and the workspace's snapshot), or a nil Restorer when the
// backend restores the workspace only.
func (a *Activities) restorer(ctx context.Context, ws *wire.Workspace, tmpl *wire.Template, common backend.Common) (backend.Restorer, backend.Handle, backend.ProvisionRequest, error) {
	var req backend.ProvisionRequest
	b, err := BackendFor(ctx, a.Store, a.Backends, ws)
	if err != nil {
		return nil, backend.Handle{}, req, errs.Within("workspace "+ws.ID+": reset", err)
	}
	rs, ok := b.(backend.Restorer)
	if !ok {
		return nil, backend.Handle{}, req, nil
	}
	h, ok, err := backend.DecodeHandle(ws.ID, ws.Handle)
	if err != nil {
		return nil, backend.Handle{}, req, err
	}
	if !ok {
		return nil, backend.Handle{}, req, errs.E(errs.Precondition, "workspace %s: reset: not provisioned yet", ws.ID)
	}
	doc, err := backend.WithEgress(tmpl.Backend, ws)
	if err != nil {
		return nil, backend.Handle{}, req, err
	}
	req = backend.ProvisionRequest{
		WorkspaceID: ws.ID,
		TenantID:    ws.TenantID,
		Template:    doc,
		Env:         common.Env,
		Token:       ws.RuntimeToken,
	}
	// A sandbox made from a snapshot (a pool filled from one) goes back
	// to the capture, as its provision made it.
	if ws.SnapshotID != "" {
		if req.Snapshot, err = a.readySnapshot(ctx, ws); err != nil {
			return nil, backend.Handle{}, req, err
		}
	}
	return rs, h, req, nil
}

// recordBase tells a Restorer that ws's freshly provisioned sandbox (files
// and init applied) is its base. A failure only costs the next reset a
// remake: it is logged, not returned.
func (a *Activities) recordBase(ctx context.Context, b backend.Backend, id string, h backend.Handle) {
	rs, ok := b.(backend.Restorer)
	if !ok {
		return
	}
	if err := rs.RecordBase(ctx, h); err != nil {
		a.logger().Warn("record the sandbox's base", "workspace_id", id, "error", err)
	}
}
