package container_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/runtime/protocol"
)

// TestUpperChanges checks the reset's fast read of a Docker container's
// changes (its overlay upper directory) against the engine's changes API:
// nothing outside the workspace on a fresh sandbox or after writes inside
// the workspace, and a file added in /tmp and one removed from /etc seen
// by both.
func TestUpperChanges(t *testing.T) {
	e := containertest.Known()[0]
	containertest.Require(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := containertest.Backend(t, e)
	h, token := provisionBusybox(ctx, t, b, "t-upper", nil)
	id := h.WorkspaceID
	c := backendtest.Dial(ctx, t, b, h, token)
	sh := func(script string) {
		t.Helper()
		res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", script}}, nil, nil)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exec %q: %+v, %v", script, res, err)
		}
	}

	sh("echo in > /workspace/in.txt")
	upper, ok, api, err := b.ChangesOf(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("the upper directory of a Docker container on this host was not read (engine api shows %v)", api)
	}
	if len(upper) != 0 {
		t.Errorf("fresh sandbox, a write in the workspace only: upper changes %v, want none (engine api: %v)", upper, api)
	}

	sh("echo x > /tmp/mark; rm /etc/group")
	upper, _, api, err = b.ChangesOf(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"C /tmp/mark", "D /etc/group"} {
		if !slices.Contains(upper, want) {
			t.Errorf("upper changes %v, want %q among them (engine api: %v)", upper, want, api)
		}
	}
	for _, want := range []string{"A /tmp/mark", "D /etc/group"} {
		if !slices.Contains(api, want) {
			t.Errorf("engine api changes %v, want %q", api, want)
		}
	}
}
