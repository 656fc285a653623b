package activities

import (
	"context"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// What the eval-run activities (activities/evalrun) share with the
// workspace's. These are functions of an *Activities, not methods: Temporal
// registers every exported method of Activities as an activity.

// ResetSandbox makes ws's sandbox as it was when provisioned, as a pool
// return does: an eval case on a reused workspace starts from there. tmpl
// is ws's template as the caller read it (CommonOf decodes its common
// part). The client it returns is the one to use after it: a sandbox made
// again has a new runtime, and cl's connection went with the old one.
func ResetSandbox(ctx context.Context, a *Activities, cl *client.Client, ws *wire.Workspace, tmpl *wire.Template) (protocol.ResetResult, *client.Client, error) {
	return a.resetSandbox(ctx, cl, ws, tmpl)
}

// HostKind is the host backend ws would be made on from tmpl, or "" (see
// hostKind): a lease for an eval run passes the same host rule as a
// provisioning.
func HostKind(ctx context.Context, a *Activities, ws *wire.Workspace, tmpl *wire.Template) (string, error) {
	return a.hostKind(ctx, ws, tmpl)
}

// InitBudget is how long the init commands of a template with common may
// take in all, each bounded by a's InitTimeout: an eval case that resets
// its workspace waits that long on top of its own timeout.
func InitBudget(a *Activities, common backend.Common) time.Duration {
	return a.initTimeout() * time.Duration(len(common.Init))
}
