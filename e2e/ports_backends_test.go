package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/backend/vm/vmtest"
)

// TestKubernetesPortsDenyAll (issue 26) is TestPortsDenyAll on a pod: the
// dev server in a deny_all workspace is listed and reached through
// /ports/, a preview link and port-forward, over the runtime connection
// (nothing is published: the pod admits only the runtime's port), and
// egress stays denied.
func TestKubernetesPortsDenyAll(t *testing.T) {
	p := startPrimer(t, withContainers(t))
	ns := kubernetestest.Namespace(t)
	ctx := ctxT(t, 5*time.Minute)
	kb := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, p.srv.Installation())
	id := runRecipe(t, p, ctx, kubeRecipeManifest(t, ns), func(id string) {
		_ = kb.Destroy(context.Background(), backend.Handle{Backend: kubernetes.Type, WorkspaceID: id})
	})
	checkPorts(t, p, ctx, id)
	checkEgressBlocked(t, p, ctx, id, hostAddrs(t))
}

// TestVMPorts (issue 26) is TestPortsDenyAll on a vm workspace. A vm
// template has no egress policy (the host is the user's machine), so the
// open template is used: what is proved is the way in, over the runtime
// connection through SSH, with nothing published on the host.
func TestVMPorts(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	p := startPrimer(t, withContainers(t))
	ctx := ctxT(t, 5*time.Minute)
	manifest := vmRecipeManifest(t, host)
	if out, errOut, code := p.primectl(manifest, "create", "-f", "-"); code != 0 {
		t.Fatalf("create -f: code %d\n%s\n%s", code, out, errOut)
	}
	id := createRunning(t, p, "code-sandbox").ID
	checkPorts(t, p, ctx, id)
	if _, _, code := p.primectl("", "delete", "workspace", id, "--wait"); code != 0 {
		t.Errorf("delete workspace --wait: code %d", code)
	}
}
