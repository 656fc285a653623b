package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// bearer is the header pair of a key, for harness.do.
func bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

// keyIDOf returns the id part of a key.
func keyIDOf(t *testing.T, key string) string {
	t.Helper()
	id, err := models.ParseAPIKey(key)
	if err != nil {
		t.Fatalf("parse key: %v", err)
	}
	return id
}

// mustTenant creates tenant id in the store.
func (h *harness) mustTenant(id string) {
	h.t.Helper()
	if err := h.store.CreateTenant(context.Background(), &wire.Tenant{ID: id}); err != nil {
		h.t.Fatalf("create tenant %s: %v", id, err)
	}
}

func TestAPIKeyLifecycle(t *testing.T) {
	h := newHarness(t)
	h.mustTenant("team")

	// Created: the key comes back once, with its row; never the hash.
	var created struct {
		wire.APIKey
		Key  string `json:"key"`
		Hash string `json:"hash"`
	}
	r := h.do("POST", "/v1/apikeys", map[string]any{"tenant_id": "team", "role": "member", "name": "ci", "ttl": "30d"}).expect(t, 201)
	r.decode(t, &created)
	if created.Key == "" || created.Hash != "" || created.TenantID != "team" || created.Role != wire.RoleMember ||
		created.Name != "ci" || created.CreatedBy != keyIDOf(t, h.adminKey) || keyIDOf(t, created.Key) != created.ID {
		t.Fatalf("created key = %s", r.body)
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", r.header.Get("Cache-Control"))
	}
	if d := time.Until(*created.ExpiresAt); d < 29*24*time.Hour || d > 31*24*time.Hour {
		t.Errorf("expires_at %v is not 30 days away", created.ExpiresAt)
	}
	key := created.Key

	// It works, and acts as its tenant.
	var tenants wire.Items[wire.Tenant]
	h.do("GET", "/v1/tenants", nil, bearer(key)...).expect(t, 200).decode(t, &tenants)
	if len(tenants.Items) != 1 || tenants.Items[0].ID != "team" {
		t.Errorf("member sees tenants %+v, want only team", tenants.Items)
	}
	// Reads after creation never carry the key or a hash.
	for _, path := range []string{"/v1/apikeys/" + created.ID, "/v1/apikeys", "/v1/apikeys?tenant=team"} {
		body := string(h.do("GET", path, nil).expect(t, 200).body)
		if strings.Contains(body, key) || strings.Contains(body, models.HashAPIKey(key)) || strings.Contains(body, `"key"`) ||
			strings.Contains(body, `"hash"`) {
			t.Errorf("GET %s shows key material: %s", path, body)
		}
	}

	// Revoking the key you use is allowed; it stops working at once.
	var revoked wire.APIKey
	h.do("POST", "/v1/apikeys/"+created.ID+"/revoke", nil, bearer(key)...).expect(t, 200).decode(t, &revoked)
	if revoked.RevokedAt == nil {
		t.Fatalf("revoke answered %+v without revoked_at", revoked)
	}
	h.do("GET", "/v1/tenants", nil, bearer(key)...).expectError(t, 401, "unauthenticated", "", "revoked")
	// Revoking again is a no-op that keeps the first time; DELETE revokes too.
	var again wire.APIKey
	h.do("DELETE", "/v1/apikeys/"+created.ID, nil).expect(t, 200).decode(t, &again)
	if !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Errorf("second revoke moved revoked_at from %v to %v", revoked.RevokedAt, again.RevokedAt)
	}
	h.do("DELETE", "/v1/apikeys/key-0000", nil).expectError(t, 404, "not_found", "", "")
}

func TestAPIKeyRejected(t *testing.T) {
	h := newHarness(t)
	good := h.newKey(wire.DefaultTenantID, wire.RoleMember)
	id, _, hash := models.NewAPIKey()
	past := time.Now().Add(-time.Minute)
	if err := h.store.CreateAPIKey(context.Background(), &wire.APIKey{ID: id, TenantID: wire.DefaultTenantID, Role: wire.RoleAdmin, Hash: hash, ExpiresAt: &past}); err != nil {
		t.Fatal(err)
	}
	expired := "pmr." + id + "." + strings.Repeat("0", 64) // wrong secret for an expired key: wrong secret wins
	goodID := keyIDOf(t, good)
	wrong := "pmr." + goodID + "." + strings.Repeat("a", 64)
	unknown := "pmr.key-00000000000000000000." + strings.Repeat("b", 64)

	for _, tc := range []struct {
		name, header, msg string
	}{
		{"no header", "", "missing"},
		{"not bearer", "Basic " + good, "want Bearer"},
		{"empty bearer", "Bearer ", "want Bearer"},
		{"malformed", "Bearer not-a-key", "malformed"},
		{"short secret", "Bearer pmr." + goodID + ".abc", "malformed"},
		{"wrong secret", "Bearer " + wrong, "wrong secret"},
		{"unknown id", "Bearer " + unknown, "unknown"},
		{"expired, wrong secret", "Bearer " + expired, "wrong secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do("GET", "/v1/workspaces", nil, "Authorization", tc.header)
			r.expectError(t, 401, "unauthenticated", "", tc.msg)
			if r.header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if strings.Contains(string(r.body), strings.TrimPrefix(tc.header, "Bearer ")) && tc.header != "" && tc.header != "Bearer " {
				t.Errorf("the error echoes the key: %s", r.body)
			}
		})
	}

	// An expired key with its right secret: expired. (Made through the
	// store: the API refuses a past expiry.)
	expID, expKey, expHash := models.NewAPIKey()
	if err := h.store.CreateAPIKey(context.Background(), &wire.APIKey{ID: expID, TenantID: wire.DefaultTenantID, Role: wire.RoleAdmin, Hash: expHash, ExpiresAt: &past}); err != nil {
		t.Fatal(err)
	}
	h.do("GET", "/v1/workspaces", nil, bearer(expKey)...).expectError(t, 401, "unauthenticated", "", "expired at")
	h.do("GET", "/v1/workspaces", nil, bearer(good)...).expect(t, 200)
}

func TestAPIKeyCreateInput(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name  string
		body  string
		field string
	}{
		{"no role", `{}`, "role"},
		{"bad role", `{"role":"root"}`, "role"},
		{"both expiries", `{"role":"viewer","ttl":"1h","expires_at":"2999-01-01T00:00:00Z"}`, "ttl"},
		{"bad ttl", `{"role":"viewer","ttl":"soon"}`, "ttl"},
		{"negative ttl", `{"role":"viewer","ttl":"-1h"}`, "ttl"},
		{"past expiry", `{"role":"viewer","expires_at":"2001-01-01T00:00:00Z"}`, "expires_at"},
		{"unknown field", `{"role":"viewer","hash":"x"}`, "hash"},
		{"long name", `{"role":"viewer","name":"` + strings.Repeat("n", 201) + `"}`, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.do("POST", "/v1/apikeys", tc.body).expectError(t, 400, "invalid", tc.field, "")
		})
	}
	// An admin's key for a tenant that does not exist: not found.
	h.do("POST", "/v1/apikeys", `{"tenant_id":"nope","role":"viewer"}`).expectError(t, 404, "not_found", "tenant_id", "")
	// The caller's tenant by default, expires_at honoured.
	var k wire.CreatedAPIKey
	h.do("POST", "/v1/apikeys", `{"role":"viewer","expires_at":"2999-01-01T00:00:00Z"}`).expect(t, 201).decode(t, &k)
	if k.TenantID != wire.DefaultTenantID || k.ExpiresAt == nil || k.ExpiresAt.Year() != 2999 {
		t.Errorf("created %+v", k)
	}
}

func TestAPIKeyRoles(t *testing.T) {
	h := newHarness(t)
	h.mustTenant("a")
	h.mustTenant("b")
	member := h.newKey("a", wire.RoleMember)
	viewer := h.newKey("a", wire.RoleViewer)
	adminA := h.newKey("a", wire.RoleAdmin)
	otherB := h.newKey("b", wire.RoleMember)
	bID := keyIDOf(t, otherB)

	for _, tc := range []struct {
		name         string
		key          string
		method, path string
		body         any
		status       int
	}{
		{"viewer cannot create keys", viewer, "POST", "/v1/apikeys", `{"role":"viewer"}`, 403},
		{"viewer cannot revoke", viewer, "POST", "/v1/apikeys/" + keyIDOf(t, viewer) + "/revoke", nil, 403},
		{"member cannot create admin keys", member, "POST", "/v1/apikeys", `{"role":"admin"}`, 403},
		{"member cannot create in another tenant", member, "POST", "/v1/apikeys", `{"role":"viewer","tenant_id":"b"}`, 404},
		{"member creates a viewer key", member, "POST", "/v1/apikeys", `{"role":"viewer"}`, 201},
		{"member creates a member key, tenant named", member, "POST", "/v1/apikeys", `{"role":"member","tenant_id":"a"}`, 201},
		{"member cannot see another tenant's key", member, "GET", "/v1/apikeys/" + bID, nil, 404},
		{"member cannot revoke another tenant's key", member, "POST", "/v1/apikeys/" + bID + "/revoke", nil, 404},
		{"member cannot revoke its tenant's admin key", member, "DELETE", "/v1/apikeys/" + keyIDOf(t, adminA), nil, 403},
		{"member cannot see another tenant", member, "GET", "/v1/tenants/b", nil, 404},
		{"member sees its tenant", member, "GET", "/v1/tenants/a", nil, 200},
		{"member cannot create tenants", member, "POST", "/v1/tenants", `{"id":"c"}`, 403},
		{"member cannot update its tenant", member, "PUT", "/v1/tenants/a", `{"quota":{"max_workspaces":100}}`, 403},
		{"member cannot update another tenant", member, "PUT", "/v1/tenants/b", `{}`, 404},
		{"member cannot delete another tenant", member, "DELETE", "/v1/tenants/b", nil, 404},
		{"viewer reads its tenant", viewer, "GET", "/v1/tenants/a", nil, 200},
		{"viewer cannot see another tenant", viewer, "GET", "/v1/tenants/b", nil, 404},
		{"viewer reads the audit log", viewer, "GET", "/v1/audit", nil, 200},
		{"admin of another tenant sees b", adminA, "GET", "/v1/tenants/b", nil, 200},
		{"admin of another tenant makes b an admin key", adminA, "POST", "/v1/apikeys", `{"role":"admin","tenant_id":"b"}`, 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(tc.method, tc.path, tc.body, bearer(tc.key)...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d; body %s", r.status, tc.status, r.body)
			}
		})
	}

	// Lists: a member sees only its tenant's keys, even asking for another.
	for _, path := range []string{"/v1/apikeys", "/v1/apikeys?tenant=b"} {
		var ks wire.Items[wire.APIKey]
		h.do("GET", path, nil, bearer(member)...).expect(t, 200).decode(t, &ks)
		if len(ks.Items) == 0 {
			t.Fatalf("GET %s: no keys", path)
		}
		for _, k := range ks.Items {
			if k.TenantID != "a" {
				t.Errorf("GET %s as a member of a shows %s of tenant %s", path, k.ID, k.TenantID)
			}
		}
	}
	// An admin sees every tenant's, or one with ?tenant=.
	var all, onlyB wire.Items[wire.APIKey]
	h.do("GET", "/v1/apikeys", nil).expect(t, 200).decode(t, &all)
	h.do("GET", "/v1/apikeys?tenant=b", nil).expect(t, 200).decode(t, &onlyB)
	tenantsOf := func(ks []wire.APIKey) map[string]bool {
		m := map[string]bool{}
		for _, k := range ks {
			m[k.TenantID] = true
		}
		return m
	}
	if got := tenantsOf(all.Items); !got["a"] || !got["b"] || !got[wire.DefaultTenantID] {
		t.Errorf("admin list covers tenants %v", got)
	}
	if got := tenantsOf(onlyB.Items); len(got) != 1 || !got["b"] {
		t.Errorf("admin list ?tenant=b covers tenants %v", got)
	}
	// A member may revoke its own tenant's member keys, itself included.
	h.do("POST", "/v1/apikeys/"+keyIDOf(t, member)+"/revoke", nil, bearer(member)...).expect(t, 200)
}

func TestAPIKeyLastUsed(t *testing.T) {
	h := newHarness(t)
	key := h.newKey(wire.DefaultTenantID, wire.RoleViewer)
	id := keyIDOf(t, key)
	ctx := context.Background()
	k, err := h.store.GetAPIKey(ctx, id)
	if err != nil || k.LastUsedAt != nil {
		t.Fatalf("fresh key: %+v, %v", k, err)
	}
	before := time.Now().Add(-time.Second)
	h.do("GET", "/v1/workspaces", nil, bearer(key)...).expect(t, 200)
	h.srv.bg.Wait()
	k, err = h.store.GetAPIKey(ctx, id)
	if err != nil || k.LastUsedAt == nil || k.LastUsedAt.Before(before) {
		t.Fatalf("after a request: last_used_at %v, %v", k.LastUsedAt, err)
	}
	first := *k.LastUsedAt
	// Within a minute, requests do not write it again.
	for range 5 {
		h.do("GET", "/v1/workspaces", nil, bearer(key)...).expect(t, 200)
	}
	h.srv.bg.Wait()
	k, _ = h.store.GetAPIKey(ctx, id)
	if !k.LastUsedAt.Equal(first) {
		t.Errorf("last_used_at moved from %v to %v within a minute", first, k.LastUsedAt)
	}
	// Older than a minute: the next request moves it.
	old := time.Now().Add(-2 * time.Minute)
	if err := h.store.TouchAPIKey(ctx, id, old); err != nil {
		t.Fatal(err)
	}
	h.srv.keyTouched.Store(id, old)
	h.do("GET", "/v1/workspaces", nil, bearer(key)...).expect(t, 200)
	h.srv.bg.Wait()
	k, _ = h.store.GetAPIKey(ctx, id)
	if !k.LastUsedAt.After(old.Add(time.Minute)) {
		t.Errorf("last_used_at %v not moved past %v", k.LastUsedAt, old)
	}
	var shown map[string]any
	h.do("GET", "/v1/apikeys/"+id, nil).expect(t, 200).decode(t, &shown)
	if _, ok := shown["last_used_at"]; !ok {
		b, _ := json.Marshal(shown)
		t.Errorf("GET apikey has no last_used_at: %s", b)
	}
}
