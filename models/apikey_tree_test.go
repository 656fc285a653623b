package models

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// childKey stores a key of tenant minted under parent and returns it.
func childKey(t *testing.T, ctx context.Context, s *Store, tenant, role, parent string, expires *time.Time) *wire.APIKey {
	t.Helper()
	id, _, hash := NewAPIKey()
	k := &wire.APIKey{ID: id, TenantID: tenant, Role: role, Hash: hash, CreatedBy: parent, ParentID: parent, ExpiresAt: expires}
	must(t, s.CreateAPIKey(ctx, k))
	return k
}

// chainErr is ChainWorks of key id's chain now.
func chainErr(t *testing.T, ctx context.Context, s *Store, id string) error {
	t.Helper()
	chain, err := s.APIKeyChain(ctx, id)
	must(t, err)
	if chain[0].ID != id {
		t.Fatalf("APIKeyChain(%s) starts at %s", id, chain[0].ID)
	}
	return ChainWorks(chain, time.Now())
}

func testAPIKeyChain(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "team"}))
	root := childKey(t, ctx, s, "team", wire.RoleMember, "", nil)
	a := childKey(t, ctx, s, "team", wire.RoleMember, root.ID, nil)
	b := childKey(t, ctx, s, "team", wire.RoleMember, a.ID, nil)
	c := childKey(t, ctx, s, "team", wire.RoleViewer, b.ID, nil)
	sibling := childKey(t, ctx, s, "team", wire.RoleMember, root.ID, nil)

	chain, err := s.APIKeyChain(ctx, c.ID)
	must(t, err)
	if got := idsOf(chain, func(k wire.APIKey) string { return k.ID }); !slices.Equal(got, []string{c.ID, b.ID, a.ID, root.ID}) {
		t.Fatalf("APIKeyChain(c) = %v", got)
	}
	_, err = s.APIKeyChain(ctx, "key-nope")
	wantErr(t, err, errs.NotFound, "")
	must(t, chainErr(t, ctx, s, c.ID))

	// Revoking a revokes its subtree (b and c), not its parent or sibling.
	k, below, err := s.RevokeAPIKey(ctx, a.ID)
	must(t, err)
	if k.RevokedAt == nil || below != 2 {
		t.Fatalf("RevokeAPIKey(a) = %+v, %d below; want revoked, 2 below", k, below)
	}
	for _, tc := range []struct {
		id, want string
	}{
		{a.ID, "revoked"}, {b.ID, "revoked"}, {c.ID, "revoked"}, {root.ID, ""}, {sibling.ID, ""},
	} {
		err := chainErr(t, ctx, s, tc.id)
		if tc.want == "" {
			must(t, err)
			continue
		}
		wantErr(t, err, errs.Unauthenticated, tc.want)
	}
	// A revoked key mints nothing.
	id, _, hash := NewAPIKey()
	err = s.CreateAPIKey(ctx, &wire.APIKey{ID: id, TenantID: "team", Role: wire.RoleMember, Hash: hash, ParentID: b.ID})
	wantErr(t, err, errs.Forbidden, "revoked")

	// A child of an expiring key: none asked, it takes the parent's
	// expiry; a later one is refused; an earlier one is kept.
	soon := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	exp := childKey(t, ctx, s, "team", wire.RoleMember, root.ID, &soon)
	inherit := childKey(t, ctx, s, "team", wire.RoleMember, exp.ID, nil)
	if inherit.ExpiresAt == nil || !inherit.ExpiresAt.Equal(soon) {
		t.Errorf("child of a key expiring %v expires %v, want the same", soon, inherit.ExpiresAt)
	}
	later := soon.Add(time.Minute)
	id, _, hash = NewAPIKey()
	err = s.CreateAPIKey(ctx, &wire.APIKey{ID: id, TenantID: "team", Role: wire.RoleMember, Hash: hash, ParentID: exp.ID, ExpiresAt: &later})
	wantErr(t, err, errs.Invalid, "a key never outlives its parent")
	if errs.FieldOf(err) != "expires_at" {
		t.Errorf("later expiry: field %q, want expires_at", errs.FieldOf(err))
	}
	earlier := soon.Add(-time.Minute)
	if k := childKey(t, ctx, s, "team", wire.RoleMember, exp.ID, &earlier); !k.ExpiresAt.Equal(earlier) {
		t.Errorf("earlier expiry became %v", k.ExpiresAt)
	}

	// An ancestor that expired stops the chain even when the child's own
	// row says it works (a row made before expiries were bounded).
	past := time.Now().Add(-time.Minute)
	must(t, s.w.Model(&wire.APIKey{}).Where("id = ?", exp.ID).Update("expires_at", storedTime(past)).Error)
	wantErr(t, chainErr(t, ctx, s, inherit.ID), errs.Unauthenticated, "expired at")
	wantErr(t, chainErr(t, ctx, s, inherit.ID), errs.Unauthenticated, exp.ID)

	// A missing ancestor row refuses the key too.
	orphan := childKey(t, ctx, s, "team", wire.RoleMember, root.ID, nil)
	must(t, s.w.Model(&wire.APIKey{}).Where("id = ?", orphan.ID).Update("parent_id", "key-gone").Error)
	wantErr(t, chainErr(t, ctx, s, orphan.ID), errs.Unauthenticated, "key-gone, which is unknown")

	// Depth is bounded.
	parent := root.ID
	for range wire.MaxKeyDepth - 1 {
		parent = childKey(t, ctx, s, "team", wire.RoleMember, parent, nil).ID
	}
	id, _, hash = NewAPIKey()
	err = s.CreateAPIKey(ctx, &wire.APIKey{ID: id, TenantID: "team", Role: wire.RoleMember, Hash: hash, ParentID: parent})
	wantErr(t, err, errs.Forbidden, "may not mint another")
}

func TestKeyTree(t *testing.T) {
	k := func(id, parent string) wire.APIKey { return wire.APIKey{ID: id, ParentID: parent} }
	for _, tc := range []struct {
		name string
		in   []wire.APIKey
		want []string // id:depth
	}{
		{"empty", nil, []string{}},
		{"flat", []wire.APIKey{k("a", ""), k("b", "")}, []string{"a:0", "b:0"}},
		{"nested", []wire.APIKey{k("r", ""), k("a", "r"), k("b", "r"), k("c", "a")}, []string{"r:0", "a:1", "c:2", "b:1"}},
		{"parent elsewhere", []wire.APIKey{k("a", "admin"), k("b", "a")}, []string{"a:0", "b:1"}},
		{"cycle", []wire.APIKey{k("a", "b"), k("b", "a")}, []string{"a:0", "b:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := []string{}
			for _, n := range KeyTree(tc.in) {
				got = append(got, n.ID+":"+string(rune('0'+n.Depth)))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("KeyTree = %v, want %v", got, tc.want)
			}
		})
	}
}

func testKeyParentsMigration(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "team"}))
	admin := childKey(t, ctx, s, "team", wire.RoleAdmin, "", nil)
	soon := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	member := childKey(t, ctx, s, "team", wire.RoleMember, "", &soon)
	// Rows as an older Primer wrote them: created_by only.
	legacy := func(role, by string) string {
		id, _, hash := NewAPIKey()
		must(t, s.w.Create(&wire.APIKey{ID: id, TenantID: "team", Role: role, Hash: hash, CreatedBy: by}).Error)
		return id
	}
	byAdmin := legacy(wire.RoleMember, admin.ID)
	byMember := legacy(wire.RoleMember, member.ID)
	grandchild := legacy(wire.RoleViewer, byMember)
	must(t, s.w.Transaction(migrateKeyParents))
	must(t, s.w.Transaction(migrateKeyParents)) // idempotent

	for _, tc := range []struct {
		id, parent string
		expires    *time.Time
	}{
		{byAdmin, "", nil}, {byMember, member.ID, &soon}, {grandchild, byMember, &soon},
	} {
		k, err := s.GetAPIKey(ctx, tc.id)
		must(t, err)
		if k.ParentID != tc.parent || !reflect.DeepEqual(k.ExpiresAt == nil, tc.expires == nil) ||
			(k.ExpiresAt != nil && !k.ExpiresAt.Equal(*tc.expires)) {
			t.Errorf("key %s after migration: parent %q expires %v; want %q, %v", tc.id, k.ParentID, k.ExpiresAt, tc.parent, tc.expires)
		}
	}
	// Revoking the member now takes its legacy children with it.
	_, below, err := s.RevokeAPIKey(ctx, member.ID)
	must(t, err)
	if below != 2 {
		t.Errorf("revoke member: %d below, want 2", below)
	}
}

// TestTenantOwnedRowsAllRuled finds every model with a TenantID column
// by reflection: each must have a rule in tenantOwned (refuse, remove or
// keep on tenant delete), so a new tenant-owned model without one fails
// here instead of passing to the next tenant with the same id.
func TestTenantOwnedRowsAllRuled(t *testing.T) {
	ruled := map[reflect.Type]tenantRows{}
	for _, o := range tenantOwned {
		ruled[reflect.TypeOf(o.model)] = o
		if o.keep && (o.remove || o.block != "") {
			t.Errorf("%s: kept rows neither refuse nor go", o.name)
		}
	}
	for _, m := range allModels {
		typ := reflect.TypeOf(m)
		if _, ok := typ.Elem().FieldByName("TenantID"); !ok || typ == reflect.TypeOf(&wire.Tenant{}) {
			continue
		}
		if _, ok := ruled[typ]; !ok {
			t.Errorf("%s has a TenantID but no rule in tenantOwned: say whether a tenant's delete refuses, removes or keeps it", typ.Elem().Name())
		}
	}
}

func testTenantDeleteHistory(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "team"}))
	must(t, s.CreateLLMProvider(ctx, &wire.LLMProvider{ID: "llm", TenantID: "team", Kind: "openai", BaseURL: "https://api.example"}))
	wantErr(t, s.DeleteTenant(ctx, "team"), errs.Conflict, "1 llm providers")
	must(t, s.CreateAgent(ctx, &wire.Agent{ID: "agent", TenantID: "team", Model: wire.AgentModel{ProviderID: "llm", ModelName: "m"}}))
	wantErr(t, s.DeleteTenant(ctx, "team"), errs.Conflict, "1 agents")
	must(t, s.DeleteAgent(ctx, "agent"))
	must(t, s.DeleteLLMProvider(ctx, "llm"))

	// History no route deletes: an event, an ended session with its run
	// and transcript, a revoked key, an audit entry.
	must(t, s.AppendEvent(ctx, &wire.Event{TenantID: "team", WorkspaceID: "ws-gone", Type: "workspace.destroyed", Data: json.RawMessage(`{}`)}))
	ses := &wire.Session{ID: NewID("ses"), TenantID: "team", WorkspaceID: "ws-gone", Status: "open"}
	must(t, s.w.Create(ses).Error)
	must(t, s.w.Create(&wire.SessionRun{SessionID: ses.ID, TenantID: "team", AgentID: "agent", Status: "running"}).Error)
	must(t, s.w.Create(&wire.TranscriptEntry{SessionID: ses.ID, Seq: 1, Role: wire.RoleUser, Content: "hi"}).Error)
	wantErr(t, s.DeleteTenant(ctx, "team"), errs.Conflict, "1 running session runs, 1 open sessions")
	must(t, s.w.Model(&wire.Session{}).Where("id = ?", ses.ID).Update("status", "ended").Error)
	must(t, s.w.Model(&wire.SessionRun{}).Where("session_id = ?", ses.ID).Update("status", "ended").Error)
	key := childKey(t, ctx, s, "team", wire.RoleMember, "", nil)
	_, _, err := s.RevokeAPIKey(ctx, key.ID)
	must(t, err)
	must(t, s.AppendAudit(ctx, &wire.AuditEntry{TenantID: "team", Action: "workspaces.create", Status: 201, Result: "ok"}))
	must(t, s.DeleteTenant(ctx, "team"))

	// The same id again starts empty; the audit log keeps the old entry.
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "team"}))
	for _, o := range append(tenantOwned, tenantRows{model: &wire.TranscriptEntry{}, name: "transcript entries"}) {
		var n int64
		q := s.r.Model(o.model)
		if _, ok := reflect.TypeOf(o.model).Elem().FieldByName("TenantID"); ok {
			q = q.Where("tenant_id = ?", "team")
		}
		must(t, q.Count(&n).Error)
		if want := map[bool]int64{true: 1, false: 0}[o.keep]; n != want {
			t.Errorf("after delete and create: %d %s of tenant team, want %d", n, o.name, want)
		}
	}
}

func testAuditSanitise(t *testing.T, ctx context.Context, s *Store) {
	// PostgreSQL refuses invalid UTF-8 and NUL in text: before SanitizeAudit
	// this entry was lost there.
	e := &wire.AuditEntry{KeyID: "key-1", TenantID: "a", Action: "workspaces.files.update",
		Resource: "workspaces/ws-1/files/bad\xff\xfe\x00name%.txt", Status: 0, Result: wire.AuditPending, Address: "10.0.0.1\x00"}
	must(t, s.AppendAudit(ctx, e))
	must(t, s.FinishAudit(ctx, e.ID, 200, "ok", "workspaces/ws-1/files/\x00\xc3"))
	es, err := s.ListAudit(ctx, AuditFilter{TenantID: "a"})
	must(t, err)
	if len(es) != 1 {
		t.Fatalf("ListAudit = %d entries, want 1", len(es))
	}
	got := es[0]
	if got.Resource != "workspaces/ws-1/files/%00%C3" || got.Status != 200 || got.Result != "ok" || got.Address != "10.0.0.1%00" {
		t.Errorf("stored entry = %+v", got)
	}
	// Since leaves out older entries.
	es, err = s.ListAudit(ctx, AuditFilter{TenantID: "a", Since: time.Now().Add(time.Minute)})
	must(t, err)
	if len(es) != 0 {
		t.Errorf("ListAudit since a minute from now = %v", es)
	}
}

func TestSanitizeAudit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"workspaces/ws-1", 300, "workspaces/ws-1"},
		{"files/é", 300, "files/é"},
		{"a\xffb", 300, "a%FFb"},
		{"a\x00b\nc\x7f", 300, "a%00b%0Ac%7F"},
		{"100%", 300, "100%25"},
		{"\u0085", 300, "%C2%85"}, // a C1 control: both its bytes
		{"abcdef", 4, "abcd"},
		{"ab\xff", 4, "ab"}, // an escape is never split
		{"aé", 2, "a"},      // nor a character
		{strings.Repeat("é", 200), 300, strings.Repeat("é", 150)},
	} {
		if got := SanitizeAudit(tc.in, tc.n); got != tc.want {
			t.Errorf("SanitizeAudit(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
