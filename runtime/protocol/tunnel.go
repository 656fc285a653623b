package protocol

// TCP tunnels (see PROTOCOL.md, "TCP tunnels"): a byte stream to a port
// inside the sandbox, many at once on one connection, each with a window
// of its own so a slow reader on one tunnel never holds up the others or
// the connection's read loop.
const (
	// OpTCPOpen dials 127.0.0.1:Port inside the sandbox. It is answered by
	// one result frame (the tunnel is open) or an error: not_found when
	// nothing listens on the port, invalid for a port outside 1..65535,
	// resource_exhausted over MaxTunnels. After the result, frames of the
	// TypeTCP* types carry the same id until one TypeTCPEnd. A runtime that
	// predates tunnels answers invalid ("unknown op").
	OpTCPOpen = "tcp.open"
	// OpTCPData carries bytes for the socket of tunnel Target (a binary
	// frame; Data is its payload). It is not answered: the runtime's
	// TypeTCPAck frames give the sender its window back as the bytes
	// reach the socket.
	OpTCPData = "tcp.data"
	// OpTCPAck grants the runtime Length more bytes of tunnel Target's
	// window: the client consumed that many bytes of TypeTCPData. Not
	// answered.
	OpTCPAck = "tcp.ack"
	// OpTCPEOF says the client sends no more data on tunnel Target: once
	// what came before is written, the runtime shuts the socket's write
	// side (a half-close; the other direction goes on). Not answered.
	OpTCPEOF = "tcp.eof"
	// OpTCPClose ends tunnel Target at once: the runtime closes the socket
	// and answers with TypeTCPEnd. Not answered otherwise.
	OpTCPClose = "tcp.close"

	// TypeTCPData carries bytes read from the socket (a binary frame; the
	// payload is the data). The client may have at most TunnelWindow bytes
	// unacknowledged.
	TypeTCPData = "tcp.data"
	// TypeTCPAck gives the client Length bytes of window back: the
	// runtime wrote that many bytes to the socket.
	TypeTCPAck = "tcp.ack"
	// TypeTCPEOF says the sandbox's side closed its write side: no
	// TypeTCPData follows.
	TypeTCPEOF = "tcp.eof"
	// TypeTCPEnd is a tunnel's last frame: both directions ended, the
	// client closed it, or (with Error) the socket failed.
	TypeTCPEnd = "tcp.end"
)

// TunnelWindow is how many bytes each side of a tunnel may have in flight
// unacknowledged, per direction. It bounds the memory a tunnel takes on
// the receiving side whatever its peer does; a sender that exceeds it ends
// the tunnel with an invalid error.
const TunnelWindow = 256 << 10

// TunnelChunk is the largest TypeTCPData or OpTCPData payload a side
// sends; receivers accept any size within the window.
const TunnelChunk = 32 << 10

// MaxTunnels bounds the tunnels open at once on one connection.
const MaxTunnels = 1024

// TCPFrame is a tunnel's frame from the runtime other than TypeTCPData
// (which is binary: this header, then the bytes).
type TCPFrame struct {
	Type string `json:"type"` // TypeTCP*
	ID   uint64 `json:"id"`
	// Length is the window TypeTCPAck gives back.
	Length int64 `json:"length,omitempty"`
	// Error says why TypeTCPEnd ended a tunnel that failed.
	Error *Error `json:"error,omitempty"`
}
