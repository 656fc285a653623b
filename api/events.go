package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// eventBatch bounds how many events one store read returns while following.
const eventBatch = 256

// events lists a workspace's stored events, or follows them as Server-Sent
// Events. Events outlive their workspace's row, so a destroyed workspace's
// history can still be read; a workspace with neither row nor events is 404.
func (s *server) events(c *gin.Context) {
	ctx := c.Request.Context()
	id := c.Param("id")
	after, err := afterID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	follow := c.Query("follow") == "true" || c.Query("follow") == "1" ||
		strings.Contains(c.GetHeader("Accept"), "text/event-stream")

	_, err = s.workspaceOf(c, id)
	exists := err == nil
	if err != nil && !errs.Is(err, errs.NotFound) {
		s.fail(c, err)
		return
	}
	if !exists {
		// Only a workspace that had events (and so existed) is known, and
		// only to its tenant: the events carry it after the row is gone.
		// A hidden row with events falls through here too and is hidden
		// by its events' tenant.
		evs, err := s.cfg.Store.ListEvents(ctx, id, 0, 1)
		if err != nil {
			s.fail(c, err)
			return
		}
		if len(evs) == 0 || !visible(c, evs[0].TenantID) {
			s.fail(c, hidden("workspace", id))
			return
		}
	}
	if !follow {
		evs, err := s.cfg.Store.ListEvents(ctx, id, after, 0)
		if err != nil {
			s.fail(c, err)
			return
		}
		c.JSON(http.StatusOK, list(evs))
		return
	}
	s.follow(c, id, after)
}

// afterID reads where a listing starts: Last-Event-ID (an SSE client
// resuming) wins over ?after=.
func afterID(c *gin.Context) (uint64, error) {
	field, v := "after", c.Query("after")
	if h := c.GetHeader("Last-Event-ID"); h != "" {
		field, v = "Last-Event-ID", h
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, errs.Field(field, "%s: %q is not an event id", field, v)
	}
	return n, nil
}

// follow streams events after `after` until workspace.destroyed, the
// workspace's disappearance, or the client leaving. It reads the store
// only when woken: the store wakes the stream when an event is appended in
// this process or, on PostgreSQL, in any other (LISTEN/NOTIFY), and its
// watchdog catches what a lost notification would miss (models/event_notify.go).
func (s *server) follow(c *gin.Context, id string, after uint64) {
	ctx := c.Request.Context()
	release, ok := s.startSSE(c)
	if !ok {
		return
	}
	defer release()

	lastWrite := time.Now()
	woken := false
	for {
		// Taken before the read: an event appended after it wakes us.
		wake := s.cfg.Store.WaitWorkspaceEvents(id)
		evs, err := s.cfg.Store.ListEvents(ctx, id, after, eventBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("events: follow: list events", "workspace_id", id, "error", err.Error())
				writeSSEError(c, err)
			}
			return
		}
		for i := range evs {
			e := &evs[i]
			if err := writeSSE(c, e); err != nil {
				return // the client left
			}
			after = e.ID
			lastWrite = time.Now()
			if e.Type == wire.EventDestroyed {
				return
			}
		}
		if len(evs) == eventBatch {
			continue // more are waiting
		}
		if len(evs) == 0 && woken {
			// A wake-up without an event: the row may have gone (a delete
			// wakes its streams) without a workspace.destroyed.
			if _, err := s.cfg.Store.GetWorkspace(ctx, id); errs.Is(err, errs.NotFound) {
				// One last read catches events written just before the row went.
				if evs, err := s.cfg.Store.ListEvents(ctx, id, after, 0); err == nil {
					for i := range evs {
						if writeSSE(c, &evs[i]) != nil {
							return
						}
					}
				}
				return
			}
		}
		if !s.sseWake(c, wake, nil, &lastWrite) {
			return
		}
		woken = true
	}
}

// startSSE counts the stream against its key's and tenant's caps
// (openStream: 429 and false when one is reached), then answers 200 with
// the headers of a Server-Sent Events stream and flushes them, so the
// client sees the stream open before its first event. Every stream starts
// here; the caller defers release, which frees its place when it ends.
func (s *server) startSSE(c *gin.Context) (release func(), ok bool) {
	release, ok = s.openStream(c)
	if !ok {
		return nil, false
	}
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // no proxy buffering of the stream
	c.Status(http.StatusOK)
	c.Writer.WriteHeaderNow()
	c.Writer.Flush()
	return release, true
}

// sseWake keeps a stream open until wake closes or poll ticks (nil: no
// poll), writing a keep-alive comment whenever nothing was written for the
// heartbeat interval. It reports false when the client has gone.
func (s *server) sseWake(c *gin.Context, wake <-chan struct{}, poll <-chan time.Time, lastWrite *time.Time) bool {
	for {
		t := time.NewTimer(time.Until(lastWrite.Add(s.heartbeat)))
		select {
		case <-c.Request.Context().Done():
			t.Stop()
			return false
		case <-wake:
			t.Stop()
			return true
		case <-poll:
			t.Stop()
			return true
		case <-t.C:
		}
		if _, err := fmt.Fprint(c.Writer, ": keep-alive\n\n"); err != nil {
			return false
		}
		c.Writer.Flush()
		*lastWrite = time.Now()
	}
}

// writeSSE writes one event as an SSE message and flushes it.
func writeSSE(c *gin.Context, e *wire.Event) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	// Event types are fixed identifiers and JSON has no raw newlines, so
	// neither can break the SSE framing.
	if _, err := fmt.Fprintf(c.Writer, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Type, data); err != nil {
		return err
	}
	c.Writer.Flush()
	return nil
}

// writeSSEError ends a stream with an error message in the envelope.
func writeSSEError(c *gin.Context, err error) {
	_, env := errorEnvelope(err)
	data, _ := json.Marshal(env)
	fmt.Fprintf(c.Writer, "event: error\ndata: %s\n\n", data)
	c.Writer.Flush()
}
