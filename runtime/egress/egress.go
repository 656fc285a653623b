// Package egress locks a workspace's network down from inside it: an
// nftables output chain that drops every connection the workspace opens
// (Deny), an input chain that drops every connection opened towards it but
// from its peers and to the runtime's own port (Restrict), and the
// capability drops that keep commands, root included, from undoing them. It also hides the runtime's memory and environment (where its token
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

// IngressTable is the name of the inet table Restrict installs.
const IngressTable = "primer_ingress"
