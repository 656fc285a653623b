package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// dialHost carries the host name a dial was asked for to the Control hook,
// which sees only the address: a name on the allowlist allows whatever it
// resolves to.
type dialHost struct{}

// Control is a net.Dialer ControlContext hook that refuses a connection to
// an address the policy refuses. It judges the address actually connected
// to, after resolution, so it holds for names that resolve differently at
// dial time than when they were checked (DNS rebinding) and for redirects.
// Used alone (not through DialContext) host name allowlist entries do not
// apply: only address and CIDR entries.
func (p *Policy) Control(ctx context.Context, network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
	default:
		return &RefusedError{Address: address, err: fmt.Errorf("network %s is not allowed for outbound requests", network)}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Address: address, err: fmt.Errorf("address %q: %v", address, err)}
	}
	host, _ := ctx.Value(dialHost{}).(string)
	if err := p.allowed("connect", host, ap.Addr(), ap.Port()); err != nil {
		return &RefusedError{Address: address, err: err}
	}
	return nil
}

// RefusedError is a connection the policy refused at dial time. It is
// not worth retrying: the same address is refused again.
type RefusedError struct {
	Address string
	err     error
}

func (e *RefusedError) Error() string { return e.err.Error() }

// Unwrap returns the errs error (Forbidden) that says why.
func (e *RefusedError) Unwrap() error { return e.err }

// IsRefused says whether err is, or wraps, a connection the policy refused.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// DialContext returns d's DialContext with the policy's Control hook: every
// address it connects to is checked, and a host name on the allowlist
// allows what it resolves to. A nil d is a dialer with a 10 s timeout.
// An existing Control or ControlContext hook of d runs after the check.
func (p *Policy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var dd net.Dialer
	if d != nil {
		dd = *d
	} else {
		dd.Timeout = 10 * time.Second
		dd.KeepAlive = 30 * time.Second
	}
	prevCtx, prev := dd.ControlContext, dd.Control
	dd.Control = nil
	dd.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
		if err := p.Control(ctx, network, address, c); err != nil {
			return err
		}
		switch {
		case prevCtx != nil:
			return prevCtx(ctx, network, address, c)
		case prev != nil:
			return prev(network, address, c)
		}
		return nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err == nil {
			if _, err := netip.ParseAddr(host); err != nil {
				ctx = context.WithValue(ctx, dialHost{}, host)
			}
		}
		return dd.DialContext(ctx, network, addr)
	}
}

// maxRedirects bounds the redirects HTTPClient follows.
const maxRedirects = 5

// HTTPClient returns a client whose every connection passes the policy:
// no proxy from the environment (the proxy, not the target, would be
// checked), each dialed address checked, and redirects followed only to
// the same host and scheme (the request's key headers travel with a
// redirect; another host would receive them), up to maxRedirects.
// timeout bounds a whole request (0: none, the context's only).
func (p *Policy) HTTPClient(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           p.DialContext(nil),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: checkRedirect}
}

// checkRedirect allows a redirect only to the first request's scheme and
// host; the dial of the target is checked by the policy either way.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %s redirects", strconv.Itoa(maxRedirects))
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("redirect to another host or scheme (%s://%s) refused", req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// LazyClient builds a policy's HTTP client at its first use and keeps it,
// so one transport (and its idle connections) serves every call. The
// activities structs hold one in an unexported field: an exported method of
// theirs would be registered as an activity.
type LazyClient struct {
	once sync.Once
	c    *http.Client
}

// Get returns p's HTTP client (HTTPClient(0)), built at the first call; p
// must be the same on every call.
func (l *LazyClient) Get(p *Policy) *http.Client {
	l.once.Do(func() { l.c = p.HTTPClient(0) })
	return l.c
}
