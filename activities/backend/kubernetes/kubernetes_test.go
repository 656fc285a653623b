package kubernetes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/activities/backend"
	"github.com/primerhq/primer/activities/backend/backendtest"
	"github.com/primerhq/primer/activities/backend/kubernetes"
	"github.com/primerhq/primer/activities/backend/kubernetes/kubernetestest"
)

// TestConformance runs the backend suite on the cluster, reaching pods by
// their address.
func TestConformance(t *testing.T) {
	ns := kubernetestest.Namespace(t)
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backend.Backend {
			return kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
		},
		Template: kubernetestest.Template(kubernetestest.BusyboxImage, nil),
		Gone: func(t *testing.T, h backend.Handle) bool {
			b := kubernetestest.Backend(t, ns, kubernetes.ReachPodIP, "")
			objs, err := b.Objects(context.Background(), h.WorkspaceID)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) > 0 {
				t.Logf("left of %s: %v", h.WorkspaceID, objs)
			}
			return len(objs) == 0
		},
		Timeout: 3 * time.Minute,
	})
}

var _ = strings.Contains
