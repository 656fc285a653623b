//go:build linux

package egress

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Restrict installs, in the current network namespace, the inet table
// IngressTable with an input chain whose policy is drop and which accepts
// only packets arriving on the loopback interface, packets of connections
// conntrack already knows as established or related (replies to what the
// workspace opened), TCP connections to port (the runtime's own, which
// authenticates every connection with its token, and which the platform
// must reach from wherever it runs) and packets from the prefixes in allow
// (the workspace's peers: its tenant's network) that are not in except (the
// network's gateway, behind which an engine masquerades connections from
// other networks). Every other connection opened towards the workspace, by
// another tenant's workspace above all, is dropped. Calling it again
// replaces the table. It needs CAP_NET_ADMIN.
func Restrict(port uint16, allow, except []netip.Prefix) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("ingress: nftables: open netlink: %w", err)
	}
	// As in Deny: one atomic batch replaces the table.
	table, chain := dropChain(c, IngressTable, "input", nftables.ChainHookInput)
	accept := &expr.Verdict{Kind: expr.VerdictAccept}
	add := func(exprs ...expr.Any) {
		c.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: append(exprs, accept)})
	}
	// iifname "lo" accept
	add(iface(expr.MetaKeyIIFNAME, "lo")...)
	// ct state established,related accept
	add(established()...)
	// meta l4proto tcp tcp dport <port> accept
	p := make([]byte, 2)
	binary.BigEndian.PutUint16(p, port)
	add(
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: p},
	)
	// ip saddr <prefix> drop, then ip saddr <prefix> accept (ip6 alike)
	for _, pfx := range except {
		c.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: append(saddrIn(pfx), &expr.Verdict{Kind: expr.VerdictDrop})})
	}
	for _, pfx := range allow {
		add(saddrIn(pfx)...)
	}
	return flush(c, "ingress", IngressTable)
}

// saddrIn matches packets whose source address is in pfx.
func saddrIn(pfx netip.Prefix) []expr.Any {
	pfx = pfx.Masked()
	addr := pfx.Addr().AsSlice()
	proto, off := byte(unix.NFPROTO_IPV4), uint32(12)
	if pfx.Addr().Is6() {
		proto, off = unix.NFPROTO_IPV6, 8
	}
	mask := make([]byte, len(addr))
	for i := range mask {
		bits := min(max(pfx.Bits()-8*i, 0), 8)
		mask[i] = byte(0xff << (8 - bits))
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: uint32(len(addr))},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: uint32(len(addr)), Mask: mask, Xor: make([]byte, len(addr))},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: addr},
	}
}
