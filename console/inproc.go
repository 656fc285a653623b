package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// remoteKey carries the browser's address to the API, so the API's per-address
// limits (failed sign-ins) count the browser, not the console.
type remoteKey struct{}

// remote is the browser's connection as the console saw it: its peer
// address and the forwarding headers a proxy in front may have set. The
// API decides from them who the client is, by its own trusted proxies,
// exactly as for a request sent to it directly.
type remote struct {
	addr         string
	forwardedFor []string
	realIP       []string
}

// forwardingHeaders are the headers the API reads the client address from
// when the peer is a trusted proxy.
const (
	headerForwardedFor = "X-Forwarded-For"
	headerRealIP       = "X-Real-IP"
)

func withRemote(ctx context.Context, r *http.Request) context.Context {
	return context.WithValue(ctx, remoteKey{}, remote{
		addr:         r.RemoteAddr,
		forwardedFor: r.Header.Values(headerForwardedFor),
		realIP:       r.Header.Values(headerRealIP),
	})
}

// inproc is an http.RoundTripper that serves each request with the API's
// handler in this process: no socket, no second authentication path. The
// response body is a pipe, so streamed answers (events, exec output) arrive
// as the handler flushes them; the request's context ends the handler.
type inproc struct{ h http.Handler }

func (t inproc) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	sreq := req.Clone(ctx)
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "127.0.0.1:0"
	// The API client never sets forwarding headers; only the browser's,
	// passed on below, may reach the API.
	sreq.Header.Del(headerForwardedFor)
	sreq.Header.Del(headerRealIP)
	if rm, ok := ctx.Value(remoteKey{}).(remote); ok && rm.addr != "" {
		sreq.RemoteAddr = rm.addr
		for _, v := range rm.forwardedFor {
			sreq.Header.Add(headerForwardedFor, v)
		}
		for _, v := range rm.realIP {
			sreq.Header.Add(headerRealIP, v)
		}
	}
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		var err error
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("console: api handler: %v", v)
			}
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200
			_ = pw.CloseWithError(err)
		}()
		t.h.ServeHTTP(w, sreq)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		_ = pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: pr, ContentLength: -1, Request: req,
	}, nil
}

// pipeWriter is the http.ResponseWriter the API writes to in process.
type pipeWriter struct {
	header http.Header
	sent   http.Header // the header as it was when the status was written
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	status int
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) {
	w.once.Do(func() {
		w.status = status
		w.sent = w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(b)
}

// Flush sends the status and header now: the pipe itself is unbuffered.
func (w *pipeWriter) Flush() { w.WriteHeader(http.StatusOK) }
