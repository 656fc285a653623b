package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker"
)

// TestWarmCreate creates workspaces on a pooled template on the local
// backend: a create takes an idle member, which answers running and runs a
// command at once, leaves the pool, and the pool refills to its size. A
// template without a pool creates cold.
func TestWarmCreate(t *testing.T) {
	const size = 2
	p := startPrimer(t, func(c *worker.Config) { c.PoolInterval = time.Second })
	ctx := ctxT(t, 3*time.Minute)
	api := p.api
	if _, err := api.CreateTemplate(ctx, wire.TemplateSpec{ID: "warm", ProviderID: "local", Backend: raw(`{"kind":"local"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.CreatePool(ctx, wire.PoolSpec{ID: "warm", TemplateID: "warm", Size: size}); err != nil {
		t.Fatal(err)
	}
	full := func() bool {
		pl, err := api.GetPool(ctx, "warm")
		return err == nil && pl.Status == wire.PoolStatus{Idle: size}
	}
	eventually(t, 2*time.Minute, fmt.Sprintf("%d idle members", size), full)
	members, err := api.ListWorkspaces(ctx, client.WorkspaceListOptions{PoolID: "warm"})
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	ws, err := api.Create(ctx, wire.CreateWorkspaceRequest{TemplateID: "warm", Labels: map[string]string{"run": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: ws.ID, Command: []string{"sh", "-c", "echo hi"}})
	took := time.Since(start)
	if err != nil || res.ExitCode != 0 || res.Stdout != "hi\n" {
		t.Fatalf("first exec in %s: %+v (%v)", ws.ID, res, err)
	}
	t.Logf("warm create to first exec: %s", took)
	if ws.Source != client.LeaseWarm || ws.Phase != wire.PhaseRunning || ws.PoolID != "" || ws.PoolState != "" ||
		ws.Labels["run"] != "1" || (ws.ID != members[0].ID && ws.ID != members[1].ID) {
		t.Fatalf("create = %+v, want a running member of %v, out of the pool, with its labels", ws, members)
	}

	// The pool makes a new member; the taken one stays out of it.
	eventually(t, 2*time.Minute, "the pool refilled", func() bool {
		ms, err := api.ListWorkspaces(ctx, client.WorkspaceListOptions{PoolID: "warm"})
		return err == nil && full() && len(ms) == size
	})
	ms, err := api.ListWorkspaces(ctx, client.WorkspaceListOptions{PoolID: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.ID == ws.ID {
			t.Fatalf("the taken workspace %s is back in the pool", ws.ID)
		}
	}
	got, err := api.GetWorkspace(ctx, ws.ID)
	if err != nil || got.Phase != wire.PhaseRunning || got.PoolID != "" {
		t.Fatalf("taken workspace = %+v (%v)", got, err)
	}

	// No pool on the template: cold, pending.
	cold, err := api.Create(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
	if err != nil {
		t.Fatal(err)
	}
	if cold.Source != client.LeaseCold || cold.Phase != wire.PhasePending {
		t.Fatalf("create without a pool = %+v, want cold and pending", cold)
	}

	// Clean up: the pool's members and both workspaces are gone.
	for _, id := range []string{ws.ID, cold.ID} {
		if _, err := api.DeleteWorkspace(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := api.DeletePool(ctx, "warm"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "every workspace gone", func() bool {
		list, err := api.ListWorkspaces(ctx, client.WorkspaceListOptions{})
		return err == nil && len(list) == 0
	})
}
