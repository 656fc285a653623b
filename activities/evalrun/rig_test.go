package evalrun

import (
	"testing"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/activities/internal/acttest"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/models"
)

// rig is acttest's store, memory backend and workspace activities, with
// the eval-run activities on them.
type rig struct {
	a          *Activities
	workspaces *activities.Activities
	store      *models.Store
	mem        *memory.Backend
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := acttest.New(t)
	a := &Activities{
		Store:      r.Store,
		Backends:   r.Backends,
		Connector:  r.Connector,
		Workspaces: r.Workspaces,
		// The test webhook receivers listen on 127.0.0.1.
		Outbound: acttest.LoopbackPolicy(t),
	}
	return &rig{a: a, workspaces: r.Workspaces, store: r.Store, mem: r.Mem}
}
