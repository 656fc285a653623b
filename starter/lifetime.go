package starter

import (
	"encoding/json"
	"time"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// startLifetime fills w's lifetime from its template and the request: the
// template's bounds, and the deadlines of a workspace that is not an idle
// pool member (whose deadlines start with its lease). A ttl longer than
// the template's lifetime.max is Invalid, naming the field ttl.
func startLifetime(w *wire.Workspace, t *wire.Template, req activities.CreateWorkspaceRequest, now time.Time) error {
	var common backend.Common
	// The template was validated when stored; one that does not decode
	// has no lifetime.
	_ = json.Unmarshal(t.Backend, &common)
	maxLife, idle := common.Lifetimes()
	if req.TTL < 0 {
		return errs.Field("ttl", "ttl: %s must be more than 0", req.TTL)
	}
	if maxLife > 0 && req.TTL > maxLife {
		return errs.Field("ttl", "ttl: %s is longer than template %s's lifetime.max (%s)", req.TTL, t.ID, maxLife)
	}
	w.MaxLifetimeMS, w.IdleTimeoutMS = maxLife.Milliseconds(), idle.Milliseconds()
	if w.PoolState == wire.PoolIdle {
		return nil
	}
	w.SetDeadlines(models.StartDeadlines(now, maxLife, req.TTL, idle, req.LeaseTTL))
	return nil
}
