package outbound

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/primerhq/primer/errs"
)

// fixed returns a Policy for list whose host has the interface address
// 10.9.8.7 and whose resolver answers from names.
func fixed(t *testing.T, list string, names map[string][]string) *Policy {
	t.Helper()
	p, err := Parse(list)
	if err != nil {
		t.Fatalf("Parse(%q): %v", list, err)
	}
	p.ifaces = func() ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("10.9.8.7")}, nil }
	p.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		as, ok := names[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var out []netip.Addr
		for _, a := range as {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
	return p
}

func TestCheckURL(t *testing.T) {
	names := map[string][]string{
		"localhost":       {"127.0.0.1", "::1"},
		"api.example.com": {"93.184.216.34"},
		"mixed.example":   {"93.184.216.34", "169.254.169.254"},
		"llm.internal":    {"10.1.2.3"},
	}
	tests := []struct {
		name, allow, url string
		want             string // "" when allowed, else a part of the error
	}{
		{"public v4", "", "https://93.184.216.34/v1", ""},
		{"private network", "", "http://10.1.2.3:8000/v1", ""},
		{"public name", "", "https://api.example.com/v1", ""},
		{"unresolvable name", "", "https://nowhere.example/v1", ""},
		{"loopback v4", "", "http://127.0.0.1:11434/v1", "127.0.0.1 is a loopback address"},
		{"loopback v4 other", "", "http://127.1.2.3/", "a loopback address"},
		{"loopback v6", "", "http://[::1]:8080/", "::1 is a loopback address"},
		{"mapped loopback", "", "http://[::ffff:127.0.0.1]:8080/", "a loopback address"},
		{"nat64 loopback", "", "http://[64:ff9b::7f00:1]/", "a loopback address"},
		{"unspecified v4", "", "http://0.0.0.0:8080/", "an unspecified address"},
		{"this network", "", "http://0.1.2.3/", "an unspecified address"},
		{"unspecified v6", "", "http://[::]:8080/", "an unspecified address"},
		{"metadata v4", "", "http://169.254.169.254/latest/meta-data", "169.254.169.254 is a cloud metadata address"},
		{"metadata mapped", "", "http://[::ffff:169.254.169.254]/", "a cloud metadata address"},
		{"metadata aws v6", "", "http://[fd00:ec2::254]/", "a cloud metadata address"},
		{"metadata alibaba", "", "http://100.100.100.200/", "a cloud metadata address"},
		{"link-local v4", "", "http://169.254.1.1/", "a link-local address"},
		{"link-local v6", "", "http://[fe80::1%25eth0]/", "a link-local address"},
		{"multicast", "", "http://224.0.0.1/", "multicast"},
		{"own address", "", "http://10.9.8.7:8080/", "this platform's own host"},
		{"name to loopback", "", "http://localhost:8080/", "localhost resolves to 127.0.0.1, which is a loopback address"},
		{"name partly metadata", "", "http://mixed.example/", "a cloud metadata address"},
		{"allow address", "127.0.0.1", "http://127.0.0.1:11434/v1", ""},
		{"allow address mapped url", "127.0.0.1", "http://[::ffff:127.0.0.1]:11434/v1", ""},
		{"allow cidr", "127.0.0.0/8", "http://127.0.0.9:1/", ""},
		{"allow cidr misses", "127.0.0.0/8", "http://[::1]:1/", "a loopback address"},
		{"allow v6 cidr", "::1/128", "http://[::1]:1/", ""},
		{"allow addr:port", "127.0.0.1:11434", "http://127.0.0.1:11434/v1", ""},
		{"allow addr:port other port", "127.0.0.1:11434", "http://127.0.0.1:5432/", "a loopback address"},
		{"allow default port", "127.0.0.1:443", "https://127.0.0.1/", ""},
		{"allow v6 addr:port", "[::1]:8080", "http://[::1]:8080/", ""},
		{"allow host", "localhost", "http://localhost:5432/", ""},
		{"allow host:port", "localhost:11434", "http://localhost:11434/", ""},
		{"allow host:port other port", "localhost:11434", "http://localhost:5432/", "a loopback address"},
		{"allow host case", "LocalHost.", "http://localhost/", ""},
		{"host entry does not allow address", "localhost", "http://127.0.0.1/", "a loopback address"},
		{"allow metadata explicitly", "169.254.169.254", "http://169.254.169.254/", ""},
		{"several entries", "10.0.0.1, 127.0.0.1:9 ,localhost:1", "http://127.0.0.1:9/", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := fixed(t, tc.allow, names)
			err := p.CheckURL(context.Background(), "spec.base_url", tc.url)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckURL(%s) = %v, want allowed", tc.url, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckURL(%s) allowed, want refused (%s)", tc.url, tc.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.HasPrefix(msg, "spec.base_url: ") || !strings.Contains(msg, Env) {
				t.Errorf("error %q: want spec.base_url: ... %q ... %s", msg, tc.want, Env)
			}
			if errs.KindOf(err) != errs.Forbidden || errs.FieldOf(err) != "spec.base_url" {
				t.Errorf("kind %v field %q, want forbidden spec.base_url", errs.KindOf(err), errs.FieldOf(err))
			}
		})
	}
}

// TestNilPolicyRefuses: a caller that forgets to pass the policy still
// refuses internal addresses.
func TestNilPolicyRefuses(t *testing.T) {
	var p *Policy
	for _, u := range []string{"http://127.0.0.1/", "http://169.254.169.254/", "http://[::1]/"} {
		if err := p.CheckURL(context.Background(), "f", u); err == nil {
			t.Errorf("nil policy allowed %s", u)
		}
	}
	if err := (&Policy{}).CheckAddr(context.Background(), "f", "127.0.0.1:22"); err == nil {
		t.Error("zero policy allowed 127.0.0.1:22")
	}
	if err := p.CheckAddr(context.Background(), "f", "93.184.216.34:22"); err != nil {
		t.Errorf("nil policy refused a public address: %v", err)
	}
}

func TestParse(t *testing.T) {
	for _, bad := range []string{"127.0.0.1/33", "localhost:0", "localhost:http", "a b/c", "exa mple..com", "[::1]:0", "host_with$"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		} else if !strings.Contains(err.Error(), Env) {
			t.Errorf("Parse(%q): %v does not name %s", bad, err, Env)
		}
	}
	p, err := Parse("10.0.0.0/8,127.0.0.1:9,localhost")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10.0.0.0/8", "127.0.0.1:9", "localhost"} {
		if !strings.Contains(p.String(), want) {
			t.Errorf("String() = %q, missing %s", p.String(), want)
		}
	}
}

// TestDialRefusesRebinding: the write-time check passed a name that
// resolved to a public address; at dial time it resolves to loopback (a
// DNS rebinding, or simply localhost) and Control refuses the connection
// before a byte is sent.
func TestDialRefusesRebinding(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	p := fixed(t, "", map[string][]string{"localhost": {"93.184.216.34"}})
	if err := p.CheckURL(context.Background(), "spec.base_url", "http://localhost:"+port+"/"); err != nil {
		t.Fatalf("write-time check with a public answer: %v", err)
	}
	// The real resolver now answers 127.0.0.1 for localhost.
	tests := []struct{ name, url string }{
		{"name", "http://localhost:" + port + "/"},
		{"address", srv.URL + "/"},
		{"mapped", "http://[::ffff:127.0.0.1]:" + port + "/"},
	}
	hc := p.HTTPClient(0)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := hc.Get(tc.url)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s went through", tc.url)
			}
			if !IsRefused(err) || !strings.Contains(err.Error(), "a loopback address") {
				t.Errorf("GET %s: %v, want a refused loopback dial", tc.url, err)
			}
			if errs.KindOf(err) != errs.Forbidden {
				t.Errorf("kind %v, want forbidden", errs.KindOf(err))
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server received %d requests", n)
	}

	// Allowlisted by name, address, or address and port: the dial goes through.
	for _, allow := range []string{"localhost:" + port, "127.0.0.1", "127.0.0.1:" + port, "127.0.0.0/8"} {
		p := fixed(t, allow, nil)
		u := srv.URL + "/"
		if strings.HasPrefix(allow, "localhost") {
			u = "http://localhost:" + port + "/"
		}
		resp, err := p.HTTPClient(0).Get(u)
		if err != nil {
			// localhost may resolve to ::1 first where the server listens
			// only on 127.0.0.1; the dialer falls back.
			t.Fatalf("allow %s: GET %s: %v", allow, u, err)
		}
		resp.Body.Close()
	}
	if hits.Load() != 4 {
		t.Fatalf("allowlisted requests reached the server %d times, want 4", hits.Load())
	}
}

// TestRedirects: a redirect to another host is refused (the key headers
// would follow it), and a same-host redirect to a refused address cannot
// happen (the dial is checked).
func TestRedirects(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer target.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/x", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	p := fixed(t, redirector.Listener.Addr().String(), nil)
	resp, err := p.HTTPClient(0).Post(redirector.URL, "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		t.Fatal("redirect to another host followed")
	}
	if !strings.Contains(err.Error(), "redirect to another host") {
		t.Errorf("error %v", err)
	}
	if hits.Load() != 0 {
		t.Fatal("the redirect target received the request")
	}
}

// TestControlNetworks: only IP networks may be dialed through the policy.
func TestControlNetworks(t *testing.T) {
	var p *Policy
	err := p.Control(context.Background(), "unix", "/var/run/docker.sock", nil)
	if err == nil || !IsRefused(err) {
		t.Fatalf("unix dial: %v", err)
	}
	if err := p.Control(context.Background(), "tcp4", "93.184.216.34:443", nil); err != nil {
		t.Fatalf("public dial: %v", err)
	}
	err = p.Control(context.Background(), "tcp6", "[fd00:ec2::254]:80", nil)
	var re *RefusedError
	if !errors.As(err, &re) || re.Address != "[fd00:ec2::254]:80" {
		t.Fatalf("metadata dial: %v", err)
	}
}
