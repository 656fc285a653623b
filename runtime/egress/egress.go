// Package egress locks a workspace's network down from inside it: an
// nftables output chain that drops every connection the workspace opens,
// and the capability drops that keep commands, root included, from undoing
// it. It also hides the runtime's memory and environment (where its token
// lives) from the commands it runs. Only Linux is supported; elsewhere every
// function returns an error wrapping errors.ErrUnsupported.
package egress

// Capabilities that Deny needs and DropCaps removes once it is done (see
// capabilities(7)).
const (
	CapSetPCAP  uintptr = 8
	CapNetAdmin uintptr = 12
)

// Table is the name of the inet table Deny installs.
const Table = "primer_egress"
