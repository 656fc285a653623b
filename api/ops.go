package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
)

// readyTimeout bounds each readiness check, so a hung database makes /readyz
// answer 503 rather than hang the prober.
const readyTimeout = 3 * time.Second

// healthz says the process is alive and serving HTTP; it checks nothing else,
// so a slow database never gets the process restarted.
func (s *server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz says the process can do its work: the database and Temporal answer.
func (s *server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
	defer cancel()
	if err := s.cfg.Store.Ping(ctx); err != nil {
		s.fail(c, errs.E(errs.Unavailable, "readyz: database: %w", err))
		return
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(ctx); err != nil {
			s.fail(c, errs.E(errs.Unavailable, "readyz: %w", err))
			return
		}
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}
