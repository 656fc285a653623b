package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Bounds of ?limit= of GET /v1/events.
const (
	defaultTenantEventLimit = eventBatch
	maxTenantEventLimit     = 1000
)

// tenantEventList lists the events of the caller's tenant across its
// workspaces (an admin's: every tenant's, or ?tenant='s), oldest first, or
// follows them as Server-Sent Events.
func (s *server) tenantEventList(c *gin.Context) {
	ctx := c.Request.Context()
	after, err := afterID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	tenant := listTenant(c)
	if c.Query("follow") == "true" || c.Query("follow") == "1" ||
		strings.Contains(c.GetHeader("Accept"), "text/event-stream") {
		s.followTenant(c, tenant, after)
		return
	}
	limit := defaultTenantEventLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxTenantEventLimit {
			s.fail(c, errs.Field("limit", "limit: %q: want 1 to %d", v, maxTenantEventLimit))
			return
		}
		limit = n
	}
	// The latest ID is read first, so it never runs ahead of a page that
	// a concurrent append would have changed.
	latest, err := s.cfg.Store.LatestEventID(ctx, tenant)
	if err != nil {
		s.fail(c, err)
		return
	}
	evs, err := s.cfg.Store.ListTenantEvents(ctx, tenant, after, limit)
	if err != nil {
		s.fail(c, err)
		return
	}
	if n := len(evs); n > 0 && evs[n-1].ID > latest {
		latest = evs[n-1].ID
	}
	c.JSON(http.StatusOK, wire.TenantEventPage{Items: evs, LatestID: latest})
}

// followTenant streams tenant's events after `after` until the client
// leaves, reading the store when woken as follow does. Unlike one workspace's stream it
// has no natural end: a destroyed workspace is one event among others.
func (s *server) followTenant(c *gin.Context, tenant string, after uint64) {
	ctx := c.Request.Context()
	release, ok := s.startSSE(c)
	if !ok {
		return
	}
	defer release()

	lastWrite := time.Now()
	for {
		wake := s.cfg.Store.WaitTenantEvents(tenant)
		evs, err := s.cfg.Store.ListTenantEvents(ctx, tenant, after, eventBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("events: follow tenant: list events", "tenant_id", tenant, "error", err.Error())
				writeSSEError(c, err)
			}
			return
		}
		for i := range evs {
			if err := writeSSE(c, &evs[i]); err != nil {
				return // the client left
			}
			after = evs[i].ID
			lastWrite = time.Now()
		}
		if len(evs) == eventBatch {
			continue // more are waiting
		}
		if !s.sseWake(c, wake, nil, &lastWrite) {
			return
		}
	}
}
