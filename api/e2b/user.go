package e2b

import (
	"context"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// sandboxUser is the user E2B's SDKs run commands and write files as by
// default, with home /home/user.
const sandboxUser = "user"

// ensureUserTimeout bounds making the user: one runtime round trip.
const ensureUserTimeout = 10 * time.Second

// ensureUser makes the sandbox's default user (E2B's "user") when its image
// lacks it, through the sandbox's runtime (user.ensure: no useradd needed in
// the image), so an SDK's first command as the default user works. Backends
// on Primer's own machine (local, worktree) have no users of their own and
// are left alone. A failure is logged, not fatal: the sandbox runs, and a
// command as the missing user fails with a message naming it.
func (d *Door) ensureUser(ctx context.Context, id string) {
	if d.cfg.Connector == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, ensureUserTimeout)
	defer cancel()
	// The row, not /v1's view of it: the connector needs the handle.
	ws, err := d.cfg.Store.GetWorkspace(ctx, id)
	if err != nil {
		d.log.Warn("e2b: make the sandbox user", "workspace_id", id, "error", err.Error())
		return
	}
	if ws.Backend == wire.BackendLocal || ws.Backend == wire.BackendWorktree {
		return
	}
	cl, err := d.cfg.Connector.Client(ctx, ws)
	if err == nil {
		_, err = cl.EnsureUser(ctx, protocol.UserParams{Name: sandboxUser})
	}
	if err != nil && errs.Is(err, errs.Invalid) {
		// A runtime that does not own the sandbox's users.
		d.log.Debug("e2b: sandbox user not made", "workspace_id", id, "error", err.Error())
		return
	}
	if err != nil {
		d.log.Warn("e2b: make the sandbox user", "workspace_id", id, "user", sandboxUser, "error", err.Error())
	}
}
