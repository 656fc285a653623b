package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker"
)

// TestReturnedKilledAfterRemake: a pool member whose lessee left two
// processes running and a file outside the workspace is made again by the
// reset of its return (the whole sandbox restored), and workspace.returned
// still reports the two processes it killed, as a reset that does not
// remake it does, not 0; the member is idle again without them.
func TestReturnedKilledAfterRemake(t *testing.T) {
	e := containertest.Known()[0]
	containertest.Require(t, e)
	r := newFaultRig(t, e, func(c *worker.Config) { c.PoolInterval = time.Second })
	ctx := ctxT(t, 4*time.Minute)
	api := r.p.api
	r.template("remade", nil)
	if _, err := api.CreatePool(ctx, wire.PoolSpec{ID: "remade", TemplateID: "remade", Size: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = api.DeletePool(ctx, "remade")
	})
	eventually(t, 2*time.Minute, "an idle running member", func() bool {
		p, err := api.GetPool(ctx, "remade")
		return err == nil && p.Status.Idle == 1 && p.Status.Starting == 0
	})
	l, err := api.LeasePool(ctx, "remade", wire.LeaseRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := l.Workspace.ID
	for _, tag := range []string{"one", "two"} {
		if _, err := api.StartProcess(ctx, id, wire.ProcessSpec{Command: []string{"sleep", "1000"}, Tag: tag}); err != nil {
			t.Fatal(err)
		}
	}
	// A change outside the workspace: the return's reset remakes the
	// sandbox rather than only emptying the workspace.
	if res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"sh", "-c", "echo lessee > /tmp/mark"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("write outside the workspace: %+v, %v", res, err)
	}
	if _, err := api.ReturnWorkspace(ctx, id); err != nil {
		t.Fatal(err)
	}
	evs := waitEvent(t, api, id, wire.EventReturned, time.Minute)
	var got struct {
		Killed int `json:"killed"`
	}
	if err := json.Unmarshal(evs[len(evs)-1].Data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Killed != 2 {
		t.Errorf("workspace.returned after a remake reports killed %d, want the lessee's 2 processes (%s)", got.Killed, evs[len(evs)-1].Data)
	}
	eventually(t, time.Minute, "the returned member idle again", func() bool {
		ws, err := api.GetWorkspace(ctx, id)
		return err == nil && ws.PoolState == wire.PoolIdle && ws.Phase == wire.PhaseRunning
	})
	res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"sh", "-c", "cat /tmp/mark 2>/dev/null; ps -o args | grep -c '^sleep 1000' || true"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "0\n" {
		t.Errorf("after the return: %q; want no /tmp/mark (remade) and no sleep left", res.Stdout)
	}
}
