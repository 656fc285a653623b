package e2b

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// inprocBase is the base URL of the in-process client: the host is never
// dialled, the transport hands every request to the API's handler.
const inprocBase = "http://primer.inproc"

// inproc is an http.RoundTripper that serves a request with the API's
// handler in this process: no socket and no second authentication path.
// The client address and the forwarding headers are the E2B caller's, so
// the API's per-address throttle and its audit see the real client, and
// decide by its own trusted proxies whom to believe. REST answers are
// small JSON, so the response is buffered.
type inproc struct {
	api  http.Handler
	from *http.Request // the E2B request being served
}

// forwarding are the headers the API reads a client address from.
var forwarding = []string{"X-Forwarded-For", "X-Real-IP"}

func (t inproc) RoundTrip(req *http.Request) (*http.Response, error) {
	sreq := req.Clone(req.Context())
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = t.from.RemoteAddr
	for _, h := range forwarding {
		sreq.Header.Del(h)
		for _, v := range t.from.Header.Values(h) {
			sreq.Header.Add(h, v)
		}
	}
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}}
	t.api.ServeHTTP(rec, sreq)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status: strconv.Itoa(rec.status) + " " + http.StatusText(rec.status), StatusCode: rec.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header, Body: io.NopCloser(&rec.body), ContentLength: int64(rec.body.Len()), Request: req,
	}, nil
}

// recorder is the http.ResponseWriter the API writes to in process.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// Flush is a no-op: the whole answer is handed over when the handler returns.
func (r *recorder) Flush() {}
