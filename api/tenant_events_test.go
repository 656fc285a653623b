package api

import (
	"context"
	"strconv"
	"testing"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// tenantEventsFixture: tenants alpha and bravo, a workspace of each.
func tenantEventsFixture(t *testing.T) (h *harness, wsA, wsB, keyA, keyB string) {
	h = newHarness(t)
	ctx := context.Background()
	for _, id := range []string{tenantA, tenantB} {
		h.mustTenant(id)
	}
	for _, p := range []struct {
		id     *string
		tenant string
	}{{&wsA, tenantA}, {&wsB, tenantB}} {
		w := &wire.Workspace{ID: models.NewID("ws"), TenantID: p.tenant, TemplateID: wire.DefaultTemplateID,
			ProviderID: wire.LocalProviderID, Backend: wire.BackendLocal, Phase: wire.PhasePending}
		if err := h.store.CreateWorkspace(ctx, w); err != nil {
			t.Fatal(err)
		}
		*p.id = w.ID
	}
	return h, wsA, wsB, h.newKey(tenantA, wire.RoleViewer), h.newKey(tenantB, wire.RoleMember)
}

func TestTenantEventsList(t *testing.T) {
	h, wsA, wsB, keyA, keyB := tenantEventsFixture(t)
	a1 := h.appendEvent(t, wsA, wire.EventProvisioned, `{}`)
	b1 := h.appendEvent(t, wsB, wire.EventProvisioned, `{}`)
	a2 := h.appendEvent(t, wsA, wire.EventPhaseChanged, `{"from":"pending","to":"running","reason":""}`)
	a3 := h.appendEvent(t, wsA, wire.EventDestroyed, `{}`)

	type answer struct {
		Items    []wire.Event `json:"items"`
		LatestID uint64       `json:"latest_id"`
	}
	ids := func(a answer) []uint64 {
		out := []uint64{}
		for _, e := range a.Items {
			out = append(out, e.ID)
		}
		return out
	}
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	for _, tc := range []struct {
		name, key, query string
		header           []string
		want             []uint64
		latest           uint64
	}{
		{"tenant A", keyA, "", nil, []uint64{a1, a2, a3}, a3},
		{"after", keyA, "?after=" + u(a1), nil, []uint64{a2, a3}, a3},
		{"Last-Event-ID wins over after", keyA, "?after=" + u(a3), []string{"Last-Event-ID", u(a2)}, []uint64{a3}, a3},
		{"limit", keyA, "?limit=2", nil, []uint64{a1, a2}, a3},
		{"tenant B sees only its own", keyB, "", nil, []uint64{b1}, b1},
		{"admin sees every tenant", h.adminKey, "", nil, []uint64{a1, b1, a2, a3}, a3},
		{"admin's ?tenant=", h.adminKey, "?tenant=" + tenantB, nil, []uint64{b1}, b1},
	} {
		var got answer
		h.do("GET", "/v1/events"+tc.query, nil, append([]string{"Authorization", "Bearer " + tc.key}, tc.header...)...).
			expect(t, 200).decode(t, &got)
		if g := ids(got); len(g) != len(tc.want) || got.LatestID != tc.latest {
			t.Errorf("%s: ids %v latest %d, want %v latest %d", tc.name, g, got.LatestID, tc.want, tc.latest)
		} else {
			for i := range g {
				if g[i] != tc.want[i] {
					t.Errorf("%s: ids %v, want %v", tc.name, g, tc.want)
					break
				}
			}
		}
	}
	h.do("GET", "/v1/events?after=x", nil).expectError(t, 400, "invalid", "after", "")
	h.do("GET", "/v1/events", nil, "Last-Event-ID", "-1").expectError(t, 400, "invalid", "Last-Event-ID", "")
	for _, bad := range []string{"0", "1001", "two"} {
		h.do("GET", "/v1/events?limit="+bad, nil).expectError(t, 400, "invalid", "limit", "")
	}
}

func TestTenantEventsFollow(t *testing.T) {
	h, wsA, wsB, keyA, _ := tenantEventsFixture(t)
	a1 := h.appendEvent(t, wsA, wire.EventProvisioned, `{}`)
	h.appendEvent(t, wsB, wire.EventProvisioned, `{}`)

	// Stored events first, then appended ones; another tenant's never: each
	// of B's is appended before one of A's, so a leak would come first.
	res, cancel := h.follow(t, "/v1/events", "Accept", "text/event-stream", "Authorization", "Bearer "+keyA)
	ch := sseReader(t, res)
	if m := next(t, ch); m.id != strconv.FormatUint(a1, 10) || m.event != wire.EventProvisioned {
		t.Fatalf("first message = %+v, want event %d", m, a1)
	}
	var a []uint64
	for i := range 3 {
		h.appendEvent(t, wsB, wire.EventPhaseChanged, `{"from":"pending","to":"running","reason":""}`)
		typ := wire.EventPhaseChanged
		if i == 2 {
			typ = wire.EventDestroyed
		}
		a = append(a, h.appendEvent(t, wsA, typ, `{"from":"pending","to":"failed","reason":"gone"}`))
		if m := next(t, ch); m.id != strconv.FormatUint(a[i], 10) || m.event != typ {
			t.Fatalf("message %d = %+v, want event %d %s", i, m, a[i], typ)
		}
	}
	// A workspace.destroyed does not end the tenant's stream.
	a4 := h.appendEvent(t, wsA, wire.EventPhaseChanged, `{}`)
	if m := next(t, ch); m.id != strconv.FormatUint(a4, 10) {
		t.Fatalf("after a destroyed workspace: %+v, want event %d", m, a4)
	}
	cancel()

	// Resuming: Last-Event-ID (a browser reconnecting) and ?after= start
	// after the id given.
	for _, header := range [][]string{{"Last-Event-ID", strconv.FormatUint(a[1], 10)}, nil} {
		path := "/v1/events?follow=true"
		if header == nil {
			path += "&after=" + strconv.FormatUint(a[1], 10)
		}
		res, _ := h.follow(t, path, append([]string{"Authorization", "Bearer " + keyA}, header...)...)
		ch := sseReader(t, res)
		if m := next(t, ch); m.id != strconv.FormatUint(a[2], 10) {
			t.Fatalf("resumed (%v) with %+v, want event %d", header, m, a[2])
		}
	}
}
