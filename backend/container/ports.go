package container

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	dcontainer "github.com/docker/docker/api/types/container"

	"github.com/primerhq/primer/errs"
)

func portTaken(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "address already in use") || strings.Contains(msg, "port is already allocated")
}

// pickPort returns the host port to publish the runtime on: empty (the
// engine picks) on Docker, whose daemon allocates ports atomically. Podman
// 4 picks free ports per container without coordination, and two containers
// created at the same moment were seen to get the same one; for a Podman on
// this host (socket connection) the backend picks a port the kernel says is
// free and that it has not handed out in this process in the last minute. A
// remote Podman picks its own, and a clash is retried by createAndStart.
func (b *Backend) pickPort() (string, func(), error) {
	if b.cfg.Runtime != EnginePodman || b.cfg.Connection.Kind != ConnSocket {
		return "", func() {}, nil
	}
	for range 20 {
		ln, err := net.Listen("tcp", net.JoinHostPort(b.cfg.Reachability.BindHost, "0"))
		if err != nil {
			return "", nil, errs.E(errs.Unavailable, "pick a port on %s: %w", b.cfg.Reachability.BindHost, err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if b.ports.claim(p) {
			return strconv.Itoa(p), func() { b.ports.releaseLater(p) }, nil
		}
	}
	return "", nil, errs.E(errs.Unavailable, "no free port on %s", b.cfg.Reachability.BindHost)
}

// portSet remembers ports handed out recently.
type portSet struct {
	mu    sync.Mutex
	inUse map[int]bool
}

func (s *portSet) claim(p int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inUse == nil {
		s.inUse = map[int]bool{}
	}
	if s.inUse[p] {
		return false
	}
	s.inUse[p] = true
	return true
}

// releaseLater frees p a minute from now: by then the engine holds it or
// has given it up.
func (s *portSet) releaseLater(p int) {
	time.AfterFunc(time.Minute, func() {
		s.mu.Lock()
		delete(s.inUse, p)
		s.mu.Unlock()
	})
}

// runtimeURL returns where the runtime of a running container listens.
func (b *Backend) runtimeURL(id string, info dcontainer.InspectResponse) (string, error) {
	if info.State == nil || !info.State.Running {
		return "", errs.E(errs.Unavailable, "workspace %s: container %s is %s", id, Name(id), describeState(info.State))
	}
	if info.NetworkSettings == nil {
		return "", errs.E(errs.Unavailable, "workspace %s: container %s has no network settings", id, Name(id))
	}
	switch b.cfg.Reachability.Kind {
	case ReachNetwork:
		ep := info.NetworkSettings.Networks[b.cfg.Reachability.Network]
		if ep == nil || ep.IPAddress == "" {
			return "", errs.E(errs.Unavailable, "workspace %s: container %s has no address on network %q", id, Name(id), b.cfg.Reachability.Network)
		}
		return "ws://" + net.JoinHostPort(ep.IPAddress, strconv.Itoa(RuntimePort)) + "/", nil
	default:
		// A wildcard bind is listed once per address family, with one port.
		for _, pb := range info.NetworkSettings.Ports[runtimePort] {
			if pb.HostPort != "" {
				return "ws://" + net.JoinHostPort(b.cfg.Reachability.ConnectHost, pb.HostPort) + "/", nil
			}
		}
		return "", errs.E(errs.Unavailable, "workspace %s: container %s publishes no port for %s", id, Name(id), runtimePort)
	}
}
