package container_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	dnetwork "github.com/docker/docker/api/types/network"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/errs"
	rtclient "github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// listenPort is where the workspaces of the network tests serve: a port of
// their own, not the runtime's (which admits any address, its token
// guarding it).
const listenPort = "8080"

// TestTenantsDoNotShareANetwork runs, on each engine, two workspaces of
// tenant A and one of tenant B, egress allowed, each serving a port. A's
// workspaces reach each other (the control: the probe works and the
// tenant's network carries it), and neither tenant reaches the other's:
// Docker keeps its bridge networks apart, and on a Podman whose networks
// are not isolated (netavark before 1.5) the runtime's ingress firewall
// drops the connection.
func TestTenantsDoNotShareANetwork(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		b := containertest.Backend(t, e)
		suffix := strings.TrimPrefix(backendtest.NewID(t), "ws-")
		tenantA, tenantB := "ta-"+suffix, "tb-"+suffix
		// Registered first, so it runs after every workspace is destroyed:
		// a network the test failed before removing is not left behind.
		t.Cleanup(func() {
			for _, tenant := range []string{tenantA, tenantB} {
				_ = b.Client().NetworkRemove(context.Background(), container.TenantNetwork("", tenant))
			}
		})

		type ws struct {
			h  backend.Handle
			c  *rtclient.Client
			ip string
		}
		run := func(c *rtclient.Client, script string) string {
			t.Helper()
			res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", script}}, nil, nil)
			if err != nil {
				t.Fatalf("exec %q: %v", script, err)
			}
			return strings.TrimSpace(string(res.Stdout))
		}
		provision := func(tenant string) ws {
			t.Helper()
			id, token := backendtest.NewID(t), backendtest.NewToken(t)
			h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, TenantID: tenant, Template: busyboxTemplate(nil), Token: token})
			if err != nil {
				t.Fatalf("provision %s for tenant %s: %v", id, tenant, err)
			}
			t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
			info, err := b.Client().ContainerInspect(ctx, container.Name(id))
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Config.Labels[container.LabelTenant]; got != tenant {
				t.Errorf("container %s label %s = %q, want %q", id, container.LabelTenant, got, tenant)
			}
			var nets []string
			for n := range info.NetworkSettings.Networks {
				nets = append(nets, n)
			}
			tnet := container.TenantNetwork("", tenant)
			ep := info.NetworkSettings.Networks[tnet]
			if len(nets) != 1 || ep == nil || ep.IPAddress == "" {
				t.Fatalf("container %s is on networks %v, want only %s with an address", id, nets, tnet)
			}
			w := ws{h: h, c: backendtest.Dial(ctx, t, b, h, token), ip: ep.IPAddress}
			// A persistent server (-ll) that answers each connection and
			// closes it; ready once it answers on loopback.
			run(w.c, "nc -ll -p "+listenPort+" -e true </dev/null >/dev/null 2>&1 &")
			if got := run(w.c, "for i in $(seq 100); do nc -w 1 127.0.0.1 "+listenPort+" </dev/null && echo up && exit; sleep 0.1; done; echo down"); got != "up" {
				t.Fatalf("workspace %s: its server on port %s did not come up", id, listenPort)
			}
			return w
		}
		probe := func(from ws, to ws) string {
			t.Helper()
			return run(from.c, "nc -w 3 "+to.ip+" "+listenPort+" </dev/null && echo open || echo closed")
		}

		a1, a2 := provision(tenantA), provision(tenantA)
		b1 := provision(tenantB)
		tests := []struct {
			name     string
			from, to ws
			want     string
		}{
			{"same tenant (control)", a1, a2, "open"},
			{"same tenant, back", a2, a1, "open"},
			{"tenant A to tenant B", a1, b1, "closed"},
			{"tenant B to tenant A", b1, a2, "closed"},
		}
		for _, tt := range tests {
			if got := probe(tt.from, tt.to); got != tt.want {
				t.Errorf("%s: %s -> %s:%s is %s, want %s", tt.name, tt.from.ip, tt.to.ip, listenPort, got, tt.want)
			}
		}

		// A tenant's network goes with its last workspace, not before.
		exists := func(tenant string) bool {
			_, err := b.Client().NetworkInspect(ctx, container.TenantNetwork("", tenant), dnetwork.InspectOptions{})
			return err == nil
		}
		steps := []struct {
			destroy      ws
			wantA, wantB bool
		}{
			{a1, true, true},
			{b1, true, false},
			{a2, false, false},
		}
		for i, st := range steps {
			if err := b.Destroy(ctx, st.destroy.h); err != nil {
				t.Fatal(err)
			}
			if a, bb := exists(tenantA), exists(tenantB); a != st.wantA || bb != st.wantB {
				t.Errorf("after destroy %d: network of tenant A exists %v, of B %v; want %v, %v", i+1, a, bb, st.wantA, st.wantB)
			}
		}
	})
}

// TestProviderNetworkIsNeverATenantNetwork: a provider whose reachability
// network is a tenant's network (a row written before only admins could
// set the network, or an admin's mistake), named or given by id, makes no
// workspace: provision is refused before anything is created, and no
// container joins that network.
func TestProviderNetworkIsNeverATenantNetwork(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		base := containertest.Backend(t, e)
		victim := "tv-" + strings.TrimPrefix(backendtest.NewID(t), "ws-")
		name := container.TenantNetwork("", victim)
		created, err := base.Client().NetworkCreate(ctx, name, dnetwork.CreateOptions{Driver: "bridge",
			Labels: map[string]string{container.LabelManaged: "true", container.LabelTenant: victim}})
		if err != nil {
			t.Fatalf("create the victim's network: %v", err)
		}
		t.Cleanup(func() { _ = base.Client().NetworkRemove(context.Background(), name) })
		// By name, by id and by a prefix of the id: the engine finds it
		// by each.
		for _, ref := range []string{name, created.ID, created.ID[:12]} {
			raw, _ := json.Marshal(map[string]any{
				"runtime":      e.Name,
				"connection":   map[string]any{"kind": "socket", "socket_path": e.Socket},
				"reachability": map[string]any{"kind": "network", "network": ref},
			})
			cfg, err := container.ParseProviderConfig(raw)
			if err != nil {
				t.Fatal(err)
			}
			b, err := container.New(cfg, container.Options{Runtime: containertest.RuntimeBinary(t)})
			if err != nil {
				t.Fatal(err)
			}
			id := backendtest.NewID(t)
			_, err = b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, TenantID: "attacker", Template: busyboxTemplate(nil), Token: backendtest.NewToken(t)})
			if !errs.Is(err, errs.Forbidden) || !strings.Contains(err.Error(), "is a Primer tenant network") {
				t.Errorf("network %s: Provision = %v; want Forbidden, a tenant network", ref, err)
			}
			if objs := containertest.Objects(t, b, id); len(objs) > 0 {
				t.Errorf("network %s: refused provision left %v", ref, objs)
			}
			_ = b.Close()
		}
		n, err := base.Client().NetworkInspect(ctx, name, dnetwork.InspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Containers) != 0 {
			t.Fatalf("the victim's network has %d containers, want none", len(n.Containers))
		}
	})
}
