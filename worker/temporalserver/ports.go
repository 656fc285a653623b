package temporalserver

import (
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/primerhq/primer/errs"
)

// checkPortFree reports whether host:port can be bound now.
func checkPortFree(host string, port int) error {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return errs.E(errs.Conflict, "temporal server: listen %s: %w", addr, err)
	}
	return l.Close()
}

// freePorts returns n distinct ports the kernel hands out on ip, none of
// them in avoid. The listeners stay open until all n are picked, so no port
// comes back twice; another process may still take one before the server
// binds it, a race too narrow to matter for a start that happens once.
func freePorts(ip string, n int, avoid ...int) ([]int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for len(ports) < n {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return nil, fmt.Errorf("temporal server: pick a free port on %s: %w", ip, err)
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if slices.Contains(avoid, port) {
			continue
		}
		ports = append(ports, port)
	}
	return ports, nil
}
