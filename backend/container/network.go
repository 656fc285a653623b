package container

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dnetwork "github.com/docker/docker/api/types/network"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// LabelTenant names the tenant a container, volume or tenant network
// belongs to.
const LabelTenant = labelPrefix + "tenant"

// TenantNetwork returns the name of the bridge network the workspaces of
// tenant join when their egress is allowed: one per installation and
// tenant, so that no two tenants ever share a network.
func TenantNetwork(installation, tenant string) string {
	if tenant == "" {
		tenant = wire.DefaultTenantID
	}
	if len(installation) > 12 {
		installation = installation[:12]
	}
	if installation == "" {
		return "primer-tenant-" + tenant
	}
	return "primer-" + installation + "-tenant-" + tenant
}

// netUsers counts, per tenant network, the provisions between making sure
// the network exists and their container's start, so that removing an
// empty network (dropTenantNetwork) never pulls it from under one of them.
// A removal holds mu, so a provision that starts meanwhile waits for it and
// then makes the network again.
type netUsers struct {
	mu sync.Mutex
	n  map[string]int
}

// holdTenantNetwork keeps tenant's network from being removed by this
// backend until release is called.
func (b *Backend) holdTenantNetwork(tenant string) (release func()) {
	name := TenantNetwork(b.opts.Installation, orDefault(tenant))
	u := &b.netUsers
	u.mu.Lock()
	if u.n == nil {
		u.n = map[string]int{}
	}
	u.n[name]++
	u.mu.Unlock()
	return func() {
		u.mu.Lock()
		if u.n[name]--; u.n[name] == 0 {
			delete(u.n, name)
		}
		u.mu.Unlock()
	}
}

// dropTenantNetwork removes tenant's network when no container is on it
// and no provision of this backend is about to join it: a tenant's network
// goes with its last workspace, so that engines do not run out of address
// pools (Docker's default ones hold about 30 networks). Failing to remove
// it is only logged: a network left behind costs a bridge, and the next
// workspace of the tenant joins it. A provision of another worker that
// finds its network removed between its creation and its container's start
// makes it again (Provision). It reports whether it removed the network.
func (b *Backend) dropTenantNetwork(ctx context.Context, tenant string) bool {
	if tenant == "" {
		return false
	}
	name := TenantNetwork(b.opts.Installation, tenant)
	u := &b.netUsers
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n[name] > 0 {
		return false
	}
	n, err := b.cli.NetworkInspect(ctx, name, dnetwork.InspectOptions{})
	if err != nil || len(n.Containers) > 0 || n.Labels[LabelManaged] != "true" || n.Labels[LabelTenant] != tenant || n.Labels[LabelInstallation] != b.opts.Installation {
		return false
	}
	// A network's inspection lists running containers only: a paused
	// workspace's stopped container is still attached and would not start
	// again on a network made anew.
	if cs, err := b.cli.ContainerList(ctx, dcontainer.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("network", name))}); err != nil || len(cs) > 0 {
		return false
	}
	if err := b.cli.NetworkRemove(ctx, name); err != nil && !cerrdefs.IsNotFound(err) {
		b.logger.Debug("tenant network not removed", "tenant", tenant, "network", name, "err", err)
		return false
	}
	b.logger.Info("tenant network removed with its last workspace", "tenant", tenant, "network", name)
	return true
}

// Tidy implements backend.Tidier: it removes this installation's tenant
// networks that no container is on and that were made more than grace ago.
// Those are left when a tenant's last workspace was deleted by a platform
// killed before its delete ended; each would hold one of the engine's
// address pools (about 30 by default) for good. A network younger than
// grace may be about to be joined by a provision of another worker.
func (b *Backend) Tidy(ctx context.Context, grace time.Duration) ([]string, error) {
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	nets, err := b.cli.NetworkList(ctx, dnetwork.ListOptions{Filters: f})
	if err != nil {
		return nil, b.engineErr(err, "list networks")
	}
	var removed []string
	for _, n := range nets {
		tenant := n.Labels[LabelTenant]
		if tenant == "" || n.Labels[LabelInstallation] != b.opts.Installation || n.Name != TenantNetwork(b.opts.Installation, tenant) {
			continue
		}
		if !n.Created.IsZero() && time.Since(n.Created) < grace {
			continue
		}
		if b.dropTenantNetwork(ctx, tenant) {
			removed = append(removed, "network "+n.Name)
		}
	}
	return removed, nil
}

// tenantNetworkGone reports whether tenant's network does not exist.
func (b *Backend) tenantNetworkGone(ctx context.Context, tenant string) bool {
	_, err := b.cli.NetworkInspect(ctx, TenantNetwork(b.opts.Installation, orDefault(tenant)), dnetwork.InspectOptions{})
	return cerrdefs.IsNotFound(err)
}

// tenantOfSandbox reads the tenant label of the workspace's container, or
// of its volume when the container is gone; "" when neither says.
func (b *Backend) tenantOfSandbox(ctx context.Context, id string) string {
	if info, err := b.cli.ContainerInspect(ctx, Name(id)); err == nil && info.Config != nil && info.Config.Labels[LabelWorkspace] == id {
		return info.Config.Labels[LabelTenant]
	}
	if v, err := b.cli.VolumeInspect(ctx, Name(id)); err == nil && v.Labels[LabelWorkspace] == id {
		return v.Labels[LabelTenant]
	}
	return ""
}

func orDefault(tenant string) string {
	if tenant == "" {
		return wire.DefaultTenantID
	}
	return tenant
}

// tenantNetwork makes the tenant's network when it does not exist yet and
// returns its name and peers: its subnets, which the workspace's runtime
// admits connections from, but its gateways, behind which an engine that
// does not isolate its networks (Podman with netavark before 1.5)
// masquerades connections from other networks, another tenant's included.
//
// It is safe to call at once from many provisions, in this process and in
// other workers on the same engine: creation that fails because the network
// appeared meanwhile is success. A network of that name that is not labelled
// as the tenant's is a conflict: joining it could put the workspace beside
// another tenant's. The caller holds the network (holdTenantNetwork) until
// its container has started.
func (b *Backend) tenantNetwork(ctx context.Context, tenant string) (string, peers, error) {
	if tenant == "" {
		tenant = wire.DefaultTenantID
	}
	name := TenantNetwork(b.opts.Installation, tenant)
	unlock := b.nets.Lock(name)
	defer unlock()
	n, err := b.cli.NetworkInspect(ctx, name, dnetwork.InspectOptions{})
	if cerrdefs.IsNotFound(err) {
		labels := map[string]string{LabelManaged: "true", LabelTenant: tenant}
		if b.opts.Installation != "" {
			labels[LabelInstallation] = b.opts.Installation
		}
		opts := dnetwork.CreateOptions{Driver: "bridge", Labels: labels}
		if b.cfg.Runtime == EnginePodman {
			// Netavark isolates the network from the engine's other
			// networks where it supports the option (1.5 and later);
			// older ones ignore it, and the runtime's firewall stands in.
			opts.Options = map[string]string{"isolate": "true"}
		}
		_, cerr := b.cli.NetworkCreate(ctx, name, opts)
		n, err = b.cli.NetworkInspect(ctx, name, dnetwork.InspectOptions{})
		if err != nil && cerr != nil {
			return "", peers{}, b.engineErr(cerr, "tenant %s: create network %s", tenant, name)
		}
	}
	if err != nil {
		return "", peers{}, b.engineErr(err, "tenant %s: inspect network %s", tenant, name)
	}
	if n.Labels[LabelManaged] != "true" || n.Labels[LabelTenant] != tenant || n.Labels[LabelInstallation] != b.opts.Installation {
		return "", peers{}, errs.E(errs.Conflict, "tenant %s: network %s exists and does not belong to it", tenant, name)
	}
	var p peers
	for _, c := range n.IPAM.Config {
		sub, err := netip.ParsePrefix(c.Subnet)
		if err != nil {
			continue
		}
		sub = sub.Masked()
		gw, err := netip.ParseAddr(c.Gateway)
		if err != nil {
			// Engines that do not say use the subnet's first address.
			gw = sub.Addr().Next()
		}
		p.allow = append(p.allow, sub)
		p.except = append(p.except, netip.PrefixFrom(gw, gw.BitLen()))
	}
	if len(p.allow) == 0 {
		return "", peers{}, errs.E(errs.Unavailable, "tenant %s: network %s has no subnet", tenant, name)
	}
	return name, p, nil
}

// peers are the addresses a workspace's runtime admits connections from
// (allow), but those in except.
type peers struct {
	allow, except []netip.Prefix
}

// ingressArgs are the runtime's flags that close the workspace to
// connections opened towards it but to the runtime's port and from p.
func ingressArgs(p peers) []string {
	args := []string{"--ingress=restrict"}
	if len(p.allow) > 0 {
		args = append(args, "--ingress-allow="+joinPrefixes(p.allow))
	}
	if len(p.except) > 0 {
		args = append(args, "--ingress-except="+joinPrefixes(p.except))
	}
	return args
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// checkProviderNetwork refuses a provider's reachability network that is
// one of Primer's tenant networks (labelled as a tenant's, or named like
// one of any installation): a provider joins every workspace it makes to
// its network, so naming a tenant's would put workspaces of whichever
// tenant uses the provider beside that tenant's. The API lets only an
// admin set the network; this holds for rows written before that rule and
// for admins' mistakes. A network that does not exist is left to the
// engine to refuse.
func (b *Backend) checkProviderNetwork(ctx context.Context, id, name string) error {
	refuse := func() error {
		return errs.E(errs.Forbidden, "workspace %s: provider network %q is a Primer tenant network; a provider may not join workspaces to it", id, name)
	}
	if strings.HasPrefix(name, "primer-") && strings.Contains(name, "-tenant-") {
		return refuse()
	}
	n, err := b.cli.NetworkInspect(ctx, name, dnetwork.InspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		return nil
	case err != nil:
		return b.engineErr(err, "workspace %s: inspect network %q", id, name)
	case n.Labels[LabelTenant] != "" || n.Labels[LabelManaged] == "true" ||
		(strings.HasPrefix(n.Name, "primer-") && strings.Contains(n.Name, "-tenant-")):
		// By id, or by a prefix of it, the engine finds the network too.
		return refuse()
	}
	return nil
}
