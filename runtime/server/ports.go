package server

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// tcpListen is the state of a listening socket in /proc/net/tcp{,6}.
const tcpListen = "0A"

// listPorts answers ports.list from the kernel's socket tables of the
// sandbox's network namespace (the runtime's own), so a program that
// listens is seen whatever it is written in, without running anything.
func (s *Server) listPorts(ctx context.Context, _ *protocol.Request) (any, error) {
	own := ownSocketInodes()
	seen := map[protocol.ListeningPort]bool{}
	out := []protocol.ListeningPort{}
	found := false
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(name)
		if err != nil {
			continue // no IPv6, or no /proc at all (said below)
		}
		found = true
		for _, l := range parseProcNetTCP(data) {
			if own[l.inode] || seen[l.ListeningPort] {
				continue
			}
			seen[l.ListeningPort] = true
			out = append(out, l.ListeningPort)
		}
	}
	if !found {
		return nil, errs.E(errs.Unavailable, "ports.list: this system has no /proc/net/tcp to read listening ports from")
	}
	slices.SortFunc(out, func(a, b protocol.ListeningPort) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Address, b.Address))
	})
	return protocol.PortsResult{Ports: out}, nil
}

// procSocket is a listening socket of /proc/net/tcp with its inode.
type procSocket struct {
	protocol.ListeningPort
	inode string
}

// parseProcNetTCP returns the listening sockets of a /proc/net/tcp or
// tcp6 table bound to loopback or to any address; lines it cannot read
// are skipped. Addresses are hex in host byte order per 32-bit word.
func parseProcNetTCP(data []byte) []procSocket {
	var out []procSocket
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != tcpListen {
			continue
		}
		hexAddr, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil || port == 0 {
			continue
		}
		ip := procIP(hexAddr)
		if ip == nil || !(ip.IsLoopback() || ip.IsUnspecified()) {
			continue
		}
		out = append(out, procSocket{ListeningPort: protocol.ListeningPort{Port: int(port), Address: ip.String()}, inode: f[9]})
	}
	return out
}

// procIP decodes an address of /proc/net/tcp{,6}: 4 or 16 bytes written
// as 32-bit words in the host's (little-endian on every platform Primer
// runs on) byte order.
func procIP(h string) net.IP {
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return net.IP(b)
}

// ownSocketInodes are the inodes of the runtime's own sockets (its
// listener, gateway ports): not a program's, so not listed.
func ownSocketInodes() map[string]bool {
	own := map[string]bool{}
	fds, _ := filepath.Glob("/proc/self/fd/*")
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			own[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return own
}
