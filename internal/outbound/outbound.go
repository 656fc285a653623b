// Package outbound decides which network addresses Primer may connect to on
// a user's behalf: a model provider's base_url, a webhook, and the hosts
// other helpers dial for providers (container tcp hosts, vm hosts).
//
// Loopback, unspecified, link-local, multicast and cloud metadata addresses,
// and the addresses of this host's own interfaces, are refused unless an
// admin allowlists them (PRIMER_OUTBOUND_ALLOW, or --outbound-allow). Every
// other address, private networks included, is allowed.
//
// A Policy is checked twice: when a URL or host is written (CheckURL,
// CheckAddr: the name is resolved and every address must pass, so the user
// hears at once why), and when a connection is opened (DialContext,
// HTTPClient: the address actually connected to is checked in the dialer's
// Control hook, so a name that resolves elsewhere later, a DNS rebinding or
// a redirect cannot get past the first check).
//
// The zero Policy, and a nil *Policy, allow nothing extra: they refuse every
// internal address. That is the safe default a caller gets when it forgets
// to pass the configured policy.
package outbound

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/primerhq/primer/errs"
)

// Env names the environment variable holding the allowlist.
const Env = "PRIMER_OUTBOUND_ALLOW"

// Policy is an allowlist over the refused address classes. Build it with
// Parse; its zero value (or nil) allowlists nothing.
type Policy struct {
	// prefixes are allowlisted networks and addresses (any port).
	prefixes []netip.Prefix
	// addrPorts are allowlisted addresses on one port.
	addrPorts []netip.AddrPort
	// hosts are allowlisted host names (lower case, no trailing dot),
	// each with its ports; port 0 means any port.
	hosts map[string][]uint16

	// lookup and ifaces replace the resolver and the interface list in tests.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	ifaces func() ([]netip.Addr, error)
}

// Parse reads an allowlist: entries separated by commas (or white space),
// each a CIDR (10.0.0.0/8, fd00::/8), an address (127.0.0.1, ::1), an
// address and port (127.0.0.1:11434, [::1]:11434), a host name
// (llm.internal) or a host name and port (localhost:11434). A host name
// entry allows what that name resolves to, whatever it is; an address or
// CIDR entry allows those addresses whatever name led to them. An empty
// string gives a Policy that allowlists nothing.
func Parse(list string) (*Policy, error) {
	p := &Policy{}
	for _, e := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if err := p.add(e); err != nil {
			return nil, errs.Field("outbound_allow", "outbound allowlist (%s): entry %q: %v", Env, e, err)
		}
	}
	return p, nil
}

// add parses one allowlist entry into p.
func (p *Policy) add(e string) error {
	if strings.Contains(e, "/") {
		pf, err := netip.ParsePrefix(e)
		if err != nil {
			return fmt.Errorf("not a CIDR: %v", err)
		}
		p.prefixes = append(p.prefixes, pf.Masked())
		return nil
	}
	if a, err := netip.ParseAddr(e); err == nil {
		p.prefixes = append(p.prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		return nil
	}
	if ap, err := netip.ParseAddrPort(e); err == nil {
		if ap.Port() == 0 {
			return fmt.Errorf("port 0")
		}
		p.addrPorts = append(p.addrPorts, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		return nil
	}
	host, port := e, uint16(0)
	if h, ps, err := net.SplitHostPort(e); err == nil {
		n, err := strconv.ParseUint(ps, 10, 16)
		if err != nil || n == 0 {
			return fmt.Errorf("port %q is not a port number", ps)
		}
		host, port = h, uint16(n)
	}
	host = canonHost(host)
	if !validHostName(host) {
		return fmt.Errorf("not a CIDR, address, host name or host:port")
	}
	if p.hosts == nil {
		p.hosts = map[string][]uint16{}
	}
	p.hosts[host] = append(p.hosts[host], port)
	return nil
}

// String lists the allowlist's entries, for a log line at start.
func (p *Policy) String() string {
	if p == nil {
		return ""
	}
	var out []string
	for _, pf := range p.prefixes {
		if pf.IsSingleIP() {
			out = append(out, pf.Addr().String())
		} else {
			out = append(out, pf.String())
		}
	}
	for _, ap := range p.addrPorts {
		out = append(out, ap.String())
	}
	for h, ports := range p.hosts {
		for _, port := range ports {
			if port == 0 {
				out = append(out, h)
			} else {
				out = append(out, net.JoinHostPort(h, strconv.Itoa(int(port))))
			}
		}
	}
	return strings.Join(out, ",")
}

// canonHost is a host name as the allowlist compares it.
func canonHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}

// validHostName says whether h looks like a DNS name.
func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// hostAllowed says whether host (a name, not an address) on port is
// allowlisted by name.
func (p *Policy) hostAllowed(host string, port uint16) bool {
	if p == nil || host == "" {
		return false
	}
	for _, allowed := range p.hosts[canonHost(host)] {
		if allowed == 0 || allowed == port {
			return true
		}
	}
	return false
}

// addrAllowed says whether ip on port is allowlisted by address or CIDR.
func (p *Policy) addrAllowed(ip netip.Addr, port uint16) bool {
	if p == nil {
		return false
	}
	ip = ip.Unmap()
	for _, pf := range p.prefixes {
		if pf.Contains(ip) {
			return true
		}
	}
	for _, ap := range p.addrPorts {
		if ap.Addr() == ip && ap.Port() == port {
			return true
		}
	}
	return false
}

// metadata are cloud instance metadata and platform service addresses:
// the common 169.254.169.254 (AWS, GCP, Azure, OpenStack), and outside the
// link-local ranges AWS's IPv6 IMDS, Alibaba Cloud's metadata service and
// Azure's wire server.
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
}

// embedded ranges carry an IPv4 address in an IPv6 one; the IPv4 address
// is what the packet reaches, so it is the one judged.
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	compat = netip.MustParsePrefix("::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
	thisv4 = netip.MustParsePrefix("0.0.0.0/8")
)

// embeddedV4 returns the IPv4 address ip carries (IPv4-mapped, NAT64,
// IPv4-compatible, 6to4), or ip itself.
func embeddedV4(ip netip.Addr) netip.Addr {
	ip = ip.Unmap()
	if !ip.Is6() {
		return ip
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip), compat.Contains(ip) && ip != netip.IPv6Unspecified() && ip != netip.IPv6Loopback():
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case sixTo4.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	}
	return ip
}

// class says why ip is refused ("a loopback address"), or "" when it is
// an ordinary address. own lists this host's interface addresses.
func class(ip netip.Addr, own []netip.Addr) string {
	ip = ip.WithZone("")
	for _, a := range []netip.Addr{ip.Unmap(), embeddedV4(ip)} {
		switch {
		case a.IsLoopback():
			return "a loopback address"
		case a.IsUnspecified() || a.Is4() && thisv4.Contains(a):
			return "an unspecified address"
		case isMetadata(a):
			return "a cloud metadata address"
		case a.IsLinkLocalUnicast():
			return "a link-local address"
		case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
			return "a multicast or broadcast address"
		}
		for _, o := range own {
			if o.Unmap().WithZone("") == a {
				return "an address of this platform's own host"
			}
		}
	}
	return ""
}

func isMetadata(a netip.Addr) bool {
	for _, m := range metadata {
		if a == m {
			return true
		}
	}
	return false
}

// ownAddrs lists this host's interface addresses.
func (p *Policy) ownAddrs() []netip.Addr {
	if p != nil && p.ifaces != nil {
		addrs, _ := p.ifaces()
		return addrs
	}
	return interfaceAddrs()
}

// interfaceAddrs lists the addresses of this host's interfaces. It is
// read at every check (a netlink dump, microseconds): addresses come and go.
func interfaceAddrs() []netip.Addr {
	as, err := net.InterfaceAddrs()
	if err != nil {
		// Loopback and link-local are refused by class whatever this returns.
		return nil
	}
	var out []netip.Addr
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

// refusal is the error for a refused address: Forbidden, naming field.
func refusal(field, host string, ip netip.Addr, why string) error {
	subject := ip.String()
	if host != "" && host != subject {
		subject = fmt.Sprintf("%s resolves to %s, which", host, ip)
	}
	return &errs.Error{Kind: errs.Forbidden, Field: field, Msg: fmt.Sprintf(
		"%s: %s is %s; outbound requests there are refused unless an admin allowlists it (%s)", field, subject, why, Env)}
}

// allowed checks one address reached through host (a name, or "" when the
// target was an address) on port.
func (p *Policy) allowed(field, host string, ip netip.Addr, port uint16) error {
	if p.hostAllowed(host, port) || p.addrAllowed(ip, port) || p.addrAllowed(embeddedV4(ip), port) {
		return nil
	}
	if why := class(ip, p.ownAddrs()); why != "" {
		return refusal(field, host, ip, why)
	}
	return nil
}
