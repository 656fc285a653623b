package agentrun

import (
	"testing"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/activities/internal/acttest"
	"github.com/primerhq/primer/models"
)

// rig is acttest's store, memory backend and workspace activities, with
// the agent-run activities on them.
type rig struct {
	a          *Activities
	workspaces *activities.Activities
	store      *models.Store
	*acttest.Rig
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := acttest.New(t)
	a := &Activities{
		Store:     r.Store,
		Connector: r.Connector,
		// The test model servers listen on 127.0.0.1.
		Outbound: acttest.LoopbackPolicy(t),
	}
	return &rig{a: a, workspaces: r.Workspaces, store: r.Store, Rig: r}
}
