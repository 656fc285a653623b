//go:build linux

package egress_test

import (
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"

	"github.com/primerhq/primer/runtime/egress"
)

func TestSetNotDumpable(t *testing.T) {
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) })
	if err := egress.SetNotDumpable(); err != nil {
		t.Fatal(err)
	}
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || d != 0 {
		t.Fatalf("PR_GET_DUMPABLE = %d, %v; want 0", d, err)
	}
}

// TestDeny installs the table twice in a fresh network namespace and reads
// it back. cmd/primer-runtime's TestEgressDocker proves what it blocks.
func TestDeny(t *testing.T) {
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
			if err := egress.Deny(); err != nil {
				done <- result{err: err}
				return
			}
		}
		c, err := nftables.New()
		if err != nil {
			done <- result{err: err}
			return
		}
		table := &nftables.Table{Name: egress.Table, Family: nftables.TableFamilyINet}
		chain, err := c.ListChain(table, "output")
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
	if r.chain.Hooknum == nil || *r.chain.Hooknum != *nftables.ChainHookOutput {
		t.Errorf("chain hook = %v, want output", r.chain.Hooknum)
	}
	if r.chain.Policy == nil || *r.chain.Policy != nftables.ChainPolicyDrop {
		t.Errorf("chain policy = %v, want drop", r.chain.Policy)
	}
	if len(r.rules) != 3 {
		t.Errorf("got %d rules after two Deny calls, want 3 (embedded DNS drop, lo, established/related)", len(r.rules))
	}
}

func TestDropCapsNeedsStaticBinary(t *testing.T) {
	// Test binaries usually link cgo, where AllThreadsSyscall is refused;
	// the error must say why. A static build is tested by
	// cmd/primer-runtime's TestEgressDocker.
	if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_GETPID, 0, 0, 0); errno != syscall.ENOTSUP {
		t.Skip("test binary is built without cgo; DropCaps would drop the test's own capabilities")
	}
	err := egress.DropCaps(egress.CapNetAdmin)
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("DropCaps in a cgo binary = %v, want an error naming CGO_ENABLED=0", err)
	}
}
