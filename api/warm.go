package api

import (
	"context"

	"github.com/primerhq/primer/wire"
)

// Create sources: the "source" of a create response. They share their
// values with the lease sources.
const (
	CreateWarm = LeaseWarm // an idle member of a pool of the template, running already
	CreateCold = LeaseCold // a new workspace, provisioned after the answer
)

// takeWarm takes an idle running member of a pool of tenant on the template
// out of its pool for a create: one UPDATE per pool tried (one pool in the common
// case), nothing else before the answer. The pool is woken to refill after
// the answer. It returns nil, nil when no pool of the template has such a
// member, and the create goes cold.
//
// Only pools filled from snapshotID are tried: a member holds its pool's
// state, so a plain create (snapshotID empty) never takes a member made
// from a snapshot, and a create from a snapshot takes only a member of a
// pool filled from that snapshot (a warm start of a prepared environment).
func (s *server) takeWarm(ctx context.Context, tenant, templateID, snapshotID string, labels map[string]string) (*wire.Workspace, error) {
	// Only the creator's tenant's pools: a member is its pool's tenant's.
	pools, err := s.cfg.Store.ListPools(ctx, templateID, tenant)
	if err != nil {
		return nil, err
	}
	for _, p := range pools {
		if p.SnapshotID != snapshotID {
			continue
		}
		w, err := s.cfg.Store.TakeWorkspace(ctx, p.ID, labels)
		if err != nil {
			return nil, err
		}
		if w == nil {
			continue
		}
		// The pool is one member short now: wake it to make a new one
		// rather than wait for its next periodic pass.
		s.notifyPoolAsync(p.ID)
		s.log.Info("workspace taken from pool", "workspace_id", w.ID, "pool_id", p.ID, "template_id", templateID)
		return w, nil
	}
	return nil, nil
}
