package container

import (
	"context"
	"net/netip"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	dnetwork "github.com/docker/docker/api/types/network"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
)

// LabelTenant names the tenant a container, volume or tenant network
// belongs to.
const LabelTenant = labelPrefix + "tenant"

// TenantNetwork returns the name of the bridge network the workspaces of
// tenant join when their egress is allowed: one per installation and
// tenant, so that no two tenants ever share a network.
func TenantNetwork(installation, tenant string) string {
	if tenant == "" {
		tenant = models.DefaultTenantID
	}
	if len(installation) > 12 {
		installation = installation[:12]
	}
	if installation == "" {
		return "primer-tenant-" + tenant
	}
	return "primer-" + installation + "-tenant-" + tenant
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
// another tenant's. Tenant networks are not removed with their last
// workspace (removing one would race with a provision joining it); an
// empty one costs the engine a bridge and nothing else.
func (b *Backend) tenantNetwork(ctx context.Context, tenant string) (string, peers, error) {
	if tenant == "" {
		tenant = models.DefaultTenantID
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
