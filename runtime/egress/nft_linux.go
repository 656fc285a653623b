//go:build linux

package egress

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// dropChain adds to c's batch the inet table name, replacing any table of
// that name, with one filter chain at hook whose policy is drop. Adding then
// deleting in the same batch deletes the table whether or not it existed;
// the batch is applied atomically, so there is no moment with the old rules
// gone and the new ones missing.
func dropChain(c *nftables.Conn, name, chain string, hook *nftables.ChainHook) (*nftables.Table, *nftables.Chain) {
	table := &nftables.Table{Name: name, Family: nftables.TableFamilyINet}
	c.AddTable(table)
	c.DelTable(table)
	c.AddTable(table)
	drop := nftables.ChainPolicyDrop
	ch := c.AddChain(&nftables.Chain{
		Name:     chain,
		Table:    table,
		Type:     nftables.ChainTypeFilter,
		Hooknum:  hook,
		Priority: nftables.ChainPriorityFilter,
		Policy:   &drop,
	})
	return table, ch
}

// iface matches packets whose interface (key: expr.MetaKeyIIFNAME or
// expr.MetaKeyOIFNAME) is name.
func iface(key expr.MetaKey, name string) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: key, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname(name)},
	}
}

// established matches packets of connections conntrack already knows as
// established or related.
func established() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{
			SourceRegister: 1,
			DestRegister:   1,
			Len:            4,
			Mask:           binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
			Xor:            binaryutil.NativeEndian.PutUint32(0),
		},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
	}
}

// ifname is an interface name as the kernel compares it: NUL padded to
// IFNAMSIZ.
func ifname(n string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, n)
	return b
}

// flush applies c's batch, which installs table for what ("egress",
// "ingress").
func flush(c *nftables.Conn, what, table string) error {
	if err := c.Flush(); err != nil {
		return fmt.Errorf("%s: nftables: install table %s: %w (needs CAP_NET_ADMIN and a kernel with nf_tables and nf_conntrack)", what, table, err)
	}
	return nil
}
