//go:build linux

package egress

import (
	"fmt"
	"slices"
	"syscall"
	"unsafe"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Deny installs, in the current network namespace, the inet table Table
// with an output chain whose policy is drop and which accepts only packets
// leaving through the loopback interface and packets of connections
// conntrack already knows as established or related. Replies to inbound
// connections (the platform's WebSocket) still flow; every connection the
// namespace opens to anything but itself is dropped: the internet, the host
// behind the bridge gateway, other containers, DNS servers. Calling it again
// replaces the table. It needs CAP_NET_ADMIN.
func Deny() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("egress: nftables: open netlink: %w", err)
	}
	table, chain := dropChain(c, Table, "output", nftables.ChainHookOutput)
	accept := &expr.Verdict{Kind: expr.VerdictAccept}
	// ip daddr 127.0.0.11 drop: Docker's embedded DNS on user-defined
	// networks listens there, inside the container, and forwards queries
	// upstream; name lookups are egress too.
	c.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{127, 0, 0, 11}},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}})
	// oifname "lo" accept
	c.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: append(iface(expr.MetaKeyOIFNAME, "lo"), accept)})
	// ct state established,related accept
	c.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: append(established(), accept)})
	return flush(c, "egress", Table)
}

// DropCaps removes caps from the bounding, ambient, effective, permitted and
// inheritable sets of every thread of the process, so neither the process
// nor anything it executes, root included, can get them back. It clears the
// whole ambient set. CapSetPCAP, if among caps, is dropped from the bounding
// set last, since dropping needs it. It needs a binary built without cgo
// (syscall.AllThreadsSyscall).
func DropCaps(caps ...uintptr) error {
	for _, c := range caps {
		if c >= 64 {
			return fmt.Errorf("egress: drop capability %d: out of range", c)
		}
	}
	// CapSetPCAP goes last: dropping from the bounding set needs it.
	ordered := slices.DeleteFunc(slices.Clone(caps), func(c uintptr) bool { return c == CapSetPCAP })
	if slices.Contains(caps, CapSetPCAP) {
		ordered = append(ordered, CapSetPCAP)
	}
	for _, c := range ordered {
		if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0); errno != 0 {
			err := allThreadsErr(errno)
			if errno == syscall.EPERM {
				err = fmt.Errorf("%w (needs CAP_SETPCAP)", errno)
			}
			return fmt.Errorf("egress: drop capability %d from the bounding set: %w", c, err)
		}
	}
	if _, _, errno := syscall.AllThreadsSyscall6(syscall.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("egress: clear the ambient capabilities: %w", allThreadsErr(errno))
	}

	// Every thread has the same sets (they are only ever changed for all
	// threads at once), so the calling thread's stand for all.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("egress: read capabilities: %w", err)
	}
	for _, c := range caps {
		bit := ^uint32(1 << (c % 32))
		data[c/32].Effective &= bit
		data[c/32].Permitted &= bit
		data[c/32].Inheritable &= bit
	}
	_, _, errno := syscall.AllThreadsSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	if errno != 0 {
		return fmt.Errorf("egress: drop capabilities: %w", allThreadsErr(errno))
	}
	return nil
}

// SetNotDumpable marks the process not dumpable: its /proc/<pid>/environ,
// mem, maps and fds become unreadable, and it cannot be ptraced, by other
// processes without CAP_SYS_PTRACE, even ones of the same user. That keeps
// the runtime's token out of the reach of the commands it runs. The mark
// lasts until the process executes another program.
func SetNotDumpable() error {
	// The flag belongs to the process's memory map, shared by all its
	// threads, so one call covers them.
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_DUMPABLE, 0, 0)
	if errno != 0 {
		return fmt.Errorf("egress: set not dumpable: %w", errno)
	}
	return nil
}

// allThreadsErr explains the error AllThreadsSyscall gives in a cgo binary.
func allThreadsErr(errno syscall.Errno) error {
	if errno == syscall.ENOTSUP {
		return fmt.Errorf("%w (needs a binary built with CGO_ENABLED=0)", errno)
	}
	return errno
}
