package kubernetes_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	rtclient "github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// TestTenantsCannotReachEachOther runs two workspace pods of tenant A and
// one of tenant B, each serving a port of its own, on a cluster whose
// network plugin enforces no NetworkPolicy (the test cluster's bridge): the
// runtime's ingress firewall is what keeps them apart. No pod reaches
// another's served port, whatever the tenant; the controls show the probe
// works (every pod reaches the others' runtime port, which stays open for
// the platform, and its own served port by its pod address). The tenant
// NetworkPolicies exist with the selectors that hold where policies are
// enforced.
func TestTenantsCannotReachEachOther(t *testing.T) {
	ns := kubernetestest.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	b := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
	suffix := strings.TrimPrefix(backendtest.NewID(t), "ws-")
	tenantA, tenantB := "ta-"+suffix, "tb-"+suffix

	type pod struct {
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
	provision := func(tenant string) pod {
		t.Helper()
		id, token := backendtest.NewID(t), backendtest.NewToken(t)
		h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, TenantID: tenant, Template: kubernetestest.Template(kubernetestest.BusyboxImage, nil), Token: token})
		if err != nil {
			t.Fatalf("provision %s for tenant %s: %v", id, tenant, err)
		}
		t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
		p, err := b.Clientset().CoreV1().Pods(ns).Get(ctx, kubernetes.PodName(id), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Labels[kubernetes.LabelTenant]; got != tenant {
			t.Errorf("pod %s label %s = %q, want %q", p.Name, kubernetes.LabelTenant, got, tenant)
		}
		ep, err := b.Endpoint(ctx, h, token)
		if err != nil {
			t.Fatal(err)
		}
		c, err := rtclient.Dial(ctx, ep.URL, token)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		w := pod{c: c, ip: p.Status.PodIP}
		run(w.c, "nc -ll -p "+listenPort+" -e true </dev/null >/dev/null 2>&1 &")
		if got := run(w.c, "for i in $(seq 100); do nc -w 1 127.0.0.1 "+listenPort+" </dev/null && echo up && exit; sleep 0.1; done; echo down"); got != "up" {
			t.Fatalf("workspace %s: its server on port %s did not come up", id, listenPort)
		}
		return w
	}
	probe := func(from, to pod, port string) string {
		t.Helper()
		return run(from.c, "nc -w 3 "+to.ip+" "+port+" </dev/null && echo open || echo closed")
	}

	a1, a2 := provision(tenantA), provision(tenantA)
	b1 := provision(tenantB)
	tests := []struct {
		name     string
		from, to pod
		port     string
		want     string
	}{
		{"own pod address (control)", a1, a1, listenPort, "open"},
		{"another tenant's runtime port (control: open for the platform, token-guarded)", a1, b1, "7777", "open"},
		{"tenant A to tenant B", a1, b1, listenPort, "closed"},
		{"tenant B to tenant A", b1, a2, listenPort, "closed"},
		{"same tenant: closed too, the firewall cannot tell tenants apart by address", a1, a2, listenPort, "closed"},
	}
	for _, tt := range tests {
		if got := probe(tt.from, tt.to, tt.port); got != tt.want {
			t.Errorf("%s: %s -> %s:%s is %s, want %s", tt.name, tt.from.ip, tt.to.ip, tt.port, got, tt.want)
		}
	}
	// The platform's side (this process, on the node) reaches the runtime
	// port by pod address, which is how reachability pod_ip works.
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(b1.ip, "7777"), 3*time.Second)
	if err != nil {
		t.Errorf("dial b1's runtime port from the node: %v", err)
	} else {
		conn.Close()
	}

	for _, tenant := range []string{tenantA, tenantB} {
		pol, err := b.Clientset().NetworkingV1().NetworkPolicies(ns).Get(ctx, kubernetes.TenantPolicyName("", tenant), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the NetworkPolicy of tenant %s: %v", tenant, err)
		}
		sel := pol.Spec.PodSelector.MatchLabels
		if sel[kubernetes.LabelTenant] != tenant || sel[kubernetes.LabelManaged] != "true" {
			t.Errorf("policy %s selects %v, want tenant %s's pods", pol.Name, sel, tenant)
		}
		if len(pol.Spec.Ingress) != 2 || len(pol.Spec.Ingress[0].From) != 1 || pol.Spec.Ingress[0].From[0].PodSelector == nil ||
			pol.Spec.Ingress[0].From[0].PodSelector.MatchLabels[kubernetes.LabelTenant] != tenant || pol.Spec.Ingress[0].From[0].NamespaceSelector != nil {
			t.Errorf("policy %s admits %+v, want its tenant's pods first", pol.Name, pol.Spec.Ingress)
		} else if ports := pol.Spec.Ingress[1].Ports; len(ports) != 1 || ports[0].Port.IntValue() != kubernetes.RuntimePort || len(pol.Spec.Ingress[1].From) != 0 {
			t.Errorf("policy %s second rule %+v, want the runtime's port from anywhere", pol.Name, pol.Spec.Ingress[1])
		}
	}
}

// listenPort is where the workspaces of the network test serve.
const listenPort = "8080"
