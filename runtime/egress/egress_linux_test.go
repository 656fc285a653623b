//go:build linux

package egress_test

import (
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
	chain, rules := installTwice(t, egress.Deny, egress.Table, "output")
	if chain.Hooknum == nil || *chain.Hooknum != *nftables.ChainHookOutput {
		t.Errorf("chain hook = %v, want output", chain.Hooknum)
	}
	if len(rules) != 3 {
		t.Errorf("got %d rules after two Deny calls, want 3 (embedded DNS drop, lo, established/related)", len(rules))
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
