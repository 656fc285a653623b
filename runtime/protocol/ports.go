package protocol

// OpPortsList lists the TCP ports programs listen on inside the sandbox
// that tcp.open can reach or that a program bound for everyone: bound to
// loopback (127.0.0.0/8, ::1) or to any address (0.0.0.0, ::). The
// runtime's own sockets are left out. It is answered with PortsResult; a
// runtime that predates it answers invalid ("unknown op"), one on a
// system without /proc/net/tcp unavailable.
const OpPortsList = "ports.list"

// ListeningPort is one listening TCP socket.
type ListeningPort struct {
	Port int `json:"port"`
	// Address is the address it is bound to, as written: 127.0.0.1, ::1,
	// 0.0.0.0 or :: (any address).
	Address string `json:"address"`
}

// PortsResult answers OpPortsList, by port then address.
type PortsResult struct {
	Ports []ListeningPort `json:"ports"`
}
