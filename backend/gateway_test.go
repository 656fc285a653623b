package backend_test

import (
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/wire"
)

// TestGatewayPortFor: a sandbox of its own listens on the default port; a
// host backend's workspaces, which share the host's loopback, each get a
// port of their own, the same at every call (the environment and the
// listener ask separately); a template's port wins everywhere.
func TestGatewayPortFor(t *testing.T) {
	g := &backend.ModelGateway{ProviderID: "p", Models: []string{"m"}}
	for _, kind := range []string{wire.BackendContainer, wire.BackendKubernetes} {
		if got := g.PortFor(kind, "ws-a"); got != backend.DefaultGatewayPort {
			t.Errorf("%s: port %d, want the default %d", kind, got, backend.DefaultGatewayPort)
		}
	}
	for _, kind := range []string{wire.BackendLocal, wire.BackendWorktree, wire.BackendVM} {
		seen := map[int]string{}
		for _, id := range []string{"ws-0a1b2c3d4e5f", "ws-1a1b2c3d4e5f", "ws-2a1b2c3d4e5f", "ws-3a1b2c3d4e5f"} {
			p := g.PortFor(kind, id)
			if p < 20000 || p >= 32000 {
				t.Errorf("%s %s: port %d outside [20000, 32000)", kind, id, p)
			}
			if again := g.PortFor(kind, id); again != p {
				t.Errorf("%s %s: port %d, then %d", kind, id, p, again)
			}
			if other, ok := seen[p]; ok {
				t.Errorf("%s: %s and %s both get port %d", kind, id, other, p)
			}
			seen[p] = id
		}
	}
	g.Port = 9000
	for _, kind := range []string{wire.BackendContainer, wire.BackendLocal, wire.BackendVM} {
		if got := g.PortFor(kind, "ws-a"); got != 9000 {
			t.Errorf("%s with port 9000 set: %d", kind, got)
		}
	}
}
