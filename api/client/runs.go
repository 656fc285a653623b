package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
)

// RunListOptions filters ListRuns. Empty fields match all.
type RunListOptions struct {
	SuiteID string
	Status  string
	Limit   int // 0: no limit
}

// Result formats of RunResultsRaw.
const (
	FormatJSON  = "json"
	FormatJSONL = "jsonl"
	FormatJUnit = "junit"
)

// CreateRun starts a run of the suite suiteID.
func (c *Client) CreateRun(ctx context.Context, suiteID string, req wire.RunRequest) (*wire.RunView, error) {
	var body any
	if len(req.Cases) > 0 || len(req.Labels) > 0 || req.TriggeredBy != "" {
		body = req
	}
	return doInto[wire.RunView](ctx, c, http.MethodPost, "/v1/suites/"+seg(suiteID)+"/runs", nil, body)
}

// GetRun returns the run id with its progress.
func (c *Client) GetRun(ctx context.Context, id string) (*wire.RunView, error) {
	return doInto[wire.RunView](ctx, c, http.MethodGet, "/v1/runs/"+seg(id), nil, nil)
}

// ListRuns returns the runs opts selects, newest first (without progress).
func (c *Client) ListRuns(ctx context.Context, opts RunListOptions) ([]wire.Run, error) {
	q := query("suite_id", opts.SuiteID, "status", opts.Status)
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	return listInto[wire.Run](ctx, c, "/v1/runs", q)
}

// RunResults returns the case results of the run id in case order.
func (c *Client) RunResults(ctx context.Context, id string) ([]wire.CaseResult, error) {
	var out wire.Items[wire.CaseResult]
	if err := c.doJSONWith(ctx, c.stream, http.MethodGet, "/v1/runs/"+seg(id)+"/results", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// RunResultsRaw returns the case results of the run id in format (json,
// jsonl or junit) as the server writes them; the caller closes the body.
func (c *Client) RunResultsRaw(ctx context.Context, id, format string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, c.stream, request{method: http.MethodGet, path: "/v1/runs/" + seg(id) + "/results",
		query: url.Values{"format": {format}}})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// CompareRuns compares the run id with the run base by case.
func (c *Client) CompareRuns(ctx context.Context, id, base string) (*eval.Comparison, error) {
	return doInto[eval.Comparison](ctx, c, http.MethodGet, "/v1/runs/"+seg(id)+"/compare", url.Values{"base": {base}}, nil)
}

// CancelRun asks the run id to stop; it is returned as it is now (the run
// ends canceled shortly after). A run that has ended is a
// failed_precondition error.
func (c *Client) CancelRun(ctx context.Context, id string) (*wire.RunView, error) {
	return doInto[wire.RunView](ctx, c, http.MethodPost, "/v1/runs/"+seg(id)+"/cancel", nil, nil)
}

// FollowRun streams the progress of the run id, calling progress (if not
// nil) at once and at every change, and returns the run once it has ended.
// A stream that drops is opened again (the server sends the current
// progress first, so nothing is lost); it gives up after followMaxAttempts
// attempts in a row that deliver nothing.
func (c *Client) FollowRun(ctx context.Context, id string, progress func(wire.Progress)) (*wire.RunView, error) {
	backoff := followMinBackoff
	failures := 0
	path := "/v1/runs/" + seg(id) + "/events"
	for {
		run, delivered, err := c.followRunOnce(ctx, path, progress)
		if run != nil || (err != nil && !retryable(err)) {
			return run, err
		}
		if ctx.Err() != nil {
			return nil, transportError(ctx, request{method: http.MethodGet, path: path}, ctx.Err())
		}
		if delivered {
			failures, backoff = 0, followMinBackoff
		}
		failures++
		if failures >= followMaxAttempts {
			if err == nil {
				err = errs.E(errs.Unavailable, "run %s: events: stream keeps ending before the run finishes", id)
			}
			return nil, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, transportError(ctx, request{method: http.MethodGet, path: path}, ctx.Err())
		case <-t.C:
		}
		backoff = min(backoff*2, followMaxBackoff)
	}
}

// followRunOnce reads one SSE connection of a run; it returns the run
// when `finished` arrived.
func (c *Client) followRunOnce(ctx context.Context, path string, progress func(wire.Progress)) (*wire.RunView, bool, error) {
	r := request{method: http.MethodGet, path: path, accept: "text/event-stream"}
	resp, err := c.send(ctx, c.stream, r)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	var done *wire.RunView
	delivered := false
	err = readSSE(resp.Body, func(m sseMessage) error {
		if len(m.data) == 0 {
			return nil
		}
		switch m.event {
		case "error":
			var env wire.ErrorEnvelope
			if err := json.Unmarshal(m.data, &env); err != nil || env.Error.Code == "" {
				return wrap(errs.Other, err, "%s: bad error event %.80q", path, m.data)
			}
			e := &Error{Status: resp.StatusCode, Code: env.Error.Code, Message: env.Error.Message}
			return &fnError{e}
		case "progress":
			var p wire.Progress
			if err := json.Unmarshal(m.data, &p); err != nil {
				return wrap(errs.Other, err, "%s: bad progress event %.80q", path, m.data)
			}
			delivered = true
			if progress != nil {
				progress(p)
			}
		case "finished":
			var run wire.RunView
			if err := json.Unmarshal(m.data, &run); err != nil {
				return wrap(errs.Other, err, "%s: bad finished event %.80q", path, m.data)
			}
			done = &run
			return errStop
		}
		return nil
	})
	var fe *fnError
	var bad *errs.Error
	switch {
	case done != nil:
		return done, true, nil
	case errors.As(err, &fe):
		return nil, delivered, fe.err
	case errors.As(err, &bad):
		return nil, delivered, err
	case err != nil:
		return nil, delivered, transportError(ctx, r, err)
	}
	return nil, delivered, nil
}
