package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
)

// CreateSuite creates a suite from a document with its cases.
func (c *Client) CreateSuite(ctx context.Context, spec eval.SuiteSpec) (*wire.SuiteView, error) {
	return c.suiteJSON(ctx, http.MethodPost, "/v1/suites", spec)
}

// CreateSuiteJSONL creates a suite from JSONL: the spec on the first line,
// then one case a line. The body is streamed; large suites (thousands of
// cases) go this way.
func (c *Client) CreateSuiteJSONL(ctx context.Context, body io.Reader) (*wire.SuiteView, error) {
	return c.suiteJSONL(ctx, http.MethodPost, "/v1/suites", body)
}

// UpdateSuite replaces the suite id's document and cases (spec.ID may be
// empty); its schedule is created, updated or deleted to match.
func (c *Client) UpdateSuite(ctx context.Context, id string, spec eval.SuiteSpec) (*wire.SuiteView, error) {
	return c.suiteJSON(ctx, http.MethodPut, "/v1/suites/"+seg(id), spec)
}

// UpdateSuiteJSONL is UpdateSuite with a JSONL body.
func (c *Client) UpdateSuiteJSONL(ctx context.Context, id string, body io.Reader) (*wire.SuiteView, error) {
	return c.suiteJSONL(ctx, http.MethodPut, "/v1/suites/"+seg(id), body)
}

// suiteJSON sends a suite document as JSON. Documents may be tens of
// megabytes, so the call is bounded by ctx only.
func (c *Client) suiteJSON(ctx context.Context, method, path string, spec eval.SuiteSpec) (*wire.SuiteView, error) {
	var out wire.SuiteView
	if err := c.doJSONWith(ctx, c.stream, method, path, nil, spec, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// suiteJSONL sends a suite document as JSONL, bounded by ctx only.
func (c *Client) suiteJSONL(ctx context.Context, method, path string, body io.Reader) (*wire.SuiteView, error) {
	resp, err := c.send(ctx, c.stream, request{method: method, path: path, body: body,
		contentType: "application/x-ndjson", accept: "application/json"})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out wire.SuiteView
	if err := decodeBody(resp, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSuite returns the suite id with its schedule's state.
func (c *Client) GetSuite(ctx context.Context, id string) (*wire.SuiteView, error) {
	return doInto[wire.SuiteView](ctx, c, http.MethodGet, "/v1/suites/"+seg(id), nil, nil)
}

// ListSuites returns every suite, ordered by id (without schedule states).
func (c *Client) ListSuites(ctx context.Context) ([]wire.Suite, error) {
	return listInto[wire.Suite](ctx, c, "/v1/suites", nil)
}

// SuiteCases returns the cases of the suite id, in order, as documents.
func (c *Client) SuiteCases(ctx context.Context, id string) ([]eval.Case, error) {
	var out []eval.Case
	err := c.SuiteCasesJSONL(ctx, id, func(line []byte) error {
		var cs eval.Case
		if err := json.Unmarshal(line, &cs); err != nil {
			return wrap(errs.Other, err, "suite %s: cases: decode", id)
		}
		out = append(out, cs)
		return nil
	})
	return out, err
}

// SuiteCasesJSONL streams the cases of the suite id as JSONL, calling fn
// with each line (without its newline); the lines are what
// CreateSuiteJSONL reads after the spec.
func (c *Client) SuiteCasesJSONL(ctx context.Context, id string, fn func(line []byte) error) error {
	resp, err := c.send(ctx, c.stream, request{method: http.MethodGet, path: "/v1/suites/" + seg(id) + "/cases",
		query: url.Values{"format": {"jsonl"}}, accept: "application/x-ndjson"})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return eachLine(resp.Body, fn)
}

// eachLine calls fn with every non-empty line of r.
func eachLine(r io.Reader, fn func(line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), eval.MaxSuiteBytes)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return wrap(errs.Unavailable, err, "read lines")
	}
	return nil
}

// DeleteSuite deletes the suite id and its schedule; its runs stay.
func (c *Client) DeleteSuite(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/suites/"+seg(id), nil, nil, nil)
}

// PauseSchedule pauses the schedule of the suite id; a suite without a
// schedule is a failed_precondition error.
func (c *Client) PauseSchedule(ctx context.Context, id string) (*wire.SuiteView, error) {
	return doInto[wire.SuiteView](ctx, c, http.MethodPost, "/v1/suites/"+seg(id)+"/schedule/pause", nil, nil)
}

// ResumeSchedule resumes the paused schedule of the suite id.
func (c *Client) ResumeSchedule(ctx context.Context, id string) (*wire.SuiteView, error) {
	return doInto[wire.SuiteView](ctx, c, http.MethodPost, "/v1/suites/"+seg(id)+"/schedule/resume", nil, nil)
}

// TriggerSchedule makes the schedule of the suite id start a run now.
func (c *Client) TriggerSchedule(ctx context.Context, id string) (*wire.SuiteView, error) {
	return doInto[wire.SuiteView](ctx, c, http.MethodPost, "/v1/suites/"+seg(id)+"/schedule/trigger", nil, nil)
}
