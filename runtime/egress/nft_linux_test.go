//go:build linux

package egress_test

import (
	"runtime"
	"testing"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// installTwice runs install twice in a fresh network namespace, as a
// runtime that sets its firewall up again would, and returns the chain
// named chain of the inet table named table with its rules, read back from
// the kernel. It skips when the test may not make a namespace.
func installTwice(t *testing.T, install func() error, table, chain string) (*nftables.Chain, []*nftables.Rule) {
	t.Helper()
	type result struct {
		chain *nftables.Chain
		rules []*nftables.Rule
		err   error
		skip  string
	}
	done := make(chan result, 1)
	go func() {
		// The thread moves to a new network namespace and is never
		// unlocked, so it exits with the goroutine instead of going back
		// to the scheduler.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- result{skip: "needs root to create a network namespace (unshare: " + err.Error() + ")"}
			return
		}
		for range 2 {
			if err := install(); err != nil {
				done <- result{err: err}
				return
			}
		}
		c, err := nftables.New()
		if err != nil {
			done <- result{err: err}
			return
		}
		ch, err := c.ListChain(&nftables.Table{Name: table, Family: nftables.TableFamilyINet}, chain)
		if err != nil {
			done <- result{err: err}
			return
		}
		rules, err := c.GetRules(ch.Table, ch)
		done <- result{chain: ch, rules: rules, err: err}
	}()
	r := <-done
	if r.skip != "" {
		t.Skip(r.skip)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.chain.Policy == nil || *r.chain.Policy != nftables.ChainPolicyDrop {
		t.Errorf("chain policy = %v, want drop", r.chain.Policy)
	}
	return r.chain, r.rules
}
