package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// adoptPending gives a workflow to every pending, never provisioned
// workspace older than grace that has none: a create whose process died
// between storing the row and starting the workflow (an API replica killed
// mid-request) would otherwise leave it pending forever, counted against
// its tenant's quota. Younger rows may be creates still in flight.
func (a *Activities) adoptPending(ctx context.Context, grace time.Duration, out *ReconcileOutput) {
	if a.Lifecycle == nil {
		return
	}
	pending, err := a.Store.ListWorkspaces(ctx, models.WorkspaceFilter{Phase: wire.PhasePending})
	if err != nil {
		out.Errors = append(out.Errors, fmt.Sprintf("list pending workspaces: %v", err))
		return
	}
	for i := range pending {
		w := &pending[i]
		if time.Since(w.CreatedAt) < grace || (len(w.Handle) > 0 && string(w.Handle) != "null") {
			continue
		}
		started, err := a.Lifecycle.AdoptWorkspace(ctx, w)
		if err != nil {
			out.Errors = append(out.Errors, err.Error())
			continue
		}
		if started {
			out.Adopted = append(out.Adopted, w.ID)
		}
	}
}
