package container

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	dnetwork "github.com/docker/docker/api/types/network"

	"github.com/primerhq/primer/errs"
)

// TestTenantNetworkName checks tenant networks are apart per installation
// and tenant, and that the empty tenant is the default one.
func TestTenantNetworkName(t *testing.T) {
	tests := []struct{ installation, tenant, want string }{
		{"", "acme", "primer-tenant-acme"},
		{"", "", "primer-tenant-default"},
		{"0123456789abcdef", "acme", "primer-0123456789ab-tenant-acme"},
		{"i1", "acme", "primer-i1-tenant-acme"},
	}
	for _, tt := range tests {
		if got := TenantNetwork(tt.installation, tt.tenant); got != tt.want {
			t.Errorf("TenantNetwork(%q, %q) = %q, want %q", tt.installation, tt.tenant, got, tt.want)
		}
	}
}

// TestTenantNetworkRaces drives tenantNetwork through what concurrent
// provisions see: many at once in this process make the network once, a
// network another worker made between the inspection and the creation is
// joined, and a network of that name that is not the tenant's is refused.
func TestTenantNetworkRaces(t *testing.T) {
	ctx := context.Background()
	want := peers{allow: []netip.Prefix{netip.MustParsePrefix("10.77.0.0/16")}, except: []netip.Prefix{netip.MustParsePrefix("10.77.0.1/32")}}
	same := func(a, b peers) bool { return slices.Equal(a.allow, b.allow) && slices.Equal(a.except, b.except) }

	t.Run("concurrent provisions create once", func(t *testing.T) {
		f := &fakeEngine{}
		b := fakeBackend(t, f)
		var wg sync.WaitGroup
		errc := make(chan error, 20)
		for range 20 {
			wg.Go(func() {
				name, subnets, err := b.tenantNetwork(ctx, "acme")
				if err == nil && (name != "primer-tenant-acme" || !same(subnets, want)) {
					t.Errorf("tenantNetwork = %q %v", name, subnets)
				}
				errc <- err
			})
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := f.called("NetworkCreate"); len(got) != 1 {
			t.Fatalf("NetworkCreate calls = %q, want one", got)
		}
	})

	t.Run("made meanwhile by another worker", func(t *testing.T) {
		f := &fakeEngine{}
		f.networkCreate = func(name string, o dnetwork.CreateOptions) error {
			return f.addNetwork(name, o.Labels) // the other worker wins
		}
		b := fakeBackend(t, f)
		if _, subnets, err := b.tenantNetwork(ctx, "acme"); err != nil || !same(subnets, want) {
			t.Fatalf("tenantNetwork after losing the race = %v, %v; want the network", subnets, err)
		}
	})

	t.Run("labelled for another tenant", func(t *testing.T) {
		f := &fakeEngine{}
		if err := f.addNetwork("primer-tenant-acme", map[string]string{LabelManaged: "true", LabelTenant: "other"}); err != nil {
			t.Fatal(err)
		}
		b := fakeBackend(t, f)
		if _, _, err := b.tenantNetwork(ctx, "acme"); errs.KindOf(err) != errs.Conflict {
			t.Fatalf("tenantNetwork on a foreign network = %v, want a conflict", err)
		}
	})

	t.Run("engine down", func(t *testing.T) {
		f := &fakeEngine{down: unreachable}
		b := fakeBackend(t, f)
		if _, _, err := b.tenantNetwork(ctx, "acme"); errs.KindOf(err) != errs.Unavailable {
			t.Fatalf("tenantNetwork with the engine down = %v, want unavailable", err)
		}
	})
}

func TestIngressArgs(t *testing.T) {
	got := ingressArgs(peers{
		allow:  []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00::/64")},
		except: []netip.Prefix{netip.MustParsePrefix("10.1.0.1/32")},
	})
	want := []string{"--ingress=restrict", "--ingress-allow=10.1.0.0/16,fd00::/64", "--ingress-except=10.1.0.1/32"}
	if !slices.Equal(got, want) {
		t.Fatalf("ingressArgs = %q, want %q", got, want)
	}
	if got := ingressArgs(peers{}); !slices.Equal(got, []string{"--ingress=restrict"}) {
		t.Fatalf("ingressArgs(none) = %q", got)
	}
}

// TestDropTenantNetwork checks an empty tenant network is removed, but not
// while a provision of this backend is joining it, nor a network that is not
// the tenant's.
func TestDropTenantNetwork(t *testing.T) {
	ctx := context.Background()
	f := &fakeEngine{}
	b := fakeBackend(t, f)
	if _, _, err := b.tenantNetwork(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	exists := func() bool {
		_, err := f.NetworkInspect(ctx, "primer-tenant-acme", dnetwork.InspectOptions{})
		return err == nil
	}
	release := b.holdTenantNetwork("acme")
	b.dropTenantNetwork(ctx, "acme")
	if !exists() {
		t.Fatal("the network was removed while a provision held it")
	}
	release()
	b.dropTenantNetwork(ctx, "other")
	if !exists() {
		t.Fatal("dropping another tenant's network removed acme's")
	}
	b.dropTenantNetwork(ctx, "acme")
	if exists() {
		t.Fatal("the idle network was not removed")
	}
	// A network of that name made by hand (no labels) stays.
	if err := f.addNetwork("primer-tenant-acme", nil); err != nil {
		t.Fatal(err)
	}
	b.dropTenantNetwork(ctx, "acme")
	if !exists() {
		t.Fatal("a network that is not the tenant's was removed")
	}
}

// TestTidy checks the reconciler's sweep of tenant networks: an empty one
// of this installation older than the grace is removed; one a container is
// on, one younger than the grace, one a provision holds, one of another
// installation and one made by hand all stay.
func TestTidy(t *testing.T) {
	ctx := context.Background()
	f := &fakeEngine{}
	b := fakeBackend(t, f)
	for _, tenant := range []string{"idle", "busy", "held"} {
		if _, _, err := b.tenantNetwork(ctx, tenant); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	busy := f.nets["primer-tenant-busy"]
	busy.Containers = map[string]dnetwork.EndpointResource{"c1": {Name: "primer-ws-1"}}
	f.nets["primer-tenant-busy"] = busy
	f.mu.Unlock()
	if err := f.addNetwork("primer-other-tenant-idle", map[string]string{LabelManaged: "true", LabelTenant: "idle", LabelInstallation: "other"}); err != nil {
		t.Fatal(err)
	}
	if err := f.addNetwork("primer-tenant-byhand", nil); err != nil {
		t.Fatal(err)
	}
	release := b.holdTenantNetwork("held")
	defer release()

	// Everything is younger than a minute: nothing goes.
	if removed, err := b.Tidy(ctx, time.Minute); err != nil || len(removed) != 0 {
		t.Fatalf("Tidy(1m) = %v, %v; want nothing removed", removed, err)
	}
	removed, err := b.Tidy(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"network primer-tenant-idle"}; !slices.Equal(removed, want) {
		t.Fatalf("Tidy(0) removed %v, want %v", removed, want)
	}
	for _, name := range []string{"primer-tenant-busy", "primer-tenant-held", "primer-other-tenant-idle", "primer-tenant-byhand"} {
		if _, err := f.NetworkInspect(ctx, name, dnetwork.InspectOptions{}); err != nil {
			t.Errorf("network %s: %v; want it kept", name, err)
		}
	}

	f.down = errs.E(errs.Unavailable, "engine down")
	if _, err := b.Tidy(ctx, 0); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("Tidy on a dead engine = %v, want Unavailable", err)
	}
}
