//go:build linux

package egress_test

import (
	"net/netip"
	"testing"

	"github.com/google/nftables"

	"github.com/primerhq/primer/runtime/egress"
)

// TestRestrict installs the ingress table twice in a fresh network
// namespace and reads it back. The container backend's
// TestTenantsDoNotShareANetwork proves what it blocks.
func TestRestrict(t *testing.T) {
	allow := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00::/64")}
	except := []netip.Prefix{netip.MustParsePrefix("10.1.0.1/32")}
	chain, rules := installTwice(t, func() error { return egress.Restrict(7777, allow, except) }, egress.IngressTable, "input")
	if chain.Hooknum == nil || *chain.Hooknum != *nftables.ChainHookInput {
		t.Errorf("chain hook = %v, want input", chain.Hooknum)
	}
	// lo, established/related, the runtime's port, one drop per except and
	// one accept per allow.
	if want := 3 + len(except) + len(allow); len(rules) != want {
		t.Errorf("got %d rules after two Restrict calls, want %d", len(rules), want)
	}
}
