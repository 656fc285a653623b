package api

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/models"
)

// bigRun is the size from which a run's stream sends progress at most once
// a progressEvery: each progress reads every result of the run.
const (
	bigRun        = 1000
	progressEvery = time.Second
)

// SSE event names of a run's stream.
const (
	runEventProgress = "progress"
	runEventFinished = "finished"
)

// runEvents streams a run's progress as Server-Sent Events: `progress`
// (an eval.Progress) at once and whenever it changes, then `finished` (the
// run with its final progress) when the run ends, and the stream ends. It
// polls the store, as the workspace events stream does: whichever worker
// runs the workflow writes the results, possibly in another process. Each
// poll counts the cases with one query; the results are read only when the
// counts moved.
func (s *server) runEvents(c *gin.Context) {
	ctx := c.Request.Context()
	id := c.Param("id")
	if _, err := s.runOf(c, id); err != nil {
		s.fail(c, err)
		return
	}
	release, ok := s.startSSE(c)
	if !ok {
		return
	}
	defer release()

	poll := time.NewTicker(s.eventPoll)
	defer poll.Stop()
	lastWrite := time.Now()
	var lastProgress time.Time
	var last *models.RunCounts
	for {
		// Taken before the reads: a change after them wakes us.
		wake := s.cfg.Store.WaitRun(id)
		// The run is read before its counts: a run seen final has all its
		// results final, so the progress sent with `finished` is complete.
		r, err := s.cfg.Store.GetRun(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("runs: events: get run", "run_id", id, "error", err.Error())
				writeSSEError(c, err)
			}
			return
		}
		counts, err := s.cfg.Store.CountCases(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("runs: events: count cases", "run_id", id, "error", err.Error())
				writeSSEError(c, err)
			}
			return
		}
		final := runFinal(r.Status)
		changed := last == nil || counts != *last
		if changed && !final && last != nil && counts.Total >= bigRun && time.Since(lastProgress) < progressEvery {
			changed = false // a later poll sends it: last still holds what was sent
		}
		if changed || final {
			v, err := s.runView(ctx, r)
			if err != nil {
				if ctx.Err() == nil {
					writeSSEError(c, err)
				}
				return
			}
			if last == nil || counts != *last {
				if writeRunEvent(c, runEventProgress, v.Progress) != nil {
					return // the client left
				}
				lastWrite, lastProgress = time.Now(), time.Now()
			}
			last = &counts
			if final {
				_ = writeRunEvent(c, runEventFinished, v)
				return
			}
		}
		if !s.sseWake(c, wake, poll.C, &lastWrite) {
			return
		}
	}
}

// writeRunEvent writes one named SSE message with v as JSON and flushes it.
func writeRunEvent(c *gin.Context, event string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c.Writer, "event: %s\ndata: %s\n\n", event, data); err != nil {
		return err
	}
	c.Writer.Flush()
	return nil
}
