package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker"
)

// Issue 21, holes 8, 10 and 14: what one member key can hold open, upload,
// sign in and spoof. Each test drives a real `primer serve` with a member
// key and asserts the refusal (status and message) and that nothing
// happened (no file written, no memory held, no session kept, no budget
// escaped).

// withBounds changes the platform's caps for one test.
func withBounds(f func(*worker.Config)) option { return option(f) }

// TestAttackStreamCaps: a member key opening event streams without end.
// Past the key's cap, then the tenant's, a stream is 429 naming the cap
// with Retry-After, on every streaming endpoint; the streams already open
// keep delivering; a stream closed by its client, or ended by the
// platform, frees its place.
func TestAttackStreamCaps(t *testing.T) {
	p := startPrimer(t, withBounds(func(c *worker.Config) { c.MaxStreamsPerKey = 2; c.MaxStreamsPerTenant = 3 }))
	ctx := ctxT(t, 3*time.Minute)
	ws := boundsRunning(ctx, t, p)
	m1 := boundsMember(ctx, t, p)
	m2 := boundsMember(ctx, t, p)
	hc := boundsHTTP("")
	tenantEvents := "/v1/events?follow=true"
	wsEvents := "/v1/workspaces/" + ws.ID + "/events?follow=true"

	s1 := boundsStream(t, hc, p, m1, tenantEvents)
	s2 := boundsStream(t, hc, p, m1, wsEvents)
	for _, s := range []*boundsSSE{s1, s2} {
		if s.status != 200 {
			t.Fatalf("a stream under the cap: status %d: %s", s.status, s.body)
		}
	}
	for _, path := range []string{tenantEvents, wsEvents} {
		s := boundsStream(t, hc, p, m1, path)
		boundsRefused(t, s.status, s.body, 429, "api key "+keyID(t, m1)+" has 2 open streams, the cap for one key")
		if ra, err := strconv.Atoi(s.header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("%s: Retry-After %q", path, s.header.Get("Retry-After"))
		}
	}
	s3 := boundsStream(t, hc, p, m2, tenantEvents)
	if s3.status != 200 {
		t.Fatalf("another key's stream under the tenant cap: status %d: %s", s3.status, s3.body)
	}
	s := boundsStream(t, hc, p, m2, wsEvents)
	boundsRefused(t, s.status, s.body, 429, "tenant default has 3 open streams, the cap for one tenant")

	// The open streams still deliver: a second workspace's events reach
	// both tenant streams.
	ws2 := boundsRunning(ctx, t, p)
	for i, s := range []*boundsSSE{s1, s3} {
		s.waitFor(t, wire.EventProvisioned, ws2.ID, fmt.Sprintf("tenant stream %d", i+1))
	}

	// A client that leaves frees its place.
	s1.close()
	s4 := boundsEventually(t, hc, p, m1, tenantEvents)
	// A stream the platform ends (its workspace destroyed) frees its place.
	if _, err := p.api.DeleteWorkspace(ctx, ws.ID); err != nil {
		t.Fatal(err)
	}
	s2.waitFor(t, wire.EventDestroyed, ws.ID, "the workspace's stream")
	s2.waitEnd(t)
	s5 := boundsEventually(t, hc, p, m1, "/v1/workspaces/"+ws2.ID+"/events?follow=true")
	// And they work.
	if _, err := p.api.DeleteWorkspace(ctx, ws2.ID); err != nil {
		t.Fatal(err)
	}
	s4.waitFor(t, wire.EventDestroyed, ws2.ID, "the reopened tenant stream")
	s5.waitFor(t, wire.EventDestroyed, ws2.ID, "the reopened workspace stream")
}

// TestAttackUploadBounds: a member key uploading more than the limit, with
// no length announced, and many uploads at once. The oversized body is
// refused 413 without being held in memory and nothing reaches the
// workspace or stays in the spool dir; past the tenant's cap an upload is
// 429; when one finishes the next goes through.
func TestAttackUploadBounds(t *testing.T) {
	const limit = 32 << 20
	// A container workspace: members may not reach into host backends.
	e := containertest.Known()[0]
	containertest.Require(t, e)
	r := newFaultRig(t, e, withBounds(func(c *worker.Config) { c.MaxFileBytes = limit; c.MaxUploadsPerTenant = 1 }))
	p := r.p
	r.template("bounds", nil)
	ws := r.running(t, "bounds")
	ctx := ctxT(t, 3*time.Minute)
	m := boundsMember(ctx, t, p)
	// exists asks the workspace (as the admin) whether name is there.
	exists := func(name string) bool {
		_, err := p.api.StatFile(ctx, ws.ID, name)
		if err != nil && !errs.Is(err, errs.NotFound) {
			t.Fatalf("stat %s: %v", name, err)
		}
		return err == nil
	}
	content := func(name string) string {
		rc, err := p.api.OpenFile(ctx, ws.ID, name)
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		return string(b)
	}
	hc := boundsHTTP("")
	files := p.srv.URL() + "/v1/workspaces/" + ws.ID + "/files/"
	spool := filepath.Join(p.cfg.DataDir, "uploads")

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	status, _, body := boundsDo(t, hc, "PUT", files+"big.bin", m, &boundsZeros{n: limit + 16<<20})
	runtime.ReadMemStats(&after)
	boundsRefused(t, status, body, 413, "over the limit of 33554432 bytes")
	// Buffering the body would allocate the limit at least (twice, growing
	// by doubling); spooling it, copy buffers. The platform runs in this
	// process, so its allocations are the ones counted.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > limit/2 {
		t.Errorf("an oversized upload allocated %d MiB in the platform; the body is held in memory", grew>>20)
	}
	if exists("big.bin") {
		t.Fatal("the oversized upload reached the workspace")
	}
	if left, err := os.ReadDir(spool); err != nil || len(left) != 0 {
		t.Fatalf("spool dir %s: %d files left (%v), want none", spool, len(left), err)
	}

	// An upload still sending holds the tenant's one place. It may itself
	// be refused at first, while the place is still held by the request
	// before it (the slot is given back as its handler ends); it is then
	// started again, and any other answer fails the test.
	var pw *io.PipeWriter
	slow := make(chan int, 1)
	var startSlow func()
	startSlow = func() {
		var pr *io.PipeReader
		pr, pw = io.Pipe()
		w := pw
		t.Cleanup(func() { w.CloseWithError(io.ErrUnexpectedEOF) })
		go func() {
			st, _, _ := boundsDo(t, hc, "PUT", files+"slow.txt", m, pr)
			slow <- st
		}()
		if _, err := w.Write([]byte("first part, ")); err != nil {
			// The body was not taken: the upload was answered already.
			if st := <-slow; st != 429 {
				t.Fatalf("the slow upload ended with %d before sending its first part", st)
			}
			t.Logf("the slow upload was refused at the cap (the place was still held); again")
			startSlow()
		}
	}
	startSlow()
	// Until the slow upload's handler runs, another may still get through:
	// each try has a name of its own, and the refused one must be absent.
	var refused []byte
	var name string
	try := 0
	var seen []int
	eventually(t, time.Minute, "the second upload refused at the cap", func() bool {
		select {
		case st := <-slow:
			if st != 429 {
				t.Fatalf("the slow upload ended with %d before the second was refused (statuses so far %v)", st, seen)
			}
			t.Logf("the slow upload was refused at the cap (the place was still held); again")
			startSlow()
		default:
		}
		try++
		name = fmt.Sprintf("second-%d.txt", try)
		st, _, b := boundsDo(t, hc, "PUT", files+name, m, strings.NewReader("second"))
		seen = append(seen, st)
		refused = b
		return st == 429
	})
	boundsRefused(t, 429, refused, 429, "tenant default has 1 uploads in flight, the cap for one tenant")
	if exists(name) {
		t.Fatal("the refused upload reached the workspace")
	}
	if _, err := pw.Write([]byte("second part")); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if st := <-slow; st != 200 {
		t.Fatalf("the slow upload: status %d", st)
	}
	if got := content("slow.txt"); got != "first part, second part" {
		t.Fatalf("slow upload wrote %q", got)
	}
	eventually(t, 10*time.Second, "an upload after the first finished", func() bool {
		st, _, _ := boundsDo(t, hc, "PUT", files+"second.txt", m, strings.NewReader("second"))
		return st == 200
	})
	if got := content("second.txt"); got != "second" {
		t.Fatalf("second upload wrote %q", got)
	}
}

// TestAttackClientAddress: the failed-authentication throttle behind a
// proxy. From a peer that is not a trusted proxy, X-Forwarded-For and
// X-Real-IP change nothing: a client naming a new address each time stays
// throttled. Through the trusted proxy each client has its budget: one
// client locked out does not lock out the next, and adding addresses to
// the header does not free it. The console's sign-in counts the browser
// the same way.
func TestAttackClientAddress(t *testing.T) {
	// Connections from 127.0.0.2 are the proxy; from 127.0.0.1, a client
	// reaching the platform directly.
	p := startPrimer(t, withBounds(func(c *worker.Config) { c.TrustedProxies = []string{"127.0.0.2"} }))
	ctx := ctxT(t, 3*time.Minute)
	m := boundsMember(ctx, t, p)
	direct, proxy := boundsHTTP("127.0.0.1"), boundsHTTP("127.0.0.2")
	wrong := "pmr." + keyID(t, m) + "." + strings.Repeat("0", 64)
	list := p.srv.URL() + "/v1/workspaces"
	const burst = 20 // api.DefaultAuthFailBurst

	for i := range burst {
		st, _, b := boundsDo(t, direct, "GET", list, wrong, nil, "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1))
		boundsRefused(t, st, b, 401, "wrong secret")
	}
	st, _, b := boundsDo(t, direct, "GET", list, wrong, nil, "X-Forwarded-For", "198.51.100.200", "X-Real-IP", "198.51.100.201")
	boundsRefused(t, st, b, 429, "too many failed attempts from 127.0.0.1")

	for range burst {
		st, _, b := boundsDo(t, proxy, "GET", list, wrong, nil, "X-Forwarded-For", "203.0.113.1")
		boundsRefused(t, st, b, 401, "wrong secret")
	}
	for _, xff := range []string{"203.0.113.1", "198.51.100.9, 203.0.113.1", "203.0.113.3, 203.0.113.1"} {
		st, _, b := boundsDo(t, proxy, "GET", list, wrong, nil, "X-Forwarded-For", xff)
		boundsRefused(t, st, b, 429, "too many failed attempts from 203.0.113.1")
	}
	// Another client behind the same proxy: its own budget.
	st, _, b = boundsDo(t, proxy, "GET", list, wrong, nil, "X-Forwarded-For", "203.0.113.2")
	boundsRefused(t, st, b, 401, "wrong secret")
	if st, _, b := boundsDo(t, proxy, "GET", list, m, nil, "X-Forwarded-For", "203.0.113.2"); st != 200 {
		t.Fatalf("another client's valid key behind the proxy: %d %s", st, b)
	}

	// The console: a locked-out browser is refused, another is not.
	signin := func(xff string) string {
		form := url.Values{"api_key": {wrong}, "next": {"/"}}.Encode()
		req, _ := http.NewRequest("POST", p.srv.URL()+"/signin", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", xff)
		res, err := proxy.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		page, _ := io.ReadAll(res.Body)
		return string(page)
	}
	if page := signin("203.0.113.1"); !strings.Contains(page, "too many failed attempts from 203.0.113.1") {
		t.Errorf("console sign-in of the locked-out browser: page does not say it is throttled:\n%s", boundsExcerpt(page, "Sign-in failed"))
	}
	if page := signin("203.0.113.4"); !strings.Contains(page, "wrong secret") {
		t.Errorf("console sign-in of another browser: want the key refused, not throttled:\n%s", boundsExcerpt(page, "Sign-in failed"))
	}
}

// TestAttackConsoleBounds: the console's sign-in as an attacker uses it.
// A next= that a browser would read as another host lands on "/"; one key
// signing in again and again holds at most its cap of sessions (the
// oldest cookie is refused); idle sessions are swept on a timer, with
// nobody signing in.
func TestAttackConsoleBounds(t *testing.T) {
	const ttl = 3 * time.Second
	p := startPrimer(t, withBounds(func(c *worker.Config) { c.ConsoleSessionTTL = ttl; c.ConsoleSessionsPerKey = 2 }))
	ctx := ctxT(t, 3*time.Minute)
	m := boundsMember(ctx, t, p)
	hc := boundsHTTP("")
	base := p.srv.URL()

	signin := func(next string) (location, cookie string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/signin", strings.NewReader("api_key="+url.QueryEscape(m)+"&next="+next))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		// The transport, not the client: the client would refuse to parse
		// a Location with a control character, which is the attack.
		res, err := hc.Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-in next=%s: status %d", next, res.StatusCode)
		}
		for _, ck := range res.Cookies() {
			if ck.Name == "primer_console" {
				cookie = ck.Value
			}
		}
		return res.Header.Get("Location"), cookie
	}
	for _, next := range []string{
		"/%09/evil.example", "/%0a/evil.example", "/%0d%0a/evil.example", "%09//evil.example",
		"//evil.example", "///evil.example", "/%5Cevil.example", "/%5C/evil.example", "%5C%5Cevil.example",
		"https://evil.example", "https:evil.example", "HTTPS://evil.example", "javascript:alert(1)",
		"%2F%2Fevil.example", "/%2F%2Fevil.example", "/%252F%252Fevil.example", "%20//evil.example",
	} {
		if loc, _ := signin(next); loc != "/" {
			t.Errorf("sign-in next=%s: sent to %q, want /", next, loc)
		}
	}
	if loc, _ := signin(url.QueryEscape("/workspaces?phase=running")); loc != "/workspaces?phase=running" {
		t.Errorf("sign-in next=/workspaces?phase=running: sent to %q", loc)
	}

	// Three sign-ins of one key: the first session ends.
	var cookies []string
	for range 3 {
		_, ck := signin("/")
		cookies = append(cookies, ck)
	}
	for i, want := range []int{http.StatusSeeOther, 200, 200} {
		if got := boundsPage(t, hc, base+"/workspaces", cookies[i]); got != want {
			t.Errorf("session %d of 3 with a cap of 2: status %d, want %d", i+1, got, want)
		}
	}
	if n := boundsSessions(t, hc, base); n != 2 {
		t.Errorf("primer_console_sessions = %d, want 2 (one key, capped)", n)
	}
	// Nobody signs in again: the sessions expire and are swept.
	eventually(t, ttl+10*time.Second, "idle console sessions swept", func() bool { return boundsSessions(t, hc, base) == 0 })
	if got := boundsPage(t, hc, base+"/workspaces", cookies[2]); got != http.StatusSeeOther {
		t.Errorf("an expired session's cookie: status %d, want a redirect to sign in", got)
	}
}

// boundsMember makes a member key of the default tenant (where the admin's
// workspaces are) and returns it.
func boundsMember(ctx context.Context, t *testing.T, p *primer) string {
	t.Helper()
	k, err := p.api.CreateAPIKey(ctx, wire.CreateAPIKeyRequest{TenantID: wire.DefaultTenantID, Role: wire.RoleMember, Name: "attacker"})
	if err != nil {
		t.Fatalf("create member key: %v", err)
	}
	return k.Key
}

// boundsRunning makes a running local workspace as the admin.
func boundsRunning(ctx context.Context, t *testing.T, p *primer) *wire.Workspace {
	t.Helper()
	ws, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
	if err != nil {
		t.Fatalf("create workspace: %v", err)
	}
	ws, err = p.api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil)
	if err != nil {
		t.Fatalf("wait running: %v", err)
	}
	return ws
}

// boundsHTTP is an HTTP client that does not follow redirects and, when
// from is set, connects from that local address (127.0.0.2 is a different
// peer than 127.0.0.1 on loopback).
func boundsHTTP(from string) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	return &http.Client{
		Transport:     &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 16},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// boundsDo sends one request with key (when set) and header pairs.
func boundsDo(t *testing.T, hc *http.Client, method, u, key string, body io.Reader, header ...string) (int, http.Header, []byte) {
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Error(err)
		return 0, nil, nil
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, u, err)
		return 0, nil, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

// boundsRefused checks a refusal: its status and that its message says msg.
func boundsRefused(t *testing.T, status int, body []byte, want int, msg string) {
	t.Helper()
	var env struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(body, &env)
	if status != want || !strings.Contains(env.Error.Message, msg) {
		t.Fatalf("status %d, body %s; want %d saying %q", status, body, want, msg)
	}
}

// boundsSSE is one event stream opened by a test.
type boundsSSE struct {
	status int
	header http.Header
	body   []byte // the answer, when not a stream
	events chan [2]string
	close  func()
}

// boundsStream opens path as an event stream with key. A refusal is read
// whole; a stream is read by a goroutine into events (type, data).
func boundsStream(t *testing.T, hc *http.Client, p *primer, key, path string) *boundsSSE {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", p.srv.URL()+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	res, err := hc.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", path, err)
	}
	s := &boundsSSE{status: res.StatusCode, header: res.Header, events: make(chan [2]string, 256),
		close: func() { cancel(); res.Body.Close() }}
	t.Cleanup(s.close)
	if res.StatusCode != 200 {
		s.body, _ = io.ReadAll(res.Body)
		s.close()
		return s
	}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var typ string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				s.events <- [2]string{typ, strings.TrimPrefix(line, "data: ")}
			}
		}
	}()
	return s
}

// waitFor waits for an event of typ whose data mentions id.
func (s *boundsSSE) waitFor(t *testing.T, typ, id, what string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-s.events:
			if !ok {
				t.Fatalf("%s: ended before %s of %s", what, typ, id)
			}
			if e[0] == typ && strings.Contains(e[1], id) {
				return
			}
		case <-timeout:
			t.Fatalf("%s: no %s of %s within 30s", what, typ, id)
		}
	}
}

// waitEnd waits for the platform to end the stream.
func (s *boundsSSE) waitEnd(t *testing.T) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the stream did not end within 30s")
		}
	}
}

// boundsEventually opens path as a stream until it is allowed (a place is
// freed when the platform notices its client left).
func boundsEventually(t *testing.T, hc *http.Client, p *primer, key, path string) *boundsSSE {
	t.Helper()
	var s *boundsSSE
	eventually(t, 10*time.Second, "a stream allowed again", func() bool {
		s = boundsStream(t, hc, p, key, path)
		if s.status != 200 && s.status != 429 {
			t.Fatalf("GET %s: status %d: %s", path, s.status, s.body)
		}
		return s.status == 200
	})
	return s
}

// boundsPage gets a console page with a session cookie and returns its
// status (a redirect is not followed).
func boundsPage(t *testing.T, hc *http.Client, u, cookie string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.AddCookie(&http.Cookie{Name: "primer_console", Value: cookie})
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// boundsSessions reads primer_console_sessions from /metrics.
func boundsSessions(t *testing.T, hc *http.Client, base string) int {
	t.Helper()
	st, _, b := boundsDo(t, hc, "GET", base+"/metrics", "", nil)
	if st != 200 {
		t.Fatalf("GET /metrics: %d", st)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "primer_console_sessions "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("primer_console_sessions %q", v)
			}
			return int(n)
		}
	}
	t.Fatal("/metrics has no primer_console_sessions")
	return 0
}

// boundsExcerpt is the part of a page around marker, for a failure message.
func boundsExcerpt(page, marker string) string {
	i := strings.Index(page, marker)
	if i < 0 {
		return page[:min(len(page), 400)]
	}
	return page[i:min(len(page), i+400)]
}

// boundsZeros is a body of n zero bytes that is never in memory whole and
// announces no length.
type boundsZeros struct{ n int64 }

func (z *boundsZeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	clear(p[:k])
	z.n -= k
	return int(k), nil
}
