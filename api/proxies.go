package api

import (
	"net/netip"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
)

// Headers a trusted proxy names the client in, in the order they are read:
// X-Real-IP only counts when X-Forwarded-For is absent.
const (
	headerForwardedFor = "X-Forwarded-For"
	headerRealIP       = "X-Real-IP"
)

// ParseTrustedProxies parses the trusted proxies setting: each item a CIDR
// (10.0.0.0/8) or a single address (192.0.2.7). An error is Invalid on the
// field trusted_proxies, naming the item.
func ParseTrustedProxies(items []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(items))
	for _, raw := range items {
		item := strings.TrimSpace(raw)
		if item == "" {
			continue
		}
		if strings.Contains(item, "/") {
			p, err := netip.ParsePrefix(item)
			if err != nil {
				return nil, errs.Field("trusted_proxies", "trusted proxies: %q is not a CIDR or an IP address", raw)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil || a.Zone() != "" {
			return nil, errs.Field("trusted_proxies", "trusted proxies: %q is not a CIDR or an IP address", raw)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// trustProxies makes gin's ClientIP follow Config.TrustedProxies and
// nothing else: forwarding headers count only from a trusted peer (gin
// trusts every peer unless told otherwise), the client is the right-most
// address that is not a trusted proxy, and no platform header (such as
// CF-Connecting-IP) is believed. gin joins repeated header lines in order,
// so a line the client sent before its proxy's cannot take the proxy's
// place. New has checked the list.
func (s *server) trustProxies(r *gin.Engine) {
	prefixes, _ := ParseTrustedProxies(s.cfg.TrustedProxies)
	list := make([]string, len(prefixes))
	for i, p := range prefixes {
		list[i] = p.String()
	}
	if len(list) == 0 {
		list = nil // nil, not empty: gin reads nil as "trust no proxy"
	}
	if err := r.SetTrustedProxies(list); err != nil {
		panic("api: trusted proxies checked by New: " + err.Error())
	}
	r.ForwardedByClientIP = true
	r.RemoteIPHeaders = []string{headerForwardedFor, headerRealIP}
	r.TrustedPlatform = ""
}
