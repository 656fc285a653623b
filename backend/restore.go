package backend

import (
	"context"

	"github.com/primerhq/primer/errs"
)

// What a reset restores (Capabilities.Reset).
const (
	// ResetScopeSandbox: a reset brings the sandbox's whole filesystem
	// back to its base (the template's image after files and init, or the
	// snapshot it was made from): files a case left in /tmp, /home or
	// /usr/local are gone, as are the workspace's.
	ResetScopeSandbox = "sandbox"
	// ResetScopeWorkspace: a reset empties the workspace directory and
	// applies the template's files and init again; what the sandbox holds
	// outside the directory stays (Capabilities.ResetNote says what).
	ResetScopeWorkspace = "workspace"
)

// HostResetNote is what the host backends (local, worktree, vm) say a
// reset restores: their sandbox is a directory on a host the workspace
// shares, so the rest of that host is not the workspace's to restore.
const HostResetNote = "workspace: a reset kills the workspace's processes, empties the workspace directory and applies the template's files and init again (or the snapshot's files, for a workspace made from one); files outside the directory on the host (/tmp, /home, /usr/local) are not restored: what a case left there stays"

// Restorer is implemented by backends whose reset brings the whole sandbox
// back to its base, not only the workspace directory (Capabilities.Reset
// is ResetScopeSandbox). A pool return and an eval case on a reused
// workspace call Restore before anything else.
//
// Restore never changes the handle: the workspace workflow and the probes
// hold h while a reset runs elsewhere (an eval run's activities), so a
// backend that remakes the sandbox keeps h valid (same name, same runtime
// URL, and its identifiers still accepted). req is what Provision had (the
// template, the token, the env, the snapshot the sandbox was made from).
//
// remade is true when the sandbox was made again: from req.Snapshot (its
// workspace holds the capture: the caller applies no files or init) or
// from the template (a fresh workspace: the caller skips the runtime's
// reset and applies the template's files and init as at a provision). It
// is false when nothing outside the workspace had changed since the base
// was recorded: the caller resets the workspace through the runtime, as a
// backend without a Restorer does. A failed Restore is a failed reset: the
// caller replaces the sandbox.
//
// RecordBase notes the sandbox's state as its base, once the template's
// files and init have run (at a provision and after a reset), so the next
// Restore can tell whether anything outside the workspace changed. A
// backend that knows no base for a sandbox (after a platform restart)
// remakes it: the safe answer.
type Restorer interface {
	Restore(ctx context.Context, h Handle, req ProvisionRequest) (remade bool, err error)
	RecordBase(ctx context.Context, h Handle) error
}

// CheckRestore checks what every Restorer checks of a restore's request
// before it touches the sandbox: req is for the handle's workspace and
// carries the runtime's token, which the remade sandbox needs.
func CheckRestore(h Handle, req ProvisionRequest) error {
	if req.WorkspaceID != h.WorkspaceID {
		return errs.E(errs.Invalid, "workspace %s: restore: request is for workspace %s", h.WorkspaceID, req.WorkspaceID)
	}
	if req.Token == "" {
		return errs.E(errs.Invalid, "workspace %s: restore: no runtime token", h.WorkspaceID)
	}
	return nil
}
