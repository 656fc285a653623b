package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// keyRow is an API key as the key routes answer it: the row, and the
// fields of a creation (key), a tree listing (depth) and a revoke
// (revoked_below). ParentID is spelled out so the test compiles against
// a Primer without it (and fails there).
type keyRow struct {
	wire.APIKey
	ParentID     string `json:"parent_id"`
	Key          string `json:"key"`
	Depth        int    `json:"depth"`
	RevokedBelow int    `json:"revoked_below"`
}

// keysAnswer is a response of keysCall: its status and body.
type keysAnswer struct {
	status int
	body   []byte
}

// keysCall sends a JSON body (or none) with key and returns the answer,
// whatever its status.
func keysCall(t *testing.T, base, key, method, path string, body any) keysAnswer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(mustJSON(t, body))
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return keysAnswer{resp.StatusCode, data}
}

// want fails the test unless the answer has status and its body holds
// every one of msgs.
func (a keysAnswer) want(t *testing.T, what string, status int, msgs ...string) keysAnswer {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, a.status, status, a.body)
	}
	for _, m := range msgs {
		if !strings.Contains(string(a.body), m) {
			t.Fatalf("%s: answer %s does not say %q", what, a.body, m)
		}
	}
	return a
}

// decode decodes the answer's JSON into v.
func (a keysAnswer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

// TestAttackKeyOutlivesParent is issue 21's hole 9: a member key minted
// member keys that kept working after it was revoked or expired, with no
// expiry of their own. Now a key minted by a key never outlives it: the
// member's child and grandchild are refused (401) on a real route the
// moment it is revoked, and a write they try leaves nothing; a child of an
// expiring key may not ask for a later expiry and stops with its parent;
// an admin lists a tenant's key tree and revokes a subtree. The other
// ways a key could grow its power are refused too: a viewer minting, a
// member minting an admin key, a root key or another tenant's key, a name
// with terminal escapes.
func TestAttackKeyOutlivesParent(t *testing.T) {
	p := startPrimer(t)
	base, admin := p.srv.URL(), p.key
	keysCall(t, base, admin, "POST", "/v1/tenants", map[string]any{"id": "acme"}).want(t, "create tenant", 201)
	keysCall(t, base, admin, "POST", "/v1/tenants", map[string]any{"id": "other"}).want(t, "create tenant", 201)
	mint := func(by string, body map[string]any) keyRow {
		t.Helper()
		var k keyRow
		keysCall(t, base, by, "POST", "/v1/apikeys", body).want(t, "mint", 201).decode(t, &k)
		return k
	}
	a := mint(admin, map[string]any{"tenant_id": "acme", "role": "member", "name": "alice"})
	b := mint(a.Key, map[string]any{"role": "member", "name": "alice's ci"})
	c := mint(b.Key, map[string]any{"role": "viewer", "name": "alice's dashboard"})
	if b.ParentID != a.ID || c.ParentID != b.ID || b.ExpiresAt != nil {
		t.Errorf("minted: b %+v, c %+v; want parents %s and %s, no expiry", b.APIKey, c.APIKey, a.ID, b.ID)
	}

	// The weaker ways to mint are refused, and mint nothing.
	keysCall(t, base, c.Key, "POST", "/v1/apikeys", map[string]any{"role": "viewer"}).want(t, "viewer mints", 403, "role viewer is read only")
	keysCall(t, base, a.Key, "POST", "/v1/apikeys", map[string]any{"role": "admin"}).want(t, "member mints admin", 403, "only an admin key may create one")
	keysCall(t, base, a.Key, "POST", "/v1/apikeys", map[string]any{"role": "member", "root": true}).want(t, "member mints a root", 403, "only an admin key may create a key that outlives it")
	keysCall(t, base, a.Key, "POST", "/v1/apikeys", map[string]any{"role": "member", "tenant_id": "other"}).want(t, "member mints for another tenant", 404, "tenant other: not found")
	keysCall(t, base, a.Key, "POST", "/v1/apikeys", map[string]any{"role": "member", "name": "ok\x1b[2J\x1b[31mroot"}).want(t, "escape in a name", 400, "control and formatting characters")
	var listed struct{ Items []wire.APIKey }
	keysCall(t, base, admin, "GET", "/v1/apikeys?tenant=acme", nil).want(t, "list", 200).decode(t, &listed)
	if len(listed.Items) != 3 {
		t.Fatalf("tenant acme has %d keys after the refused mints, want 3: %+v", len(listed.Items), listed.Items)
	}

	// The admin sees the tree.
	var tree struct{ Items []keyRow }
	keysCall(t, base, admin, "GET", "/v1/apikeys?tenant=acme&tree=1", nil).want(t, "tree", 200).decode(t, &tree)
	var got []string
	for _, n := range tree.Items {
		got = append(got, strings.Repeat(">", n.Depth)+n.ID)
	}
	if want := []string{a.ID, ">" + b.ID, ">>" + c.ID}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("key tree = %v, want %v", got, want)
	}

	// Revoking a: b and c stop working at once, and their writes do
	// nothing.
	keysCall(t, base, b.Key, "GET", "/v1/workspaces", nil).want(t, "b before", 200)
	keysCall(t, base, c.Key, "GET", "/v1/workspaces", nil).want(t, "c before", 200)
	var revoked keyRow
	keysCall(t, base, a.Key, "DELETE", "/v1/apikeys/"+a.ID, nil).want(t, "revoke a", 200).decode(t, &revoked)
	if revoked.RevokedAt == nil || revoked.RevokedBelow != 2 {
		t.Errorf("revoke a = %+v, want revoked with 2 below", revoked)
	}
	keysCall(t, base, b.Key, "GET", "/v1/workspaces", nil).want(t, "b after", 401, "api key "+b.ID+": revoked")
	keysCall(t, base, c.Key, "GET", "/v1/workspaces", nil).want(t, "c after", 401, "api key "+c.ID+": revoked")
	keysCall(t, base, b.Key, "POST", "/v1/apikeys", map[string]any{"role": "member"}).want(t, "b mints after", 401, "revoked")
	keysCall(t, base, b.Key, "POST", "/v1/templates", map[string]any{
		"id": "after-revoke", "provider_id": wire.LocalProviderID, "backend": map[string]any{"kind": "local"},
	}).want(t, "b writes after", 401, "revoked")
	keysCall(t, base, admin, "GET", "/v1/templates/after-revoke", nil).want(t, "template of a revoked key", 404)
	keysCall(t, base, admin, "GET", "/v1/apikeys?tenant=acme", nil).want(t, "list", 200).decode(t, &listed)
	if len(listed.Items) != 3 {
		t.Errorf("tenant acme has %d keys after the revoked ones tried to mint, want 3", len(listed.Items))
	}
	for _, k := range listed.Items {
		if k.RevokedAt == nil {
			t.Errorf("key %s still shows as not revoked after its ancestor was", k.ID)
		}
	}

	// An expiring parent: a later expiry is refused, none takes the
	// parent's, and the child stops with it.
	e := mint(admin, map[string]any{"tenant_id": "acme", "role": "member", "ttl": "4s"})
	keysCall(t, base, e.Key, "POST", "/v1/apikeys", map[string]any{"role": "member", "ttl": "720h"}).
		want(t, "later expiry", 400, "a key never outlives its parent", `"field":"expires_at"`)
	f := mint(e.Key, map[string]any{"role": "member"})
	if f.ExpiresAt == nil || !f.ExpiresAt.Equal(*e.ExpiresAt) {
		t.Fatalf("child of a key expiring %v expires %v, want the same", e.ExpiresAt, f.ExpiresAt)
	}
	keysCall(t, base, f.Key, "GET", "/v1/workspaces", nil).want(t, "child before expiry", 200)
	eventually(t, 30*time.Second, "the expiring parent to stop working", func() bool {
		return keysCall(t, base, e.Key, "GET", "/v1/workspaces", nil).status == 401
	})
	keysCall(t, base, f.Key, "GET", "/v1/workspaces", nil).want(t, "child after the parent expired", 401, "expired at")

	// An admin revokes a subtree: the key and everything under it, not its
	// siblings.
	m := mint(admin, map[string]any{"tenant_id": "acme", "role": "member"})
	m1 := mint(m.Key, map[string]any{"role": "member"})
	m2 := mint(m1.Key, map[string]any{"role": "viewer"})
	sibling := mint(admin, map[string]any{"tenant_id": "acme", "role": "member"})
	keysCall(t, base, admin, "DELETE", "/v1/apikeys/"+m1.ID, nil).want(t, "revoke subtree", 200, `"revoked_below":1`)
	keysCall(t, base, m.Key, "GET", "/v1/workspaces", nil).want(t, "subtree's parent", 200)
	keysCall(t, base, sibling.Key, "GET", "/v1/workspaces", nil).want(t, "sibling", 200)
	keysCall(t, base, m1.Key, "GET", "/v1/workspaces", nil).want(t, "subtree root", 401, "revoked")
	keysCall(t, base, m2.Key, "GET", "/v1/workspaces", nil).want(t, "subtree leaf", 401, "revoked")
}

// TestAttackTenantDeleteLeftovers is issue 21's hole 13: a deleted
// tenant's model providers, agents and events passed to a new tenant made
// with the same id. Now the delete refuses (409, naming them) while the
// tenant owns LLM providers or agents, and removes its history (events,
// ended sessions, revoked keys), so the new tenant sees none of it.
func TestAttackTenantDeleteLeftovers(t *testing.T) {
	p := startPrimer(t)
	base, admin := p.srv.URL(), p.key
	keysCall(t, base, admin, "POST", "/v1/tenants", map[string]any{"id": "ghost"}).want(t, "create tenant", 201)
	var g createdKey
	keysCall(t, base, admin, "POST", "/v1/apikeys", map[string]any{"tenant_id": "ghost", "role": "admin"}).
		want(t, "ghost admin key", 201).decode(t, &g)

	// The tenant's LLM provider, agent, and a workspace's events.
	keysCall(t, base, g.Key, "POST", "/v1/llm-providers", map[string]any{
		"id": "ghost-llm", "kind": "openai", "base_url": "https://llm.example.com/v1", "api_key": "sk-ghost",
	}).want(t, "llm provider", 201)
	keysCall(t, base, g.Key, "POST", "/v1/agents", map[string]any{
		"id": "ghost-agent", "model": map[string]any{"provider_id": "ghost-llm", "model_name": "m"},
	}).want(t, "agent", 201)
	keysCall(t, base, g.Key, "POST", "/v1/templates", map[string]any{
		"id": "ghost-tmpl", "provider_id": wire.LocalProviderID, "backend": map[string]any{"kind": "local"},
	}).want(t, "template", 201)
	var ws wire.Workspace
	keysCall(t, base, g.Key, "POST", "/v1/workspaces", map[string]any{"template_id": "ghost-tmpl"}).want(t, "workspace", 201).decode(t, &ws)
	eventually(t, time.Minute, "workspace running", func() bool {
		var w wire.Workspace
		keysCall(t, base, g.Key, "GET", "/v1/workspaces/"+ws.ID, nil).want(t, "get workspace", 200).decode(t, &w)
		return w.Phase == wire.PhaseRunning
	})
	keysCall(t, base, g.Key, "DELETE", "/v1/workspaces/"+ws.ID, nil).want(t, "delete workspace", 202)
	eventually(t, time.Minute, "workspace gone", func() bool {
		return keysCall(t, base, g.Key, "GET", "/v1/workspaces/"+ws.ID, nil).status == 404
	})
	keysCall(t, base, g.Key, "DELETE", "/v1/templates/ghost-tmpl", nil).want(t, "delete template", 204)

	// Owned live resources refuse the delete, and it changes nothing.
	keysCall(t, base, admin, "DELETE", "/v1/tenants/ghost", nil).
		want(t, "delete with leftovers", 409, "tenant ghost: still owns", "1 llm providers", "1 agents", "1 active api keys")
	keysCall(t, base, g.Key, "GET", "/v1/agents/ghost-agent", nil).want(t, "agent kept", 200)
	keysCall(t, base, g.Key, "DELETE", "/v1/agents/ghost-agent", nil).want(t, "delete agent", 204)
	keysCall(t, base, g.Key, "DELETE", "/v1/llm-providers/ghost-llm", nil).want(t, "delete llm provider", 204)
	keysCall(t, base, admin, "DELETE", "/v1/apikeys/"+g.ID, nil).want(t, "revoke ghost key", 200)
	keysCall(t, base, admin, "DELETE", "/v1/tenants/ghost", nil).want(t, "delete tenant", 204)

	// The same id again: the new tenant starts empty.
	keysCall(t, base, admin, "POST", "/v1/tenants", map[string]any{"id": "ghost"}).want(t, "create tenant again", 201)
	var g2 createdKey
	keysCall(t, base, admin, "POST", "/v1/apikeys", map[string]any{"tenant_id": "ghost", "role": "member"}).
		want(t, "new member key", 201).decode(t, &g2)
	for _, path := range []string{"/v1/llm-providers", "/v1/agents", "/v1/events", "/v1/apikeys", "/v1/audit", "/v1/templates", "/v1/workspaces"} {
		var l struct{ Items []json.RawMessage }
		keysCall(t, base, g2.Key, "GET", path, nil).want(t, path, 200).decode(t, &l)
		n := 0
		for _, it := range l.Items {
			var id struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(it, &id)
			if path == "/v1/apikeys" && id.ID == g2.ID {
				continue // its own key
			}
			n++
		}
		if n != 0 {
			t.Errorf("GET %s as the new tenant ghost: %d items of the old one: %s", path, n, l.Items)
		}
	}
	keysCall(t, base, g2.Key, "GET", "/v1/workspaces/"+ws.ID+"/events", nil).want(t, "old workspace's events", 404)
}

// TestAttackAuditInvalidUTF8 is issue 21's hole 12: on PostgreSQL a
// request whose path held bytes that are not UTF-8 (or a NUL) did its work
// while its audit entry was refused by the database and lost. Now every
// field is sanitised (%XX) and the entry is written before the work, so
// the log holds the request.
func TestAttackAuditInvalidUTF8(t *testing.T) {
	p := startPrimer(t, withPostgres(t))
	base, admin := p.srv.URL(), p.key
	var ws wire.Workspace
	keysCall(t, base, admin, "POST", "/v1/workspaces", map[string]any{"template_id": wire.DefaultTemplateID}).want(t, "workspace", 201).decode(t, &ws)
	eventually(t, time.Minute, "workspace running", func() bool {
		var w wire.Workspace
		keysCall(t, base, admin, "GET", "/v1/workspaces/"+ws.ID, nil).want(t, "get workspace", 200).decode(t, &w)
		return w.Phase == wire.PhaseRunning
	})
	for _, tc := range []struct{ path, resource string }{
		{"bad%FFname.txt", "workspaces/" + ws.ID + "/files/bad%FFname.txt"},
		{"nul%00name.txt", "workspaces/" + ws.ID + "/files/nul%00name.txt"},
	} {
		req, err := http.NewRequest("PUT", base+"/v1/workspaces/"+ws.ID+"/files/"+tc.path, strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var audit struct{ Items []wire.AuditEntry }
		keysCall(t, base, admin, "GET", "/v1/audit?limit=20", nil).want(t, "audit", 200).decode(t, &audit)
		var found *wire.AuditEntry
		for i, e := range audit.Items {
			if e.Action == "workspaces.files.update" && e.Resource == tc.resource {
				found = &audit.Items[i]
				break
			}
		}
		switch {
		case found == nil:
			t.Errorf("PUT %s answered %d and left no audit entry %q: %+v", tc.path, resp.StatusCode, tc.resource, audit.Items)
		case found.Status != resp.StatusCode:
			t.Errorf("PUT %s answered %d; its audit entry says %d", tc.path, resp.StatusCode, found.Status)
		}
	}
}
