package outbound

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/primerhq/primer/errs"
)

// lookupTimeout bounds the name resolution of a check at write time.
const lookupTimeout = 3 * time.Second

// CheckURL checks, when a user writes it, that raw's host may be reached:
// a literal address must pass, and a name must resolve only to addresses
// that pass. A name that does not resolve now passes (it may later; the
// dial-time check still applies). field names the input field in the
// error, which is Forbidden and says which address was refused and why.
// CheckURL judges only the host: callers check the scheme and the rest.
func (p *Policy) CheckURL(ctx context.Context, field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errs.Field(field, "%s: not an absolute URL", field)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return p.check(ctx, field, u.Hostname(), port)
}

// CheckAddr is CheckURL for a host:port (a container engine's tcp host, a
// vm host's SSH address).
func (p *Policy) CheckAddr(ctx context.Context, field, hostport string) error {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return errs.Field(field, "%s: %q is not host:port", field, hostport)
	}
	return p.check(ctx, field, host, port)
}

func (p *Policy) check(ctx context.Context, field, host, portStr string) error {
	n, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return errs.Field(field, "%s: port %q is not a port number", field, portStr)
	}
	port := uint16(n)
	if ip, err := netip.ParseAddr(host); err == nil {
		return p.allowed(field, "", ip, port)
	}
	if p.hostAllowed(host, port) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	ips, err := p.resolve(ctx, host)
	if err != nil {
		// Not resolvable now: the dial-time check judges what the name
		// resolves to when it is used.
		return nil
	}
	for _, ip := range ips {
		if err := p.allowed(field, host, ip, port); err != nil {
			return err
		}
	}
	return nil
}

// resolve looks host up.
func (p *Policy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if p != nil && p.lookup != nil {
		return p.lookup(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}
