package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/wire"
)

func TestParseTrustedProxies(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string // the prefixes joined by spaces, or "error"
	}{
		{nil, ""},
		{[]string{"10.0.0.0/8", " 192.0.2.7 ", "", "::1", "2001:db8::/32"}, "10.0.0.0/8 192.0.2.7/32 ::1/128 2001:db8::/32"},
		{[]string{"10.1.2.3/8"}, "10.0.0.0/8"},            // masked
		{[]string{"::ffff:192.0.2.7"}, "192.0.2.7/32"},    // unmapped
		{[]string{"10.0.0.0/33"}, "error"},                // bad length
		{[]string{"example.com"}, "error"},                // a name
		{[]string{"10.0.0.0/8", "nope"}, "error"},         // one bad item
		{[]string{"192.0.2.7:80"}, "error"},               // an address with a port
		{[]string{"0.0.0.0/0"}, "0.0.0.0/0"},              // everything: allowed, the admin's choice
		{[]string{"10.0.0.1,10.0.0.2"}, "error"},          // one item per entry
		{[]string{"\t172.16.0.0/12\n"}, "172.16.0.0/12"},  // trimmed
		{[]string{"192.0.2.300"}, "error"},                // out of range
		{[]string{"fe80::1%eth0"}, "error"},               // zoned
		{[]string{"2001:db8::1/129"}, "error"},            // bad v6 length
		{[]string{"::/0", "0.0.0.0/0"}, "::/0 0.0.0.0/0"}, // both families
	} {
		got, err := ParseTrustedProxies(tc.in)
		var s []string
		for _, p := range got {
			s = append(s, p.String())
		}
		gotS := strings.Join(s, " ")
		if err != nil {
			gotS = "error"
			if !strings.Contains(err.Error(), "trusted proxies") {
				t.Errorf("%q: error %q does not name the setting", tc.in, err)
			}
		}
		if gotS != tc.want {
			t.Errorf("ParseTrustedProxies(%q) = %q, want %q", tc.in, gotS, tc.want)
		}
	}
}

// TestClientAddress checks who the API takes the client to be: the peer,
// unless the peer is a trusted proxy, and then the right-most address of
// X-Forwarded-For (or X-Real-IP) that is not a trusted proxy.
func TestClientAddress(t *testing.T) {
	trusted := []string{"10.0.0.0/8", "2001:db8::/32"}
	base := newHarness(t).srv.cfg
	for _, tc := range []struct {
		name    string
		trusted []string
		peer    string
		headers [][2]string
		want    string
	}{
		{"no proxy trusted: the header is ignored", nil, "10.0.0.1:1234", [][2]string{{"X-Forwarded-For", "203.0.113.9"}}, "10.0.0.1"},
		{"no proxy trusted: X-Real-IP ignored", nil, "192.0.2.1:1", [][2]string{{"X-Real-IP", "203.0.113.9"}}, "192.0.2.1"},
		{"no proxy trusted: platform headers ignored", nil, "192.0.2.1:1", [][2]string{{"CF-Connecting-IP", "203.0.113.9"}, {"X-Appengine-Remote-Addr", "203.0.113.8"}}, "192.0.2.1"},
		{"untrusted peer spoofing", trusted, "192.0.2.1:1", [][2]string{{"X-Forwarded-For", "10.0.0.5, 203.0.113.9"}}, "192.0.2.1"},
		{"trusted proxy", trusted, "10.0.0.1:1", [][2]string{{"X-Forwarded-For", "203.0.113.9"}}, "203.0.113.9"},
		{"trusted proxy, client prepends a lie", trusted, "10.0.0.1:1", [][2]string{{"X-Forwarded-For", "198.51.100.66, 203.0.113.9"}}, "203.0.113.9"},
		{"trusted chain", trusted, "10.0.0.1:1", [][2]string{{"X-Forwarded-For", "198.51.100.66, 203.0.113.9, 10.0.0.7"}}, "203.0.113.9"},
		{"client's own line first", trusted, "10.0.0.1:1", [][2]string{{"X-Forwarded-For", "198.51.100.66"}, {"X-Forwarded-For", "203.0.113.9"}}, "203.0.113.9"},
		{"every hop trusted: the first", trusted, "10.0.0.1:1", [][2]string{{"X-Forwarded-For", "10.0.0.3, 10.0.0.2"}}, "10.0.0.3"},
		{"trusted proxy, no header", trusted, "10.0.0.1:1", nil, "10.0.0.1"},
		{"trusted proxy, X-Real-IP", trusted, "10.0.0.1:1", [][2]string{{"X-Real-IP", "203.0.113.9"}}, "203.0.113.9"},
		{"trusted proxy, X-Forwarded-For wins", trusted, "10.0.0.1:1", [][2]string{{"X-Real-IP", "198.51.100.66"}, {"X-Forwarded-For", "203.0.113.9"}}, "203.0.113.9"},
		{"trusted proxy, platform header ignored", trusted, "10.0.0.1:1", [][2]string{{"CF-Connecting-IP", "198.51.100.66"}}, "10.0.0.1"},
		{"IPv6 proxy", trusted, "[2001:db8::1]:1", [][2]string{{"X-Forwarded-For", "2001:db9::5"}}, "2001:db9::5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.TrustedProxies = tc.trusted
			s, err := newServer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			engine := s.routes().(*gin.Engine)
			engine.GET("/test/client", func(c *gin.Context) { c.String(http.StatusOK, c.ClientIP()) })
			req := httptest.NewRequest(http.MethodGet, "/test/client", nil)
			req.RemoteAddr = tc.peer
			for _, h := range tc.headers {
				req.Header.Add(h[0], h[1])
			}
			rec := httptest.NewRecorder()
			engine.ServeHTTP(rec, req)
			if got := rec.Body.String(); got != tc.want {
				t.Fatalf("client = %q, want %q", got, tc.want)
			}
		})
	}
	bad := base
	bad.TrustedProxies = []string{"nope"}
	if _, err := newServer(bad); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("bad trusted proxy: err %v, want one naming it", err)
	}
}

// TestAuthThrottleBehindProxy checks the failed-authentication throttle
// counts clients, not the proxy in front of them: behind a trusted proxy
// two clients have budgets of their own and a client cannot escape its own
// by adding addresses to X-Forwarded-For; from a peer that is not trusted,
// the header changes nothing.
func TestAuthThrottleBehindProxy(t *testing.T) {
	bad := func(h *harness) []string {
		unused := h.newKey(wire.DefaultTenantID, wire.RoleMember)
		return []string{"Authorization", "Bearer pmr." + keyIDOf(t, unused) + "." + strings.Repeat("f", 64)}
	}
	t.Run("trusted proxy", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.TrustedProxies = []string{"127.0.0.1", "::1"} })
		h.srv.authFails = newFailLimiter(3, 0.001)
		wrong := bad(h)
		as := func(xff string) []string { return append([]string{"X-Forwarded-For", xff}, wrong...) }
		for range 3 {
			h.do("GET", "/v1/workspaces", nil, as("203.0.113.1")...).expectError(t, 401, "unauthenticated", "", "")
		}
		h.do("GET", "/v1/workspaces", nil, as("203.0.113.1")...).expectError(t, 429, "resource_exhausted", "", "from 203.0.113.1")
		// The same client naming another address before its own.
		h.do("GET", "/v1/workspaces", nil, as("198.51.100.7, 203.0.113.1")...).expectError(t, 429, "resource_exhausted", "", "from 203.0.113.1")
		// Another client behind the same proxy has its own budget.
		h.do("GET", "/v1/workspaces", nil, as("203.0.113.2")...).expectError(t, 401, "unauthenticated", "", "")
		h.do("GET", "/v1/workspaces", nil, "X-Forwarded-For", "203.0.113.2").expect(t, 200)
	})
	t.Run("untrusted peer", func(t *testing.T) {
		h := newHarness(t)
		h.srv.authFails = newFailLimiter(3, 0.001)
		wrong := bad(h)
		for i := range 3 {
			h.do("GET", "/v1/workspaces", nil, append([]string{"X-Forwarded-For", "203.0.113." + string(rune('1'+i))}, wrong...)...).
				expectError(t, 401, "unauthenticated", "", "")
		}
		h.do("GET", "/v1/workspaces", nil, append([]string{"X-Forwarded-For", "203.0.113.99", "X-Real-IP", "203.0.113.98"}, wrong...)...).
			expectError(t, 429, "resource_exhausted", "", "from 127.0.0.1")
	})
}
