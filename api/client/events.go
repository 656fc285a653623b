package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Reconnection policy of FollowEvents: a dropped stream is resumed from the
// last event seen; this many attempts in a row that deliver nothing end it.
const (
	followMaxAttempts = 5
	followMinBackoff  = 250 * time.Millisecond
	followMaxBackoff  = 5 * time.Second
)

// Events returns the stored events of workspace id with an ID above after
// (0: all), oldest first.
func (c *Client) Events(ctx context.Context, id string, after uint64) ([]wire.Event, error) {
	var q url.Values
	if after > 0 {
		q = url.Values{"after": {strconv.FormatUint(after, 10)}}
	}
	var out wire.Items[wire.Event]
	if err := c.doJSON(ctx, http.MethodGet, "/v1/workspaces/"+seg(id)+"/events", q, nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// FollowEvents streams the events of workspace id with an ID above lastID
// (0: all), stored ones first, calling fn for each in order. It returns nil
// after workspace.destroyed, fn's error if fn fails, or ctx's error. A
// stream that drops is resumed after the last event seen (Last-Event-ID);
// it gives up after followMaxAttempts attempts in a row that deliver nothing.
func (c *Client) FollowEvents(ctx context.Context, id string, lastID uint64, fn func(wire.Event) error) error {
	backoff := followMinBackoff
	failures := 0
	for {
		delivered, done, err := c.followOnce(ctx, id, &lastID, fn)
		if done {
			return err
		}
		if ctx.Err() != nil {
			return transportError(ctx, request{method: http.MethodGet, path: "/v1/workspaces/" + seg(id) + "/events"}, ctx.Err())
		}
		if err == nil {
			// The server ended the stream cleanly without workspace.destroyed:
			// it does so when the workspace is gone.
			if _, gerr := c.GetWorkspace(ctx, id); errs.Is(gerr, errs.NotFound) {
				return nil
			}
		}
		if delivered {
			failures, backoff = 0, followMinBackoff
		}
		failures++
		if failures >= followMaxAttempts {
			if err == nil {
				err = errs.E(errs.Unavailable, "workspace %s: events: stream keeps ending before workspace.destroyed", id)
			}
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return transportError(ctx, request{method: http.MethodGet, path: "/v1/workspaces/" + seg(id) + "/events"}, ctx.Err())
		case <-t.C:
		}
		backoff = min(backoff*2, followMaxBackoff)
	}
}

// followOnce reads one SSE connection. done says the caller must return err
// as is (destroyed, fn failed, or an API error that a retry cannot fix);
// otherwise err, if any, is why the connection ended and a retry may help.
func (c *Client) followOnce(ctx context.Context, id string, lastID *uint64, fn func(wire.Event) error) (delivered, done bool, err error) {
	r := request{
		method: http.MethodGet, path: "/v1/workspaces/" + seg(id) + "/events",
		query: url.Values{"follow": {"true"}}, accept: "text/event-stream",
	}
	if *lastID > 0 {
		r.header = http.Header{"Last-Event-Id": {strconv.FormatUint(*lastID, 10)}}
	}
	resp, err := c.send(ctx, c.stream, r)
	if err != nil {
		var apiErr *Error
		if errors.As(err, &apiErr) && !retryable(err) {
			return false, true, err
		}
		return false, false, err
	}
	defer resp.Body.Close()
	destroyed := false
	err = readSSE(resp.Body, func(m sseMessage) error {
		if len(m.data) == 0 {
			return nil // a comment-only or keep-alive block
		}
		if m.event == "error" {
			// The server ends a stream it cannot continue with its error
			// envelope as the data of an `error` event.
			var env wire.ErrorEnvelope
			if err := json.Unmarshal(m.data, &env); err != nil || env.Error.Code == "" {
				return wrap(errs.Other, err, "workspace %s: events: bad error event %.80q", id, m.data)
			}
			e := &Error{Status: resp.StatusCode, Code: env.Error.Code, Message: env.Error.Message}
			if f := env.Error.Details["field"]; f != "" {
				e.Field = f
			}
			return &fnError{e}
		}
		var ev wire.Event
		if err := json.Unmarshal(m.data, &ev); err != nil {
			return wrap(errs.Other, err, "workspace %s: events: bad event %.80q", id, m.data)
		}
		if ev.ID == 0 && m.id != "" {
			ev.ID, _ = strconv.ParseUint(m.id, 10, 64)
		}
		if ev.Type == "" {
			ev.Type = m.event
		}
		if ev.ID != 0 && ev.ID <= *lastID {
			return nil // a replay overlap after reconnecting
		}
		if err := fn(ev); err != nil {
			return &fnError{err}
		}
		delivered = true
		if ev.ID > *lastID {
			*lastID = ev.ID
		}
		if ev.Type == wire.EventDestroyed {
			destroyed = true
			return errStop
		}
		return nil
	})
	var fe *fnError
	var bad *errs.Error
	switch {
	case errors.As(err, &fe):
		return delivered, true, fe.err
	case destroyed:
		return delivered, true, nil
	case errors.As(err, &bad):
		return delivered, true, err // a malformed stream will not get better
	case err != nil:
		return delivered, false, transportError(ctx, r, err)
	}
	return delivered, false, nil
}

// fnError carries the callback's error through readSSE unchanged.
type fnError struct{ err error }

func (e *fnError) Error() string { return e.err.Error() }

// errStop ends readSSE without an error.
var errStop = errors.New("stop")

// sseMessage is one dispatched server-sent event.
type sseMessage struct {
	id, event string
	data      []byte
}

// readSSE parses a text/event-stream body (WHATWG HTML, "server-sent
// events"), calling fn for each message. It returns nil at EOF or when fn
// returns errStop.
func readSSE(body io.Reader, fn func(sseMessage) error) error {
	br := bufio.NewReaderSize(body, 64<<10)
	var m sseMessage
	var data bytes.Buffer
	hasData := false
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 || err == nil {
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 {
				// A blank line dispatches the message collected so far.
				if hasData || m.event != "" || m.id != "" {
					m.data = bytes.Clone(data.Bytes())
					if ferr := fn(m); ferr != nil {
						if errors.Is(ferr, errStop) {
							return nil
						}
						return ferr
					}
				}
				m, hasData = sseMessage{}, false
				data.Reset()
			} else if line[0] != ':' {
				field, value, _ := bytes.Cut(line, []byte(":"))
				value = bytes.TrimPrefix(value, []byte(" "))
				switch string(field) {
				case "data":
					if hasData {
						data.WriteByte('\n')
					}
					data.Write(value)
					hasData = true
				case "event":
					m.event = string(value)
				case "id":
					m.id = string(value)
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				// An incomplete final message is discarded, as the spec says.
				return nil
			}
			return err
		}
	}
}
