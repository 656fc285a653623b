// Package client is the typed Go client of Primer's REST API (docs/API.md).
// It returns the resources as the models package defines them and API
// failures as *Error, whose Kind is the errs kind the server reported, so
// callers test errs.Is(err, errs.NotFound) as they would on the server side.
//
// JSON calls have a per-request timeout (WithTimeout, default 30 s); calls
// that stream or may legitimately run long (exec, file transfer, following
// events, waits) have none and are bounded only by their ctx.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Defaults of a new Client.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultPollInterval = 100 * time.Millisecond
)

// AdminKeyFile is the file in a data directory where `primer serve` writes
// the first admin key at its first start (mode 0600).
const AdminKeyFile = "admin.key"

// maxErrorBody caps how much of an error response is read: envelopes are
// small, and a misbehaving proxy must not make the client buffer megabytes.
const maxErrorBody = 64 << 10

// Client talks to one Primer API server. It is safe for concurrent use.
type Client struct {
	base         string
	hc           *http.Client // JSON calls: carries the request timeout
	stream       *http.Client // streaming and long calls: no timeout, ctx only
	pollInterval time.Duration
	userAgent    string
	token        string         // the API key, sent as a bearer token; never logged
	timeout      *time.Duration // set by WithTimeout; applied after all options
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the Client send requests through hc's transport.
// hc.Timeout applies to JSON calls; streaming calls never have one.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc == nil {
			return
		}
		c.hc = &http.Client{Transport: hc.Transport, Timeout: hc.Timeout, Jar: hc.Jar, CheckRedirect: hc.CheckRedirect}
		c.stream = &http.Client{Transport: hc.Transport, Jar: hc.Jar, CheckRedirect: hc.CheckRedirect}
	}
}

// WithTimeout sets the timeout of each JSON call; 0 means none (ctx only).
func WithTimeout(d time.Duration) Option {
	return func(c *Client) { c.timeout = &d }
}

// WithPollInterval sets how often WaitWorkspace and WaitGone poll.
func WithPollInterval(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.pollInterval = d
		}
	}
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// WithToken sets the API key sent as Authorization: Bearer on every request.
func WithToken(key string) Option {
	return func(c *Client) { c.token = strings.TrimSpace(key) }
}

// New returns a Client for the server at baseURL (e.g. http://127.0.0.1:8080).
// A baseURL without a scheme gets http://.
func New(baseURL string, opts ...Option) *Client {
	base := strings.TrimRight(strings.TrimSpace(baseURL), "/")
	if base != "" && !strings.Contains(base, "://") {
		base = "http://" + base
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	c := &Client{
		base:         base,
		hc:           &http.Client{Transport: tr, Timeout: DefaultTimeout},
		stream:       &http.Client{Transport: tr},
		pollInterval: DefaultPollInterval,
		userAgent:    "primer-go-client",
	}
	for _, o := range opts {
		o(c)
	}
	if c.timeout != nil {
		c.hc.Timeout = *c.timeout
	}
	return c
}

// BaseURL returns the server address the Client talks to.
func (c *Client) BaseURL() string { return c.base }

// Error is an API failure as the server's error envelope describes it:
// {"error": {"code", "message", "details": {"field"}}}. Responses that are not
// an envelope (a proxy's 502 page) get a code derived from the status.
type Error struct {
	Status  int    // HTTP status; 200 for an error reported inside a stream
	Code    string // errs kind name: invalid, not_found, conflict, ...
	Message string
	Field   string // for invalid: the input field at fault
}

// Error returns the server's message.
func (e *Error) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("http %d %s", e.Status, http.StatusText(e.Status))
}

// Kind returns the errs kind the code names (errs.Other if unknown).
func (e *Error) Kind() errs.Kind { return errs.ParseKind(e.Code) }

// Unwrap exposes the failure as an *errs.Error, so errs.KindOf, errs.Is and
// errs.FieldOf work on client errors unchanged.
func (e *Error) Unwrap() error {
	return &errs.Error{Kind: e.Kind(), Field: e.Field, Msg: e.Error()}
}

// decodeError turns a non-2xx response into an *Error. It reads at most
// maxErrorBody bytes and does not close the body.
func decodeError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &Error{Status: resp.StatusCode}
	var env wire.ErrorEnvelope
	if json.Unmarshal(body, &env) == nil && env.Error.Code != "" {
		e.Code = env.Error.Code
		e.Message = env.Error.Message
		if f := env.Error.Details["field"]; f != "" {
			e.Field = f
		}
		return e
	}
	e.Code = codeForStatus(resp.StatusCode)
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	e.Message = fmt.Sprintf("%s %s: http %d %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, http.StatusText(resp.StatusCode))
	if msg != "" {
		e.Message += ": " + msg
	}
	return e
}

// codeForStatus maps a status without an envelope to the errs kind name the
// API would have used for it.
func codeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return errs.Invalid.String()
	case http.StatusNotFound:
		return errs.NotFound.String()
	case http.StatusConflict:
		return errs.Conflict.String()
	case http.StatusForbidden:
		return errs.Forbidden.String()
	case http.StatusUnauthorized:
		return errs.Unauthenticated.String()
	case http.StatusTooManyRequests:
		return errs.Exhausted.String()
	case http.StatusRequestEntityTooLarge:
		return errs.TooLarge.String()
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return errs.Unavailable.String()
	case http.StatusGatewayTimeout:
		return errs.Timeout.String()
	}
	return errs.Other.String()
}

// request is one API call.
type request struct {
	method      string
	path        string // already escaped
	query       url.Values
	body        io.Reader
	contentType string
	accept      string
	header      http.Header
}

// send performs r and returns the response if its status is 2xx; any other
// status becomes an *Error. The caller closes the body.
func (c *Client) send(ctx context.Context, hc *http.Client, r request) (*http.Response, error) {
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, r.body)
	if err != nil {
		return nil, wrap(errs.Invalid, err, "%s %s", r.method, r.path)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if c.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, transportError(ctx, r, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// transportError gives a failed round trip the kind a caller can act on.
// The message names the method and URL once (url.Error would repeat them).
func transportError(ctx context.Context, r request, err error) error {
	where := r.method + " " + r.path
	var ue *url.Error
	if errors.As(err, &ue) {
		where, err = strings.ToUpper(ue.Op)+" "+ue.URL, ue.Err
	}
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return wrap(errs.Canceled, err, "%s: canceled", where)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return wrap(errs.Timeout, err, "%s", where)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return wrap(errs.Timeout, err, "%s", where)
	}
	return wrap(errs.Unavailable, err, "%s", where)
}

// wrap gives err a kind behind a message prefix. (errs.E with %w repeats
// the cause in the message, so it is not used for wrapping here.)
func wrap(kind errs.Kind, err error, format string, args ...any) error {
	return &errs.Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Err: err}
}

// doJSON sends in (if not nil) as JSON and decodes a JSON response into out
// (if not nil), with the JSON-call timeout.
func (c *Client) doJSON(ctx context.Context, method, path string, query url.Values, in, out any) error {
	return c.doJSONWith(ctx, c.hc, method, path, query, in, out)
}

// doJSONWith is doJSON through hc: c.stream for calls that may run long.
func (c *Client) doJSONWith(ctx context.Context, hc *http.Client, method, path string, query url.Values, in, out any) error {
	r := request{method: method, path: path, query: query, accept: "application/json"}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return wrap(errs.Invalid, err, "%s %s: encode body", method, path)
		}
		r.body = bytes.NewReader(b)
		r.contentType = "application/json"
	}
	resp, err := c.send(ctx, hc, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeBody(resp, out)
}

// decodeBody decodes a JSON response into out, or drains it when out is nil
// so the connection can be reused.
func decodeBody(resp *http.Response, out any) error {
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return wrap(errs.Other, err, "%s %s: decode response", resp.Request.Method, resp.Request.URL.Path)
	}
	return nil
}

// seg escapes one path segment (an id) for use in a URL path.
func seg(s string) string { return url.PathEscape(s) }

// Healthz reports whether the server process is alive.
func (c *Client) Healthz(ctx context.Context) error {
	return c.doJSON(ctx, http.MethodGet, "/healthz", nil, nil, nil)
}

// Readyz reports whether the server's database and Temporal answer; an
// *Error with code unavailable when they do not.
func (c *Client) Readyz(ctx context.Context) error {
	return c.doJSON(ctx, http.MethodGet, "/readyz", nil, nil, nil)
}
