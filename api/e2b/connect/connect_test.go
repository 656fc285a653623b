package connect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
)

// fakeClock fires deadlines and ticks when the test says so.
type fakeClock struct {
	mu      sync.Mutex
	funcs   []func()
	armed   chan time.Duration
	tickers chan chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{armed: make(chan time.Duration, 8), tickers: make(chan chan time.Time, 8)}
}

func (f *fakeClock) AfterFunc(d time.Duration, fn func()) func() bool {
	f.mu.Lock()
	f.funcs = append(f.funcs, fn)
	f.mu.Unlock()
	f.armed <- d
	return func() bool { return true }
}

func (f *fakeClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	c := make(chan time.Time)
	f.tickers <- c
	return c, func() {}
}

// fire runs every armed deadline.
func (f *fakeClock) fire() {
	f.mu.Lock()
	fns := f.funcs
	f.funcs = nil
	f.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

type msg struct {
	Text  string    `json:"text,omitempty"`
	Count int       `json:"count,omitempty"`
	Ping  *struct{} `json:"ping,omitempty"`
}

func testServer(t *testing.T, clock Clock) *httptest.Server {
	t.Helper()
	mux := NewMux(Options{Clock: clock, MaxMessageBytes: 1024})
	mux.Handle("test.Svc/Echo", Unary(func(_ context.Context, h http.Header, req *msg) (*msg, error) {
		return &msg{Text: req.Text + h.Get("X-Suffix")}, nil
	}))
	mux.Handle("test.Svc/Fail", Unary(func(context.Context, http.Header, *msg) (*msg, error) {
		return nil, errs.E(errs.NotFound, "stat /nope: no such file")
	}))
	mux.Handle("test.Svc/Count", ServerStream(func(_ context.Context, _ http.Header, req *msg, s *Sender[msg]) error {
		for i := 1; i <= req.Count; i++ {
			if err := s.Send(&msg{Count: i}); err != nil {
				return err
			}
		}
		if req.Text == "fail" {
			return NewError(FailedPrecondition, "stopped after the count")
		}
		return nil
	}, nil))
	mux.Handle("test.Svc/Wait", ServerStream(func(ctx context.Context, _ http.Header, _ *msg, s *Sender[msg]) error {
		if err := s.Send(&msg{Text: "started"}); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}, func() *msg { return &msg{Ping: &struct{}{}} }))
	mux.Handle("test.Svc/Sum", ClientStream(func(_ context.Context, _ http.Header, in *Receiver[msg]) (*msg, error) {
		sum := 0
		for {
			m, err := in.Receive()
			if errors.Is(err, io.EOF) {
				return &msg{Count: sum}, nil
			}
			if err != nil {
				return nil, err
			}
			sum += m.Count
		}
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func envelope(flags byte, payload string) []byte {
	b := make([]byte, 5, 5+len(payload))
	b[0] = flags
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	return append(b, payload...)
}

// readFrames splits a stream response into its envelopes as "flags:payload".
func readFrames(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	for {
		flags, payload, err := readEnvelope(r, 1<<20)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read envelope: %v", err)
		}
		out = append(out, string(rune('0'+flags))+":"+string(payload))
	}
}

func TestUnary(t *testing.T) {
	srv := testServer(t, newFakeClock())
	cases := []struct {
		name, method, path, ctype, body string
		headers                         map[string]string
		status                          int
		want                            string
	}{
		{"echo", "POST", "/e2b/envd/test.Svc/Echo", "application/json", `{"text":"hi"}`, map[string]string{"X-Suffix": "!", "Connect-Protocol-Version": "1"}, 200, `{"text":"hi!"}`},
		{"charset param", "POST", "/test.Svc/Echo", "application/json; charset=utf-8", `{"text":"a"}`, nil, 200, `{"text":"a"}`},
		{"empty body is the empty message", "POST", "/test.Svc/Echo", "application/json", ``, nil, 200, `{}`},
		{"unknown fields ignored", "POST", "/test.Svc/Echo", "application/json", `{"text":"a","other":1}`, nil, 200, `{"text":"a"}`},
		{"malformed json", "POST", "/test.Svc/Echo", "application/json", `{"text":`, nil, 400, `"code":"invalid_argument"`},
		{"wrong type", "POST", "/test.Svc/Echo", "application/json", `{"text":5}`, nil, 400, `"code":"invalid_argument"`},
		{"too large", "POST", "/test.Svc/Echo", "application/json", `{"text":"` + strings.Repeat("x", 2000) + `"}`, nil, 429, `"code":"resource_exhausted"`},
		{"errs kind maps to code", "POST", "/test.Svc/Fail", "application/json", `{}`, nil, 404, `{"code":"not_found","message":"stat /nope: no such file"}`},
		{"unknown procedure", "POST", "/test.Svc/Nope", "application/json", `{}`, nil, 404, `"code":"unimplemented"`},
		{"get refused", "GET", "/test.Svc/Echo", "", ``, nil, 405, `"code":"unimplemented"`},
		{"proto codec refused", "POST", "/test.Svc/Echo", "application/proto", ``, nil, 415, ``},
		{"bad protocol version", "POST", "/test.Svc/Echo", "application/json", `{}`, map[string]string{"Connect-Protocol-Version": "2"}, 400, `"code":"invalid_argument"`},
		{"bad timeout", "POST", "/test.Svc/Echo", "application/json", `{}`, map[string]string{"Connect-Timeout-Ms": "-5"}, 400, `Connect-Timeout-Ms`},
		{"bad encoding", "POST", "/test.Svc/Echo", "application/json", `{}`, map[string]string{"Content-Encoding": "br"}, 501, `"code":"unimplemented"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
				t.Fatalf("got %d %s, want %d containing %s", res.StatusCode, body, tc.status, tc.want)
			}
			if tc.status != 415 && res.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("content type %q", res.Header.Get("Content-Type"))
			}
		})
	}
}

func TestStreams(t *testing.T) {
	srv := testServer(t, newFakeClock())
	cases := []struct {
		name, path string
		body       []byte
		headers    map[string]string
		want       []string
	}{
		{"messages then end-stream", "/test.Svc/Count", envelope(0, `{"count":2}`), nil,
			[]string{`0:{"count":1}`, `0:{"count":2}`, `2:{}`}},
		{"error in end-stream", "/test.Svc/Count", envelope(0, `{"count":1,"text":"fail"}`), nil,
			[]string{`0:{"count":1}`, `2:{"error":{"code":"failed_precondition","message":"stopped after the count"}}`}},
		{"truncated header", "/test.Svc/Count", []byte{0, 0, 0}, nil,
			[]string{`2:{"error":{"code":"invalid_argument","message":"truncated envelope: fewer than 5 header bytes"}}`}},
		{"truncated payload", "/test.Svc/Count", envelope(0, `{"count":1}`)[:9], nil,
			[]string{`2:{"error":{"code":"invalid_argument","message":"truncated envelope: the header announces 11 bytes"}}`}},
		{"oversized", "/test.Svc/Count", envelope(0, strings.Repeat(" ", 2000)), nil,
			[]string{`2:{"error":{"code":"resource_exhausted","message":"message of 2000 bytes is over the limit of 1024"}}`}},
		{"no message", "/test.Svc/Count", nil, nil,
			[]string{`2:{"error":{"code":"invalid_argument","message":"a server-streaming call needs one request message"}}`}},
		{"malformed json", "/test.Svc/Count", envelope(0, `{"count":"x"}`), nil,
			[]string{`2:{"error":{"code":"invalid_argument"`}},
		{"compressed without encoding", "/test.Svc/Count", envelope(1, `xx`), nil,
			[]string{`2:{"error":{"code":"invalid_argument","message":"a compressed message without Connect-Content-Encoding"}}`}},
		{"client stream", "/test.Svc/Sum", append(envelope(0, `{"count":2}`), envelope(0, `{"count":40}`)...), nil,
			[]string{`0:{"count":42}`, `2:{}`}},
		{"client stream truncated", "/test.Svc/Sum", append(envelope(0, `{"count":2}`), 0, 0), nil,
			[]string{`2:{"error":{"code":"invalid_argument","message":"truncated envelope: fewer than 5 header bytes"}}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL+tc.path, bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/connect+json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/connect+json" {
				t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
			}
			got := readFrames(t, res.Body)
			if len(got) != len(tc.want) {
				t.Fatalf("got frames %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Fatalf("frame %d: got %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestKeepaliveAndDeadline drives one stream through a keepalive tick and a
// deadline, both fired by the fake clock.
func TestKeepaliveAndDeadline(t *testing.T) {
	clock := newFakeClock()
	srv := testServer(t, clock)
	req, _ := http.NewRequest("POST", srv.URL+"/test.Svc/Wait", bytes.NewReader(envelope(0, `{}`)))
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("Keepalive-Ping-Interval", "50")
	req.Header.Set("Connect-Timeout-Ms", "1500")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if d := <-clock.armed; d != 1500*time.Millisecond {
		t.Fatalf("deadline armed for %v", d)
	}
	br := bufio.NewReader(res.Body)
	next := func() string {
		flags, payload, err := readEnvelope(br, 1<<20)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return string(rune('0'+flags)) + ":" + string(payload)
	}
	if got := next(); got != `0:{"text":"started"}` {
		t.Fatalf("first frame %q", got)
	}
	ticks := <-clock.tickers
	ticks <- time.Time{}
	if got := next(); got != `0:{"ping":{}}` {
		t.Fatalf("keepalive frame %q", got)
	}
	clock.fire()
	var end struct{ Error *Error }
	got := next()
	if err := json.Unmarshal([]byte(got[2:]), &end); err != nil || got[0] != '2' || end.Error == nil || end.Error.Code != DeadlineExceeded {
		t.Fatalf("end frame %q", got)
	}
}

func TestUnaryDeadline(t *testing.T) {
	clock := newFakeClock()
	mux := NewMux(Options{Clock: clock})
	mux.Handle("test.Svc/Block", Unary(func(ctx context.Context, _ http.Header, _ *msg) (*msg, error) {
		<-ctx.Done()
		return nil, errs.Wrap(errs.Unavailable, ctx.Err())
	}))
	req := httptest.NewRequest("POST", "/test.Svc/Block", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Timeout-Ms", "10")
	rec := httptest.NewRecorder()
	go func() {
		<-clock.armed
		clock.fire()
	}()
	mux.ServeHTTP(rec, req)
	if rec.Code != 504 || !strings.Contains(rec.Body.String(), `"code":"deadline_exceeded"`) {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
}

func TestProcName(t *testing.T) {
	for in, want := range map[string]string{
		"/e2b/envd/process.Process/Start": "process.Process/Start",
		"/filesystem.Filesystem/Stat/":    "filesystem.Filesystem/Stat",
		"/health":                         "",
	} {
		if got := procName(in); got != want {
			t.Errorf("procName(%q) = %q, want %q", in, got, want)
		}
	}
}
