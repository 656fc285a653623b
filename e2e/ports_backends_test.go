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
	model, key := startGatewayModel(t), secretKey(t)
	id := runRecipe(t, p, ctx, withModelGateway(t, p, kubeRecipeManifest(t, ns), model, key, ""), func(id string) {
		_ = kb.Destroy(context.Background(), backend.Handle{Backend: kubernetes.Type, WorkspaceID: id})
	})
	checkPorts(t, p, ctx, id)
	checkGatewayCall(t, p, ctx, id, model, key, "python")
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
	model, key := startGatewayModel(t), secretKey(t)
	manifest := withModelGateway(t, p, vmRecipeManifest(t, host), model, key, "")
	if out, errOut, code := p.primectl(manifest, "create", "-f", "-"); code != 0 {
		t.Fatalf("create -f: code %d\n%s\n%s", code, out, errOut)
	}
	id := createRunning(t, p, "code-sandbox").ID
	checkPorts(t, p, ctx, id)
	checkGatewayCall(t, p, ctx, id, model, key, "python")
	if _, _, code := p.primectl("", "delete", "workspace", id, "--wait"); code != 0 {
		t.Errorf("delete workspace --wait: code %d", code)
	}
}
