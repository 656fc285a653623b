package wire

// ConsoleCookie is the console's session cookie. The port proxy
// (/v1/workspaces/{id}/ports/{port}/...) removes it, with the
// Authorization header, from what it forwards into a workspace: a program
// in the sandbox must never see a credential of the platform.
const ConsoleCookie = "primer_console"

// PortForwardedPrefix is the header the port proxy tells the program in
// the workspace the path prefix it is served under with
// (/v1/workspaces/{id}/ports/{port}), as X-Forwarded-Host and
// X-Forwarded-Proto tell the host and scheme.
const PortForwardedPrefix = "X-Forwarded-Prefix"

// PortForwardEOF is the one text message of a port-forward WebSocket
// (GET /v1/workspaces/{id}/port-forward/{port}): its sender will send no
// more bytes, a TCP half-close. Binary messages carry the bytes each way;
// a close frame ends the connection.
const PortForwardEOF = "eof"
