package models

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// identityCases are the tenant, api key and audit behaviours of the Store,
// run on every dialect like storeCases.
var identityCases = []storeCase{
	{"tenants list and update", testTenantsUpdate},
	{"tenant delete", testTenantDelete},
	{"api keys list, revoke, touch", testAPIKeys},
	{"audit append and list", testAudit},
	{"api key chains", testAPIKeyChain},
	{"api key parents migration", testKeyParentsMigration},
	{"tenant delete removes its history", testTenantDeleteHistory},
	{"audit sanitises and finishes", testAuditSanitise},
	{"console sessions", testConsoleSessions},
}

func TestIdentityStore(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			for _, tc := range identityCases {
				t.Run(tc.name, func(t *testing.T) {
					tc.run(t, t.Context(), d.open(t))
				})
			}
		})
	}
}

func testTenantsUpdate(t *testing.T, ctx context.Context, s *Store) {
	for _, id := range []string{"zeta", "alpha"} {
		must(t, s.CreateTenant(ctx, &wire.Tenant{ID: id}))
	}
	list, err := s.ListTenants(ctx)
	must(t, err)
	if ids := idsOf(list, func(t wire.Tenant) string { return t.ID }); !slices.Equal(ids, []string{"alpha", "zeta"}) {
		t.Errorf("ListTenants ids = %v, want [alpha zeta]", ids)
	}

	q := wire.Quota{MaxWorkspaces: 3, MaxCPUCores: 2.5, MaxMemoryBytes: 1 << 30, MaxPools: 1}
	got, err := s.UpdateTenant(ctx, &wire.Tenant{ID: "alpha", Description: "team a", Quota: q})
	must(t, err)
	if got.Description != "team a" || got.Quota != q {
		t.Errorf("UpdateTenant = %+v, want description %q quota %+v", got, "team a", q)
	}
	// A full replacement: zero fields clear the limits.
	got, err = s.UpdateTenant(ctx, &wire.Tenant{ID: "alpha", Quota: wire.Quota{MaxPools: 4}})
	must(t, err)
	if got.Description != "" || got.Quota != (wire.Quota{MaxPools: 4}) {
		t.Errorf("UpdateTenant (replace) = %+v", got)
	}
	_, err = s.UpdateTenant(ctx, &wire.Tenant{ID: "nope"})
	wantErr(t, err, errs.NotFound, "tenant nope: not found")
	_, err = s.UpdateTenant(ctx, &wire.Tenant{ID: "alpha", Quota: wire.Quota{MaxCPUCores: -1}})
	wantField(t, err, "quota.max_cpu_cores")
	got, err = s.GetTenant(ctx, "alpha")
	must(t, err)
	if got.Quota != (wire.Quota{MaxPools: 4}) {
		t.Errorf("a refused update changed the quota: %+v", got.Quota)
	}
}

func testTenantDelete(t *testing.T, ctx context.Context, s *Store) {
	wantErr(t, s.DeleteTenant(ctx, wire.DefaultTenantID), errs.Forbidden, "default tenant cannot be deleted")
	wantErr(t, s.DeleteTenant(ctx, "nope"), errs.NotFound, "tenant nope: not found")

	// An empty tenant goes, and is gone.
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "empty"}))
	must(t, s.DeleteTenant(ctx, "empty"))
	_, err := s.GetTenant(ctx, "empty")
	wantErr(t, err, errs.NotFound, "")

	// A provider row keeps it; so does an active key, but not a revoked
	// or an expired one.
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "team"}))
	p := &wire.Provider{ID: "team-prov", Provider: wire.BackendWorktree, TenantID: "team", Config: json.RawMessage(`{"kind":"worktree","root_path":"/srv/t"}`)}
	must(t, s.CreateProvider(ctx, p))
	active := newTestKey(t, ctx, s, "team", wire.RoleMember, nil)
	past := time.Now().Add(-time.Hour)
	newTestKey(t, ctx, s, "team", wire.RoleViewer, &past)
	revoked := newTestKey(t, ctx, s, "team", wire.RoleViewer, nil)
	_, _, err = s.RevokeAPIKey(ctx, revoked)
	must(t, err)

	wantErr(t, s.DeleteTenant(ctx, "team"), errs.Conflict, "tenant team: still owns 1 providers, 1 active api keys")
	must(t, s.DeleteProvider(ctx, "team-prov"))
	wantErr(t, s.DeleteTenant(ctx, "team"), errs.Conflict, "1 active api keys")
	_, _, err = s.RevokeAPIKey(ctx, active)
	must(t, err)
	must(t, s.DeleteTenant(ctx, "team"))
	if _, err := s.GetTenant(ctx, "team"); !errs.Is(err, errs.NotFound) {
		t.Errorf("GetTenant after delete: %v, want NotFound", err)
	}
}

// newTestKey stores a key of tenant and returns its id.
func newTestKey(t *testing.T, ctx context.Context, s *Store, tenant, role string, expires *time.Time) string {
	t.Helper()
	id, _, hash := NewAPIKey()
	must(t, s.CreateAPIKey(ctx, &wire.APIKey{ID: id, TenantID: tenant, Role: role, Hash: hash, ExpiresAt: expires}))
	return id
}

func testAPIKeys(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "a"}))
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "b"}))
	a1 := newTestKey(t, ctx, s, "a", wire.RoleAdmin, nil)
	b1 := newTestKey(t, ctx, s, "b", wire.RoleMember, nil)
	a2 := newTestKey(t, ctx, s, "a", wire.RoleViewer, nil)

	for _, tc := range []struct {
		tenant string
		want   []string
	}{
		{"", []string{a1, b1, a2}},
		{"a", []string{a1, a2}},
		{"b", []string{b1}},
		{"c", []string{}},
	} {
		ks, err := s.ListAPIKeys(ctx, tc.tenant)
		must(t, err)
		got := idsOf(ks, func(k wire.APIKey) string { return k.ID })
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("ListAPIKeys(%q) = %v, want %v", tc.tenant, got, want)
		}
	}

	k, _, err := s.RevokeAPIKey(ctx, a2)
	must(t, err)
	if k.RevokedAt == nil {
		t.Fatalf("RevokeAPIKey left revoked_at empty: %+v", k)
	}
	first := *k.RevokedAt
	again, _, err := s.RevokeAPIKey(ctx, a2)
	must(t, err)
	if again.RevokedAt == nil || !again.RevokedAt.Equal(first) {
		t.Errorf("second revoke moved revoked_at from %v to %v", first, again.RevokedAt)
	}
	_, _, err = s.RevokeAPIKey(ctx, "key-nope")
	wantErr(t, err, errs.NotFound, "api key key-nope: not found")

	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	must(t, s.TouchAPIKey(ctx, a1, at))
	must(t, s.TouchAPIKey(ctx, "key-nope", at))
	k, err = s.GetAPIKey(ctx, a1)
	must(t, err)
	if k.LastUsedAt == nil || !k.LastUsedAt.Equal(at) {
		t.Errorf("last_used_at = %v, want %v", k.LastUsedAt, at)
	}
	if other, _ := s.GetAPIKey(ctx, b1); other.LastUsedAt != nil {
		t.Errorf("touching %s changed %s: %v", a1, b1, other.LastUsedAt)
	}
}

func testAudit(t *testing.T, ctx context.Context, s *Store) {
	var ids []uint64
	for i, tenant := range []string{"a", "b", "a", "a", "b"} {
		e := &wire.AuditEntry{KeyID: "key-1", TenantID: tenant, Action: "workspaces.create", Resource: "workspaces/ws-" + string(rune('0'+i)),
			Status: 201, Result: "ok", Address: "10.0.0.1"}
		must(t, s.AppendAudit(ctx, e))
		if e.ID == 0 || e.CreatedAt.IsZero() {
			t.Fatalf("AppendAudit left id or time zero: %+v", e)
		}
		ids = append(ids, e.ID)
	}
	// A resource longer than its column is cut, not refused.
	long := &wire.AuditEntry{TenantID: "c", Action: "workspaces.files.update", Resource: "workspaces/ws-x/files/" + strings.Repeat("é", 400),
		Status: 200, Result: "ok"}
	must(t, s.AppendAudit(ctx, long))
	if len(long.Resource) > 300 {
		t.Errorf("resource kept %d bytes, want at most 300", len(long.Resource))
	}

	for _, tc := range []struct {
		name string
		f    AuditFilter
		want []uint64
	}{
		{"newest first", AuditFilter{TenantID: "a"}, []uint64{ids[3], ids[2], ids[0]}},
		{"limit", AuditFilter{Limit: 2}, []uint64{long.ID, ids[4]}},
		{"after, oldest first", AuditFilter{AfterID: ids[1]}, []uint64{ids[2], ids[3], ids[4], long.ID}},
		{"after in a tenant", AuditFilter{TenantID: "b", AfterID: ids[1]}, []uint64{ids[4]}},
		{"after and limit", AuditFilter{AfterID: ids[0], Limit: 1}, []uint64{ids[1]}},
		{"unknown tenant", AuditFilter{TenantID: "zz"}, []uint64{}},
	} {
		es, err := s.ListAudit(ctx, tc.f)
		must(t, err)
		got := []uint64{}
		for _, e := range es {
			got = append(got, e.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: ListAudit(%+v) ids = %v, want %v", tc.name, tc.f, got, tc.want)
		}
	}
	es, err := s.ListAudit(ctx, AuditFilter{TenantID: "b", Limit: 1})
	must(t, err)
	if e := es[0]; e.KeyID != "key-1" || e.Action != "workspaces.create" || e.Resource != "workspaces/ws-4" ||
		e.Status != 201 || e.Result != "ok" || e.Address != "10.0.0.1" {
		t.Errorf("stored entry = %+v", e)
	}
}
