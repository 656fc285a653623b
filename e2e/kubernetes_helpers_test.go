package e2e

import (
	"testing"
	"time"

	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// kubeEnv is one test's Kubernetes ground: a namespace of its own on the
// cluster of KUBECONFIG, a provider on it in the platform, and a backend
// on the same namespace (labelled as the platform's installation) for the
// test to inspect what the platform made.
type kubeEnv struct {
	ns       string
	provider string
	b        *kubernetes.Backend
}

// kubeProvider creates provider id on a fresh namespace, reached by reach.
// It skips the test (fails it in CI) when there is no cluster.
func kubeProvider(t *testing.T, p *primer, id, reach string) *kubeEnv {
	t.Helper()
	ns := kubernetestest.Namespace(t)
	ctx := ctxT(t, time.Minute)
	if _, err := p.api.CreateProvider(ctx, wire.ProviderSpec{ID: id, Provider: "kubernetes", Config: kubernetestest.ProviderConfig(t, ns, reach)}); err != nil {
		t.Fatalf("create provider %s: %v", id, err)
	}
	return &kubeEnv{ns: ns, provider: id, b: kubernetestest.Backend(t, ns, reach, p.srv.Installation())}
}

// template creates template id on the provider with a backend document.
func (k *kubeEnv) template(t *testing.T, p *primer, id, backendDoc string) {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: id, ProviderID: k.provider, Backend: raw(backendDoc)}); err != nil && !errs.Is(err, errs.Conflict) {
		t.Fatalf("create template %s: %v", id, err)
	}
}
