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
func (a *Activities) resetSandbox(ctx context.Context, cl *client.Client, ws *wire.Workspace, common backend.Common) (protocol.ResetResult, *client.Client, error) {
	// The template's files and init run again, from the template as it is
	// now: the host rule holds here as at a provision.
	if err := a.mayMakeWorkspace(ctx, ws); err != nil {
		return protocol.ResetResult{}, cl, err
	}
	secrets := provisionSecrets(ws.RuntimeToken, common.Env)
	rs, h, req, err := a.restorer(ctx, ws, common)
	if err != nil {
		return protocol.ResetResult{}, cl, RedactErr(err, secrets...)
	}
	remade := false
	if rs != nil {
		if remade, err = rs.Restore(ctx, h, req); err != nil {
			return protocol.ResetResult{}, cl, RedactErr(errs.Within("workspace "+ws.ID+": reset: restore", err), secrets...)
		}
	}
	var res protocol.ResetResult
	if remade {
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

// restorer returns ws's backend as a Restorer, with the workspace's handle
// and the request its sandbox was provisioned with (the template as it is
// now, the workspace's snapshot), or a nil Restorer when the backend
// restores the workspace only.
func (a *Activities) restorer(ctx context.Context, ws *wire.Workspace, common backend.Common) (backend.Restorer, backend.Handle, backend.ProvisionRequest, error) {
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
	tmpl, err := a.Store.GetTemplate(ctx, ws.TemplateID)
	if err != nil {
		return nil, backend.Handle{}, req, fmt.Errorf("workspace %s: reset: template: %w", ws.ID, err)
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
