package api

import (
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"

	apiclient "github.com/primerhq/primer/api/client"
)

func TestTypedClientIdentity(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	admin := apiclient.New(h.url, apiclient.WithHTTPClient(h.http()), apiclient.WithToken(h.adminKey))

	tn, err := admin.CreateTenant(ctx, wire.TenantSpec{ID: "team", Quota: wire.Quota{MaxWorkspaces: 2}})
	if err != nil || tn.ID != "team" {
		t.Fatalf("CreateTenant: %+v, %v", tn, err)
	}
	if _, err := admin.UpdateTenant(ctx, "team", wire.TenantSpec{Description: "d", Quota: wire.Quota{MaxPools: 1}}); err != nil {
		t.Fatal(err)
	}
	info, err := admin.GetTenant(ctx, "team")
	if err != nil || info.Description != "d" || info.Quota != (wire.Quota{MaxPools: 1}) || info.Usage != (wire.Usage{}) {
		t.Fatalf("GetTenant: %+v, %v", info, err)
	}

	k, err := admin.CreateAPIKey(ctx, wire.CreateAPIKeyRequest{TenantID: "team", Role: wire.RoleMember, TTL: "1h"})
	if err != nil || k.Key == "" || k.ExpiresAt == nil {
		t.Fatalf("CreateAPIKey: %+v, %v", k, err)
	}
	member := apiclient.New(h.url, apiclient.WithHTTPClient(h.http()), apiclient.WithToken(k.Key))
	ts, err := member.ListTenants(ctx)
	if err != nil || len(ts) != 1 || ts[0].ID != "team" {
		t.Fatalf("member ListTenants: %+v, %v", ts, err)
	}
	if _, err := member.GetTenant(ctx, wire.DefaultTenantID); !errs.Is(err, errs.NotFound) {
		t.Errorf("member GetTenant(default): %v, want NotFound", err)
	}
	if _, err := member.CreateAPIKey(ctx, wire.CreateAPIKeyRequest{Role: wire.RoleAdmin}); !errs.Is(err, errs.Forbidden) {
		t.Errorf("member creates an admin key: %v, want Forbidden", err)
	}
	ks, err := member.ListAPIKeys(ctx, "")
	if err != nil || len(ks) != 1 || ks[0].ID != k.ID {
		t.Fatalf("member ListAPIKeys: %+v, %v", ks, err)
	}
	if got, err := admin.GetAPIKey(ctx, k.ID); err != nil || got.TenantID != "team" {
		t.Fatalf("GetAPIKey: %+v, %v", got, err)
	}
	if _, err := admin.RevokeAPIKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := member.ListTenants(ctx); !errs.Is(err, errs.Unauthenticated) {
		t.Errorf("revoked key: %v, want Unauthenticated", err)
	}
	if err := admin.DeleteTenant(ctx, "team"); err != nil {
		t.Fatal(err)
	}

	es, err := admin.ListAudit(ctx, apiclient.AuditOptions{Limit: 3})
	if err != nil || len(es) != 3 || es[0].Action != "tenants.delete" || es[1].Action != "apikeys.revoke" {
		t.Fatalf("ListAudit: %+v, %v", es, err)
	}
	after, err := admin.ListAudit(ctx, apiclient.AuditOptions{AfterID: es[1].ID})
	if err != nil || len(after) != 1 || after[0].ID != es[0].ID {
		t.Fatalf("ListAudit after: %+v, %v", after, err)
	}
}
