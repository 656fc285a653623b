//go:build linux

package egress_test

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"

	"github.com/primerhq/primer/runtime/egress"
)

// TestRestrict installs the ingress table twice in a fresh network
// namespace and reads it back. The container backend's
// TestTenantsDoNotShareANetwork proves what it blocks.
func TestRestrict(t *testing.T) {
	type result struct {
		chain *nftables.Chain
		rules []*nftables.Rule
		err   error
		skip  string
	}
	allow := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00::/64")}
	except := []netip.Prefix{netip.MustParsePrefix("10.1.0.1/32")}
	done := make(chan result, 1)
	go func() {
		// As in TestDeny: the thread never goes back to the scheduler.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- result{skip: "needs root to create a network namespace (unshare: " + err.Error() + ")"}
			return
		}
		for range 2 {
			if err := egress.Restrict(7777, allow, except); err != nil {
				done <- result{err: err}
				return
			}
		}
		c, err := nftables.New()
		if err != nil {
			done <- result{err: err}
			return
		}
		table := &nftables.Table{Name: egress.IngressTable, Family: nftables.TableFamilyINet}
		chain, err := c.ListChain(table, "input")
		if err != nil {
			done <- result{err: err}
			return
		}
		rules, err := c.GetRules(table, chain)
		done <- result{chain: chain, rules: rules, err: err}
	}()
	r := <-done
	if r.skip != "" {
		t.Skip(r.skip)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.chain.Hooknum == nil || *r.chain.Hooknum != *nftables.ChainHookInput {
		t.Errorf("chain hook = %v, want input", r.chain.Hooknum)
	}
	if r.chain.Policy == nil || *r.chain.Policy != nftables.ChainPolicyDrop {
		t.Errorf("chain policy = %v, want drop", r.chain.Policy)
	}
	// lo, established/related, the runtime's port, one drop per except and
	// one accept per allow.
	if want := 3 + len(except) + len(allow); len(r.rules) != want {
		t.Errorf("got %d rules after two Restrict calls, want %d", len(r.rules), want)
	}
}
