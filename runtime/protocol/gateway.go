package protocol

// Reverse tunnels (see PROTOCOL.md, "Reverse tunnels"): the runtime listens
// on a loopback port inside the sandbox and carries every connection
// accepted there to the platform over the runtime connection, as a tunnel
// with the framing and windows of tcp.open. The model gateway rides them:
// a program in a deny_all sandbox reaches the platform with nothing
// leaving the sandbox but the runtime connection.
const (
	// OpGatewayListen asks the runtime to listen on 127.0.0.1:Port (Port 0
	// picks a free port). It is answered by one result frame, a
	// GatewayListenResult, or an error: invalid for a port outside
	// 0..65535, conflict when something else holds the port. The request
	// stays open after its result: each accepted connection is announced
	// by a TypeTCPAccept frame with the request's id. The listener belongs
	// to the runtime, not the connection: a later gateway.listen for the
	// same port (a reconnect) takes it over, and connections accepted while
	// no connection holds it are closed at once. A runtime that predates
	// reverse tunnels answers invalid ("unknown op").
	OpGatewayListen = "gateway.listen"

	// TypeTCPAccept announces a connection accepted on a gateway.listen
	// port: ID is the gateway.listen request's, Tunnel the new tunnel's id
	// (its top bit set, so it never collides with a client's request id).
	// The tunnel is open at once; its frames are those of tcp.open in both
	// directions, each side starting with a TunnelWindow of credit.
	TypeTCPAccept = "tcp.accept"
)

// ReverseTunnelBit is set in the id of every tunnel the runtime opens; the
// client's request ids never have it.
const ReverseTunnelBit = uint64(1) << 63

// GatewayListenResult answers gateway.listen.
type GatewayListenResult struct {
	// Port is the port listened on (the one asked, or the one picked).
	Port int `json:"port"`
}

// AcceptFrame is a TypeTCPAccept frame.
type AcceptFrame struct {
	Type   string `json:"type"` // TypeTCPAccept
	ID     uint64 `json:"id"`
	Tunnel uint64 `json:"tunnel"`
}
