package kubernetes

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// LabelTenant names the tenant a workspace's objects (its pod included)
// and a tenant NetworkPolicy belong to.
const LabelTenant = labelPrefix + "tenant"

// tenantOf is the request's tenant, the default one when it names none.
func tenantOf(req backend.ProvisionRequest) string {
	if req.TenantID == "" {
		return wire.DefaultTenantID
	}
	return req.TenantID
}

// TenantPolicyName returns the name of the NetworkPolicy that keeps the
// workspace pods of tenant apart from every other tenant's.
func TenantPolicyName(installation, tenant string) string {
	if len(installation) > 12 {
		installation = installation[:12]
	}
	if installation == "" {
		return "primer-tenant-" + tenant
	}
	return "primer-" + installation + "-tenant-" + tenant
}

// tenantSelector selects the workspace pods of tenant made by this
// installation.
func (b *Backend) tenantSelector(tenant string) metav1.LabelSelector {
	l := map[string]string{LabelTenant: tenant, LabelManaged: "true"}
	if b.opts.Installation != "" {
		l[LabelInstallation] = b.opts.Installation
	}
	return metav1.LabelSelector{MatchLabels: l}
}

// TenantPolicy is the NetworkPolicy of tenant in the provider's
// namespace: the tenant's workspace pods admit connections from the
// tenant's own workspace pods, and to the runtime's port from anywhere
// (the platform reaches it by pod address or Service from wherever it runs,
// and the runtime authenticates every connection with the workspace's
// token; a port-forward goes through the kubelet, which no policy sees).
// Another tenant's pods reach nothing else. Only a network plugin that
// enforces NetworkPolicy applies it; the runtime's own ingress firewall
// holds on every cluster.
func (b *Backend) TenantPolicy(tenant string) *networkingv1.NetworkPolicy {
	sel := b.tenantSelector(tenant)
	labels := map[string]string{LabelTenant: tenant, LabelManaged: "true", "app.kubernetes.io/managed-by": "primer"}
	if b.opts.Installation != "" {
		labels[LabelInstallation] = b.opts.Installation
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: TenantPolicyName(b.opts.Installation, tenant), Labels: labels},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: sel,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &sel}}},
				{Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr(corev1.ProtocolTCP), Port: ptr(intstr.FromInt32(RuntimePort))}}},
			},
		},
	}
}

// ensureTenantPolicy creates the tenant's NetworkPolicy unless it exists.
// Concurrent provisions of the tenant's workspaces race to create it; the
// losers find it made. It has no owner: it outlives the tenant's last
// workspace (one small object per tenant and namespace), so that removing
// it can never race with a provision that counts on it.
func (b *Backend) ensureTenantPolicy(ctx context.Context, id, tenant string) error {
	pol := b.TenantPolicy(tenant)
	policies := b.cs.NetworkingV1().NetworkPolicies(b.cfg.Namespace)
	_, err := policies.Create(ctx, pol, metav1.CreateOptions{FieldManager: fieldManager})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return b.apiErr(err, "workspace %s: create NetworkPolicy %s", id, pol.Name)
	}
	cur, err := policies.Get(ctx, pol.Name, metav1.GetOptions{})
	if err != nil {
		return b.apiErr(err, "workspace %s: get NetworkPolicy %s", id, pol.Name)
	}
	if cur.Labels[LabelManaged] != "true" || cur.Labels[LabelTenant] != tenant {
		return errs.E(errs.Conflict, "workspace %s: NetworkPolicy %s/%s exists and is not tenant %s's", id, b.cfg.Namespace, pol.Name, tenant)
	}
	return nil
}
