package container_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/primerhq/primer/activities/backend"
	"github.com/primerhq/primer/activities/backend/backendtest"
	"github.com/primerhq/primer/activities/backend/container/containertest"
)

func busyboxTemplate(extra map[string]any) json.RawMessage {
	doc := map[string]any{"kind": "container", "image": containertest.BusyboxImage, "memory_bytes": 256 << 20, "pids_limit": 256}
	for k, v := range extra {
		doc[k] = v
	}
	raw, _ := json.Marshal(doc)
	return raw
}

// TestConformance runs the backend suite on each engine.
func TestConformance(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		backendtest.Run(t, backendtest.Harness{
			New:      func(t *testing.T) backend.Backend { return containertest.Backend(t, e) },
			Template: busyboxTemplate(nil),
			Gone: func(t *testing.T, h backend.Handle) bool {
				objs := containertest.Objects(t, containertest.Backend(t, e), h.WorkspaceID)
				if len(objs) > 0 {
					t.Logf("left of %s: %v", h.WorkspaceID, objs)
				}
				return len(objs) == 0
			},
			Timeout: 2 * time.Minute,
		})
	})
}
