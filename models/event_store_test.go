package models

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/primerhq/primer/wire"
)

// TestTenantEvents runs the tenant-wide event reads against every dialect
// (PostgreSQL with PRIMER_TEST_DATABASE_URL).
func TestTenantEvents(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Run("list", func(t *testing.T) { testTenantEvents(t, t.Context(), d.open(t)) })
			t.Run("follow under concurrent appends", func(t *testing.T) { testTenantEventsConcurrent(t, t.Context(), d.open(t)) })
		})
	}
}

func testTenantEvents(t *testing.T, ctx context.Context, s *Store) {
	for _, id := range []string{"ta", "tb"} {
		must(t, s.CreateTenant(ctx, &wire.Tenant{ID: id}))
	}
	if id, err := s.LatestEventID(ctx, "ta"); err != nil || id != 0 {
		t.Fatalf("LatestEventID of a tenant without events = %d, %v; want 0", id, err)
	}
	a1, a2, b1 := newWorkspace("t", "p"), newWorkspace("t", "p"), newWorkspace("t", "p")
	a1.TenantID, a2.TenantID, b1.TenantID = "ta", "ta", "tb"
	for _, w := range []*wire.Workspace{a1, a2, b1} {
		must(t, s.CreateWorkspace(ctx, w))
	}
	var ta, all []wire.Event
	add := func(w *wire.Workspace, typ string) {
		e := &wire.Event{WorkspaceID: w.ID, Type: typ, Data: json.RawMessage(`{"to":"running"}`)}
		must(t, s.AppendEvent(ctx, e))
		all = append(all, *e)
		if w.TenantID == "ta" {
			ta = append(ta, *e)
		}
	}
	add(a1, wire.EventPhaseChanged)
	add(b1, wire.EventPhaseChanged)
	add(a2, wire.EventPhaseChanged)
	add(b1, wire.EventDestroyed)
	must(t, s.DeleteWorkspace(ctx, a1.ID))
	add(a1, wire.EventDestroyed) // after the row: still tenant ta's
	add(a2, wire.EventPhaseChanged)

	ids := func(es []wire.Event) string {
		out := ""
		for _, e := range es {
			out += fmt.Sprintf("%d:%s/%s ", e.ID, e.TenantID, e.WorkspaceID)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		tenant string
		after  uint64
		limit  int
		want   []wire.Event
	}{
		{"tenant ta", "ta", 0, 0, ta},
		{"after its second", "ta", ta[1].ID, 0, ta[2:]},
		{"after another tenant's event", "ta", all[1].ID, 0, ta[1:]},
		{"limit", "ta", 0, 2, ta[:2]},
		{"after and limit", "ta", ta[0].ID, 2, ta[1:3]},
		{"tenant tb", "tb", 0, 0, []wire.Event{all[1], all[3]}},
		{"every tenant", "", 0, 0, all},
		{"after the newest", "ta", all[len(all)-1].ID, 0, nil},
		{"a tenant with none", "nobody", 0, 0, nil},
	} {
		got, err := s.ListTenantEvents(ctx, tc.tenant, tc.after, tc.limit)
		must(t, err)
		if ids(got) != ids(tc.want) {
			t.Errorf("%s: ListTenantEvents(%q, %d, %d) = %s, want %s", tc.name, tc.tenant, tc.after, tc.limit, ids(got), ids(tc.want))
		}
	}
	for tenant, want := range map[string]uint64{"ta": ta[len(ta)-1].ID, "tb": all[3].ID, "": all[len(all)-1].ID, "nobody": 0} {
		if got, err := s.LatestEventID(ctx, tenant); err != nil || got != want {
			t.Errorf("LatestEventID(%q) = %d, %v; want %d", tenant, got, err, want)
		}
	}
}

// testTenantEventsConcurrent appends from many workspaces of one tenant at
// once while a follower reads after the last ID it saw, as the API's stream
// does: it must see every event, each once, in ID order. On PostgreSQL this
// holds only if IDs become visible in order across workspaces.
func testTenantEventsConcurrent(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "tc"}))
	const writers, each = 8, 15
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for range writers {
		w := newWorkspace("t", "p")
		w.TenantID = "tc"
		must(t, s.CreateWorkspace(ctx, w))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := s.AppendEvent(ctx, &wire.Event{WorkspaceID: w.ID, Type: wire.EventPhaseChanged}); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	seen := map[uint64]bool{}
	var after uint64
	finished := false
	for !finished {
		select {
		case <-done:
			finished = true // one more read below catches the rest
		default:
		}
		evs, err := s.ListTenantEvents(ctx, "tc", after, 7)
		must(t, err)
		for _, e := range evs {
			if e.ID <= after || seen[e.ID] {
				t.Fatalf("event %d after %d: out of order or twice", e.ID, after)
			}
			seen[e.ID], after = true, e.ID
		}
		if len(evs) == 7 {
			finished = false // more are waiting
		}
	}
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	stored, err := s.ListTenantEvents(ctx, "tc", 0, 0)
	must(t, err)
	if len(stored) != writers*each {
		t.Fatalf("stored %d events, want %d", len(stored), writers*each)
	}
	for _, e := range stored {
		if !seen[e.ID] {
			t.Errorf("the follower missed event %d", e.ID)
		}
	}
}
