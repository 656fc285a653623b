package api

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// fakeClock is a settable time for the throttle.
type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time { return f.t }

func TestAuthThrottle(t *testing.T) {
	h := newHarness(t)
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	h.srv.authFails = newFailLimiter(5, 1)
	h.srv.authFails.now = clock.now

	// The admin key authenticates once before the address is throttled;
	// another valid key has not.
	h.do("GET", "/v1/workspaces", nil).expect(t, 200)
	unused := h.newKey(wire.DefaultTenantID, wire.RoleMember)
	bad := "Bearer pmr." + keyIDOf(t, unused) + "." + strings.Repeat("f", 64)

	for i := range 5 {
		r := h.do("GET", "/v1/workspaces", nil, "Authorization", bad)
		if r.status != 401 {
			t.Fatalf("failure %d: status %d, want 401", i+1, r.status)
		}
	}
	for _, tc := range []struct{ name, header string }{
		{"wrong secret", bad},
		{"no key", ""},
		{"malformed", "Bearer x"},
		{"valid key never seen", "Bearer " + unused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do("GET", "/v1/workspaces", nil, "Authorization", tc.header)
			r.expectError(t, 429, "resource_exhausted", "", "retry later")
			if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
				t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
			}
		})
	}
	// A key that authenticated before still works, reads and writes.
	h.do("GET", "/v1/workspaces", nil).expect(t, 200)
	h.do("POST", "/v1/tenants", `{"id":"still-works"}`).expect(t, 201)

	// A second later one more failure is allowed (and counted), then 429.
	clock.t = clock.t.Add(time.Second)
	h.do("GET", "/v1/workspaces", nil, "Authorization", bad).expectError(t, 401, "unauthenticated", "", "")
	h.do("GET", "/v1/workspaces", nil, "Authorization", bad).expectError(t, 429, "resource_exhausted", "", "")
	// After it refilled, the unused valid key gets through and is vouched for.
	clock.t = clock.t.Add(time.Second)
	h.do("GET", "/v1/workspaces", nil, bearer(unused)...).expect(t, 200)

	// Throttled requests never reach the store: with it closed they still
	// get 429, not 500.
	h.do("GET", "/v1/workspaces", nil, "Authorization", bad).expectError(t, 401, "unauthenticated", "", "")
	h.srv.bg.Wait()
	if err := h.store.Close(); err != nil {
		t.Fatal(err)
	}
	h.do("GET", "/v1/workspaces", nil, "Authorization", bad).expectError(t, 429, "resource_exhausted", "", "")
	h.do("POST", "/v1/workspaces", `{}`, "Authorization", bad).expectError(t, 429, "resource_exhausted", "", "")
}

func TestFailLimiter(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	l := newFailLimiter(3, 0.5)
	l.now = clock.now
	for i := range 3 {
		if _, _, out := l.exhausted("a"); out {
			t.Fatalf("exhausted after %d failures", i)
		}
		l.fail("a")
	}
	wait, report, out := l.exhausted("a")
	if !out || !report || wait != 2*time.Second {
		t.Fatalf("after 3 failures: out %v report %v wait %v; want true, true, 2s", out, report, wait)
	}
	if _, report, _ := l.exhausted("a"); report {
		t.Error("a second throttled request is reported again within reportEvery")
	}
	if _, _, out := l.exhausted("b"); out {
		t.Error("another address is throttled")
	}
	clock.t = clock.t.Add(2 * time.Second)
	if _, _, out := l.exhausted("a"); out {
		t.Error("still exhausted after a token came back")
	}
	l.vouch("h1")
	if !l.vouchedFor("h1") || l.vouchedFor("h2") {
		t.Error("vouchedFor wrong")
	}
	clock.t = clock.t.Add(vouchFor + time.Second)
	if l.vouchedFor("h1") {
		t.Error("a vouch outlived vouchFor")
	}
	// Memory stays bounded.
	for i := range maxFailBuckets + 10 {
		l.fail("addr-" + strconv.Itoa(i))
	}
	if n := len(l.buckets); n > maxFailBuckets {
		t.Errorf("%d buckets kept, want at most %d", n, maxFailBuckets)
	}
}
