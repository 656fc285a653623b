package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// TenantEvents returns the events of the caller's tenant across its
// workspaces with an ID above after, oldest first, at most limit (0: the
// server's default).
func (c *Client) TenantEvents(ctx context.Context, after uint64, limit int) (*wire.TenantEventPage, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatUint(after, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out wire.TenantEventPage
	if err := c.doJSON(ctx, http.MethodGet, "/v1/events", q, nil, &out); err != nil {
		return nil, err
	}
	if out.Items == nil {
		out.Items = []wire.Event{}
	}
	return &out, nil
}

// FollowTenantEvents streams the events of the caller's tenant with an ID
// above lastID, calling fn for each in order. The stream has no end of its
// own: it returns fn's error, ctx's error, an API error a retry cannot fix,
// or the last error after followMaxAttempts attempts in a row that deliver
// nothing. A stream that drops is resumed after the last event seen.
func (c *Client) FollowTenantEvents(ctx context.Context, lastID uint64, fn func(wire.Event) error) error {
	backoff := followMinBackoff
	failures := 0
	for {
		delivered, done, err := c.followTenantOnce(ctx, &lastID, fn)
		if done {
			return err
		}
		if ctx.Err() != nil {
			return transportError(ctx, request{method: http.MethodGet, path: "/v1/events"}, ctx.Err())
		}
		if delivered {
			failures, backoff = 0, followMinBackoff
		}
		failures++
		if failures >= followMaxAttempts {
			if err == nil {
				err = errs.E(errs.Unavailable, "events: the stream keeps ending")
			}
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return transportError(ctx, request{method: http.MethodGet, path: "/v1/events"}, ctx.Err())
		case <-t.C:
		}
		backoff = min(backoff*2, followMaxBackoff)
	}
}

// followTenantOnce reads one connection of FollowTenantEvents; done and err
// are as followOnce's.
func (c *Client) followTenantOnce(ctx context.Context, lastID *uint64, fn func(wire.Event) error) (delivered, done bool, err error) {
	r := request{method: http.MethodGet, path: "/v1/events", query: url.Values{"follow": {"true"}}, accept: "text/event-stream"}
	if *lastID > 0 {
		r.header = http.Header{"Last-Event-Id": {strconv.FormatUint(*lastID, 10)}}
	}
	resp, err := c.send(ctx, c.stream, r)
	if err != nil {
		var apiErr *Error
		return false, errors.As(err, &apiErr) && !retryable(err), err
	}
	defer resp.Body.Close()
	err = readSSE(resp.Body, func(m sseMessage) error {
		if len(m.data) == 0 {
			return nil // a keep-alive
		}
		if m.event == "error" {
			var env wire.ErrorEnvelope
			if err := json.Unmarshal(m.data, &env); err != nil || env.Error.Code == "" {
				return wrap(errs.Other, err, "events: bad error event %.80q", m.data)
			}
			// A store failure: the next connection may do better.
			return &Error{Status: resp.StatusCode, Code: env.Error.Code, Message: env.Error.Message}
		}
		var ev wire.Event
		if err := json.Unmarshal(m.data, &ev); err != nil {
			return wrap(errs.Other, err, "events: bad event %.80q", m.data)
		}
		if ev.ID != 0 && ev.ID <= *lastID {
			return nil // a replay overlap after reconnecting
		}
		if err := fn(ev); err != nil {
			return &fnError{err}
		}
		delivered = true
		*lastID = max(*lastID, ev.ID)
		return nil
	})
	var fe *fnError
	var bad *errs.Error
	var apiErr *Error
	switch {
	case errors.As(err, &fe):
		return delivered, true, fe.err
	case errors.As(err, &apiErr):
		return delivered, false, err
	case errors.As(err, &bad):
		return delivered, true, err // a malformed stream will not get better
	case err != nil:
		return delivered, false, transportError(ctx, r, err)
	}
	return delivered, false, nil
}
