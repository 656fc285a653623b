package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// RunSession starts agent's run on the open session id with instructions.
func (c *Client) RunSession(ctx context.Context, id, agent, instructions string) (*wire.SessionRun, error) {
	body := map[string]string{"agent": agent, "instructions": instructions}
	return doInto[wire.SessionRun](ctx, c, http.MethodPost, "/v1/sessions/"+seg(id)+"/run", nil, body)
}

// CancelSession asks the session's agent run to stop; it ends canceled.
func (c *Client) CancelSession(ctx context.Context, id string) error {
	_, err := doInto[wire.SessionCancel](ctx, c, http.MethodPost, "/v1/sessions/"+seg(id)+"/cancel", nil, struct{}{})
	return err
}

// SessionTranscript returns the session's transcript as it stands.
func (c *Client) SessionTranscript(ctx context.Context, id string) (*wire.Transcript, error) {
	return doInto[wire.Transcript](ctx, c, http.MethodGet, "/v1/sessions/"+seg(id)+"/transcript", nil, nil)
}

// FollowTranscript calls fn with each transcript entry as it becomes final
// (a tool call once it finished), in order, until the run ends, and
// returns the ended run. A dropped stream is resumed where it left off.
func (c *Client) FollowTranscript(ctx context.Context, id string, fn func(wire.TranscriptEntry) error) (*wire.SessionRun, error) {
	last := 0
	for {
		r := request{method: http.MethodGet, path: "/v1/sessions/" + seg(id) + "/transcript",
			query: url.Values{"follow": {"true"}}, accept: "text/event-stream"}
		if last > 0 {
			r.header = http.Header{"Last-Event-Id": {strconv.Itoa(last)}}
		}
		resp, err := c.send(ctx, c.stream, r)
		if err != nil {
			if !retryable(err) || ctx.Err() != nil {
				return nil, err
			}
		} else {
			var run *wire.SessionRun
			err = readSSE(resp.Body, func(m sseMessage) error {
				switch {
				case len(m.data) == 0:
					return nil
				case m.event == "end":
					run = &wire.SessionRun{}
					if err := json.Unmarshal(m.data, run); err != nil {
						return wrap(errs.Other, err, "session %s: transcript: bad end event", id)
					}
					return errStop
				case m.event == "error":
					return &fnError{errs.E(errs.Other, "session %s: transcript: %s", id, m.data)}
				}
				var e wire.TranscriptEntry
				if err := json.Unmarshal(m.data, &e); err != nil {
					return wrap(errs.Other, err, "session %s: transcript: bad entry", id)
				}
				last = e.Seq
				return fn(e)
			})
			resp.Body.Close()
			if run != nil {
				return run, nil
			}
			if err != nil {
				return nil, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
