// Package connect serves the Connect protocol (connectrpc.com/docs/protocol)
// with the JSON codec only, the way E2B's SDKs speak to envd: unary calls
// (POST application/json), server-streaming calls (application/connect+json,
// enveloped messages ending with an end-stream message), client-streaming
// calls, Connect-Timeout-Ms deadlines and the Keepalive-Ping-Interval header
// envd honours on its streams. It is hand-written rather than generated
// because the door only needs the JSON half of the protocol, and its
// messages are plain Go structs with proto3 JSON names (see package envd).
package connect

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Header names of the protocol (and envd's keepalive).
const (
	HeaderProtocolVersion   = "Connect-Protocol-Version"
	HeaderTimeout           = "Connect-Timeout-Ms"
	HeaderStreamEncoding    = "Connect-Content-Encoding"
	HeaderKeepaliveInterval = "Keepalive-Ping-Interval"
)

// Content types of the JSON codec.
const (
	contentTypeUnary  = "application/json"
	contentTypeStream = "application/connect+json"
)

type procKind int

const (
	kindUnary procKind = iota
	kindServerStream
	kindClientStream
)

// Procedure is one method of a service, built by Unary, ServerStream or
// ClientStream.
type Procedure struct {
	kind  procKind
	serve func(ctx context.Context, c *call)
}

// call is what a procedure needs of one request.
type call struct {
	w      http.ResponseWriter
	r      *http.Request
	body   io.Reader // the request body, decompressed for unary calls
	gzip   bool      // enveloped messages flagged compressed are gzip
	limit  int
	clock  Clock
	header http.Header
}

// Options configure a Mux; zero fields take defaults.
type Options struct {
	// Clock drives deadlines and keepalives; the wall clock by default.
	Clock Clock
	// MaxMessageBytes bounds one request message; 16 MiB by default.
	MaxMessageBytes int
}

// Mux routes /<package>.<Service>/<Method> to its procedure. The path may
// carry any prefix (the door mounts it under /e2b/envd): the last two
// segments name the procedure.
type Mux struct {
	procs map[string]Procedure
	opts  Options
}

// NewMux returns an empty Mux.
func NewMux(opts Options) *Mux {
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = maxMessageBytes
	}
	return &Mux{procs: map[string]Procedure{}, opts: opts}
}

// Handle registers p under name, e.g. "process.Process/Start".
func (m *Mux) Handle(name string, p Procedure) { m.procs[strings.Trim(name, "/")] = p }

// Has reports whether the path names a registered procedure, so a router can
// send everything else (/files, /health) elsewhere.
func (m *Mux) Has(path string) bool {
	_, ok := m.procs[procName(path)]
	return ok
}

// procName is the last two segments of a path: "process.Process/Start".
func procName(path string) string {
	path = strings.TrimRight(path, "/")
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return ""
	}
	j := strings.LastIndexByte(path[:i], '/')
	return path[j+1:]
}

// ServeHTTP answers one call.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := m.procs[procName(r.URL.Path)]
	if !ok {
		writeUnaryError(w, NewError(Unimplemented, fmt.Sprintf("no procedure %s", r.URL.Path)), http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeUnaryError(w, NewError(Unimplemented, "only POST is served"), http.StatusMethodNotAllowed)
		return
	}
	want := contentTypeUnary
	if p.kind != kindUnary {
		want = contentTypeStream
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != want {
		// The protocol answers a codec it does not speak with 415, naming the one it does.
		w.Header().Set("Accept-Post", want)
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	c := &call{w: w, r: r, body: r.Body, limit: m.opts.MaxMessageBytes, clock: m.opts.Clock, header: r.Header}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	if err := c.prepare(ctx, p.kind, cancel); err != nil {
		if p.kind == kindUnary {
			writeUnaryError(w, err, 0)
		} else {
			startStream(w, true)
			writeEndStream(w, err)
		}
		return
	}
	p.serve(ctx, c)
}

// prepare checks the protocol headers and arms the deadline.
func (c *call) prepare(ctx context.Context, kind procKind, cancel context.CancelCauseFunc) *Error {
	if v := c.header.Get(HeaderProtocolVersion); v != "" && v != "1" {
		return NewError(InvalidArgument, fmt.Sprintf("Connect-Protocol-Version %q is not supported, only 1", v))
	}
	if v := c.header.Get(HeaderTimeout); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 || len(v) > 10 {
			return NewError(InvalidArgument, fmt.Sprintf("Connect-Timeout-Ms %q is not a positive integer of at most 10 digits", v))
		}
		stop := c.clock.AfterFunc(time.Duration(ms)*time.Millisecond, func() { cancel(errDeadline) })
		context.AfterFunc(ctx, func() { stop() })
	}
	encHeader := "Content-Encoding"
	if kind != kindUnary {
		encHeader = HeaderStreamEncoding
	}
	switch enc := c.header.Get(encHeader); enc {
	case "", "identity":
	case "gzip":
		if kind != kindUnary {
			c.gzip = true
			break
		}
		zr, err := gzip.NewReader(c.body)
		if err != nil {
			return NewError(InvalidArgument, "the gzip request body is malformed: "+err.Error())
		}
		c.body = zr
	default:
		return NewError(Unimplemented, fmt.Sprintf("%s %q is not supported (identity, gzip)", encHeader, enc))
	}
	return nil
}

// readMessage reads the next enveloped message; io.EOF at the body's end.
func (c *call) readMessage(v any) error {
	flags, payload, err := readEnvelope(c.body, c.limit)
	if err != nil {
		return err
	}
	if flags&flagCompressed != 0 {
		if !c.gzip {
			return NewError(InvalidArgument, "a compressed message without Connect-Content-Encoding")
		}
		zr, err := gzip.NewReader(strings.NewReader(string(payload)))
		if err != nil {
			return NewError(InvalidArgument, "a malformed gzip message: "+err.Error())
		}
		if payload, err = io.ReadAll(io.LimitReader(zr, int64(c.limit)+1)); err != nil || len(payload) > c.limit {
			return NewError(InvalidArgument, "a malformed or oversized gzip message")
		}
	}
	return decode(payload, v)
}

// decode unmarshals one JSON message; an empty payload is the empty message.
func decode(payload []byte, v any) error {
	if len(strings.TrimSpace(string(payload))) == 0 {
		return nil
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return NewError(InvalidArgument, "the message is not valid JSON for its type: "+err.Error())
	}
	return nil
}

// Unary builds a unary procedure. header is the request's headers.
func Unary[Req, Res any](fn func(ctx context.Context, header http.Header, req *Req) (*Res, error)) Procedure {
	return Procedure{kind: kindUnary, serve: func(ctx context.Context, c *call) {
		body, err := io.ReadAll(io.LimitReader(c.body, int64(c.limit)+1))
		if err != nil {
			writeUnaryError(c.w, ErrorOf(ctx, err), 0)
			return
		}
		if len(body) > c.limit {
			writeUnaryError(c.w, NewError(ResourceExhausted, "the request message is over the limit"), 0)
			return
		}
		req := new(Req)
		if err := decode(body, req); err != nil {
			writeUnaryError(c.w, ErrorOf(ctx, err), 0)
			return
		}
		res, err := fn(ctx, c.header, req)
		if err == nil && ctx.Err() != nil && errors.Is(context.Cause(ctx), errDeadline) {
			err = ctx.Err()
		}
		if err != nil {
			writeUnaryError(c.w, ErrorOf(ctx, err), 0)
			return
		}
		out, err := json.Marshal(res)
		if err != nil {
			writeUnaryError(c.w, NewError(Internal, "encode the response: "+err.Error()), 0)
			return
		}
		c.w.Header().Set("Content-Type", contentTypeUnary)
		c.w.WriteHeader(http.StatusOK)
		_, _ = c.w.Write(out)
	}}
}

// Sender sends the messages of a server stream; it is safe for concurrent use
// (the keepalive ticker sends beside the handler).
type Sender[Res any] struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	closed bool
}

// Send writes one message and flushes it to the client.
func (s *Sender[Res]) Send(msg *Res) error { return s.send(msg, true) }

// SendLast writes the stream's last message without flushing it: the
// end-stream message and the response's end follow at once and leave with
// it, in one write, so a client reading the stream wakes once for the
// three (a short command's end costs one round of the client's event loop,
// not three).
func (s *Sender[Res]) SendLast(msg *Res) error { return s.send(msg, false) }

func (s *Sender[Res]) send(msg *Res, flushNow bool) error {
	out, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode a stream message: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return NewError(Internal, "send on an ended stream")
	}
	if err := writeEnvelope(s.w, 0, out); err != nil {
		return err
	}
	if flushNow {
		flush(s.w)
	}
	return nil
}

// end writes the end-stream message; nothing is sent after it. It is not
// flushed: the handler returns right after, and net/http sends it with the
// response's last chunk.
func (s *Sender[Res]) end(err *Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	out, _ := json.Marshal(endStream{Error: err})
	_ = writeEnvelope(s.w, flagEndStream, out)
}

// ServerStream builds a server-streaming procedure. When the request has a
// Keepalive-Ping-Interval (seconds) and keepalive is not nil, the message
// keepalive returns is sent at that interval for as long as fn runs, the way
// envd keeps idle streams alive through proxies.
func ServerStream[Req, Res any](fn func(ctx context.Context, header http.Header, req *Req, s *Sender[Res]) error, keepalive func() *Res) Procedure {
	return Procedure{kind: kindServerStream, serve: func(ctx context.Context, c *call) {
		req := new(Req)
		err := c.readMessage(req)
		if errors.Is(err, io.EOF) {
			err = NewError(InvalidArgument, "a server-streaming call needs one request message")
		}
		// The headers leave with the first message (a stream's first
		// message is sent at once: envd's start event), not in a write of
		// their own.
		startStream(c.w, false)
		if err != nil {
			writeEndStream(c.w, ErrorOf(ctx, err))
			return
		}
		s := &Sender[Res]{w: c.w}
		stopKeepalive := c.keepalive(ctx, func() { _ = s.Send(keepalive()) }, keepalive != nil)
		err = fn(ctx, c.header, req, s)
		stopKeepalive()
		if err == nil && errors.Is(context.Cause(ctx), errDeadline) {
			err = ctx.Err()
		}
		if err != nil {
			s.end(ErrorOf(ctx, err))
			return
		}
		s.end(nil)
	}}
}

// keepalive runs ping every Keepalive-Ping-Interval seconds until the
// returned stop is called; stop returns once no ping runs any more.
func (c *call) keepalive(ctx context.Context, ping func(), enabled bool) (stop func()) {
	secs, err := strconv.Atoi(c.header.Get(HeaderKeepaliveInterval))
	if !enabled || err != nil || secs <= 0 {
		return func() {}
	}
	ticks, stopTicker := c.clock.NewTicker(time.Duration(secs) * time.Second)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-ticks:
				ping()
			}
		}
	}()
	return func() {
		stopTicker()
		close(done)
		<-exited
	}
}

// Receiver reads the messages of a client stream.
type Receiver[Req any] struct{ c *call }

// Receive returns the next message, or io.EOF after the last one.
func (r *Receiver[Req]) Receive() (*Req, error) {
	req := new(Req)
	if err := r.c.readMessage(req); err != nil {
		return nil, err
	}
	return req, nil
}

// ClientStream builds a client-streaming procedure: fn reads the messages
// through the Receiver and answers once.
func ClientStream[Req, Res any](fn func(ctx context.Context, header http.Header, in *Receiver[Req]) (*Res, error)) Procedure {
	return Procedure{kind: kindClientStream, serve: func(ctx context.Context, c *call) {
		res, err := fn(ctx, c.header, &Receiver[Req]{c: c})
		if err == nil && errors.Is(context.Cause(ctx), errDeadline) {
			err = ctx.Err()
		}
		startStream(c.w, true)
		if err != nil {
			writeEndStream(c.w, ErrorOf(ctx, err))
			return
		}
		out, err := json.Marshal(res)
		if err != nil {
			writeEndStream(c.w, NewError(Internal, "encode the response: "+err.Error()))
			return
		}
		if err := writeEnvelope(c.w, 0, out); err != nil {
			return
		}
		writeEndStream(c.w, nil)
	}}
}

// startStream writes the headers of a streaming response: always 200, the
// outcome is in the end-stream message. flushNow sends them at once.
func startStream(w http.ResponseWriter, flushNow bool) {
	w.Header().Set("Content-Type", contentTypeStream)
	w.WriteHeader(http.StatusOK)
	if flushNow {
		flush(w)
	}
}

// endStream is the last message of a stream.
type endStream struct {
	Error *Error `json:"error,omitempty"`
}

func writeEndStream(w http.ResponseWriter, err *Error) {
	out, _ := json.Marshal(endStream{Error: err})
	_ = writeEnvelope(w, flagEndStream, out)
	flush(w)
}

// writeUnaryError answers a unary call with {"code", "message"} and the
// code's HTTP status, or status when it is not zero.
func writeUnaryError(w http.ResponseWriter, err error, status int) {
	ce := ErrorOf(context.Background(), err)
	if status == 0 {
		status = ce.Code.HTTPStatus()
	}
	out, _ := json.Marshal(ce)
	w.Header().Set("Content-Type", contentTypeUnary)
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

func flush(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
}
