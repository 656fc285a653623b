package openapitest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
)

// maxFailures bounds what a Checker keeps: past it, one more line says so.
const maxFailures = 100

// Checker is an http.RoundTripper that checks every /v1 answer passing
// through it against a Document. It never changes what the caller reads:
// a JSON body is read whole and handed on as it came; NDJSON and SSE are
// checked as the caller reads them, so a stream is not held back.
type Checker struct {
	doc  *Document
	next http.RoundTripper

	mu       sync.Mutex
	failures []string
	checked  int
	seen     map[string]bool // "GET /v1/workspaces/{id} 200"
}

// Seen lists the operations and statuses answered so far, as
// "METHOD /path/{template} STATUS", for a coverage count.
func (c *Checker) Seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.seen))
	for k := range c.seen {
		out = append(out, k)
	}
	return out
}

// NewChecker wraps next (nil: http.DefaultTransport).
func NewChecker(doc *Document, next http.RoundTripper) *Checker {
	if next == nil {
		next = http.DefaultTransport
	}
	return &Checker{doc: doc, next: next}
}

// Failures returns every answer that did not match the document so far.
func (c *Checker) Failures() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.failures...)
}

// Checked is how many answers were checked (bodies or streams begun).
func (c *Checker) Checked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checked
}

func (c *Checker) fail(what string, problems ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.failures) > maxFailures {
		return
	}
	if len(c.failures) == maxFailures {
		c.failures = append(c.failures, "... and more")
		return
	}
	if len(problems) > 5 {
		problems = append(problems[:5], fmt.Sprintf("(%d more)", len(problems)-5))
	}
	c.failures = append(c.failures, what+": "+strings.Join(problems, "; "))
}

func (c *Checker) count() {
	c.mu.Lock()
	c.checked++
	c.mu.Unlock()
}

// RoundTrip sends req and checks its answer.
func (c *Checker) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil || !strings.HasPrefix(req.URL.Path, "/v1/") ||
		resp.StatusCode == http.StatusSwitchingProtocols || req.Method == http.MethodHead {
		return resp, err
	}
	what := fmt.Sprintf("%s %s -> %d", req.Method, req.URL.Path, resp.StatusCode)
	if r, ok := c.doc.match(req.URL.Path); ok && r.ops[req.Method] != nil {
		c.mu.Lock()
		if c.seen == nil {
			c.seen = map[string]bool{}
		}
		c.seen[fmt.Sprintf("%s %s %d", req.Method, r.path, resp.StatusCode)] = true
		c.mu.Unlock()
	}
	kind, schema, events, serr := c.doc.schemaFor(req.Method, req.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"))
	if serr != nil {
		c.fail(what, serr.Error())
		return resp, nil
	}
	switch kind {
	case "json":
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if rerr != nil {
			// The caller would have seen the broken read: hand it on.
			resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{rerr}))
			return resp, nil
		}
		c.count()
		if p := c.doc.checkJSON(body, schema, "body"); len(p) > 0 {
			c.fail(what, p...)
		}
	case "ndjson":
		c.count()
		resp.Body = &lineChecker{ReadCloser: resp.Body, check: func(line []byte, n int) {
			if p := c.doc.checkJSON(line, schema, fmt.Sprintf("line %d", n)); len(p) > 0 {
				c.fail(what, p...)
			}
		}}
	case "sse":
		c.count()
		resp.Body = &lineChecker{ReadCloser: resp.Body, check: sseChecker(c, what, events)}
	}
	return resp, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// lineChecker hands each whole line the caller reads to check.
type lineChecker struct {
	io.ReadCloser
	check   func(line []byte, n int)
	pending []byte
	n       int
}

func (l *lineChecker) Read(p []byte) (int, error) {
	n, err := l.ReadCloser.Read(p)
	l.pending = append(l.pending, p[:n]...)
	for {
		i := bytes.IndexByte(l.pending, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimRight(l.pending[:i], "\r")
		l.pending = l.pending[i+1:]
		l.n++
		l.check(line, l.n)
	}
	if err == io.EOF && len(bytes.TrimSpace(l.pending)) > 0 {
		l.n++
		l.check(l.pending, l.n)
		l.pending = nil
	}
	return n, err
}

// sseChecker checks each event's data against its name's schema. The
// NDJSON line numbers are not used: SSE lines gather into events.
func sseChecker(c *Checker, what string, events map[string]map[string]any) func([]byte, int) {
	var name string
	var data []byte
	return func(line []byte, _ int) {
		switch {
		case len(line) == 0:
			if data != nil {
				if name == "" {
					name = "message"
				}
				if s, ok := events[name]; !ok {
					c.fail(what, fmt.Sprintf("event %q is not in the document", name))
				} else if p := c.doc.checkJSON(data, s, "event "+name); len(p) > 0 {
					c.fail(what, p...)
				}
			}
			name, data = "", nil
		case line[0] == ':':
		case bytes.HasPrefix(line, []byte("event:")):
			name = strings.TrimSpace(string(line[len("event:"):]))
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, d...)
		}
	}
}

// AppendSeen appends c.Seen() to the file PRIMER_OPENAPI_SEEN names, one a
// line, when it is set: a way to count which operations a test run
// checked (sort -u the file).
func AppendSeen(c *Checker) {
	name := os.Getenv("PRIMER_OPENAPI_SEEN")
	if name == "" {
		return
	}
	f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	for _, s := range c.Seen() {
		fmt.Fprintln(f, s)
	}
}
