package api

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/wire"
)

// anyTemplate is a backend that accepts every template document.
type anyTemplate struct{ backend.Backend }

func (anyTemplate) ValidateTemplate(json.RawMessage) error { return nil }

// TestTemplateHostRule: a member may not put a template on a host backend
// (create or update), change or delete one that is there, or change the
// reserved default template at all; each refusal is 403 and leaves the
// stored template as it was. Every write records whether an admin made it
// (AdminWritten), which the activities read wherever a workspace is made.
func TestTemplateHostRule(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		host := local.NewHost(nil)
		t.Cleanup(func() { _ = host.Close() })
		// "container" providers are local directories here whose
		// templates may say kind container: nothing is provisioned.
		box := func(cfg json.RawMessage) (backend.Backend, error) {
			b, err := local.Factory(host, nil)(cfg)
			return anyTemplate{b}, err
		}
		c.Backends = backend.NewRegistry(map[string]backend.Factory{
			wire.BackendLocal:     local.Factory(host, nil),
			wire.BackendContainer: box,
		})
		c.Connector.Backends = c.Backends
	})
	h.backends = h.srv.cfg.Backends
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(h.store.CreateTenant(ctx, &wire.Tenant{ID: tenantB}))
	memberB := h.newKey(tenantB, wire.RoleMember)
	memberDefault := h.newKey(wire.DefaultTenantID, wire.RoleMember)
	cfg := func(name string) string { return fmt.Sprintf(`"config":{"root_path":%q}`, filepath.Join(h.dir, name)) }
	// B's own provider of a non-host type, an admin's shared local one, and
	// a host template of B's written underneath (as before the rule).
	// The stand-in container type has no access rules, so a member may not
	// create a provider of it (fail closed): the row is B's, written below.
	must(h.store.CreateProvider(ctx, &wire.Provider{ID: "b-box", TenantID: tenantB, Provider: wire.BackendContainer,
		Config: json.RawMessage(fmt.Sprintf(`{"root_path":%q}`, filepath.Join(h.dir, "box")))}))
	h.do("POST", "/v1/providers", `{"id":"shared-local","provider":"local",`+cfg("shared")+`,"shared":true}`).expect(t, 201)
	must(h.store.CreateTemplate(ctx, &wire.Template{ID: "b-old-host", TenantID: tenantB, ProviderID: "shared-local",
		Backend: json.RawMessage(`{"kind":"local"}`)}))
	var boxT wire.Template
	h.doAs(memberB, "POST", "/v1/templates", `{"id":"b-box","provider_id":"b-box","backend":{"kind":"container"}}`).expect(t, 201).decode(t, &boxT)

	stored := func(id string) wire.Template {
		t.Helper()
		got, err := h.store.GetTemplate(ctx, id)
		must(err)
		return *got
	}
	if stored("b-box").AdminWritten {
		t.Fatal("a member's template is marked admin-written")
	}
	if !stored(wire.DefaultTemplateID).AdminWritten {
		t.Fatal("the seeded default template is not admin-written")
	}

	for _, tc := range []struct {
		name, key, method, path, body string
		field, msg                    string
		unchanged                     string // the template that must stay as it was
	}{
		{"member moves its template onto local", memberB, "PUT", "/v1/templates/b-box",
			`{"provider_id":"shared-local","backend":{"kind":"local","init":["touch /tmp/pwned"]}}`,
			"spec.provider_id", "only an admin may put a template on it", "b-box"},
		{"member creates a template on local", memberB, "POST", "/v1/templates",
			`{"id":"b-new","provider_id":"shared-local","backend":{"kind":"local"}}`,
			"spec.provider_id", "runs code on the Primer host", ""},
		{"member changes a template already on local", memberB, "PUT", "/v1/templates/b-old-host",
			`{"provider_id":"b-box","backend":{"kind":"container"}}`,
			"", "template b-old-host: on host backend local", "b-old-host"},
		{"member deletes a template on local", memberB, "DELETE", "/v1/templates/b-old-host", "",
			"", "only an admin may change it", "b-old-host"},
		{"member edits the default template's init", memberDefault, "PUT", "/v1/templates/" + wire.DefaultTemplateID,
			`{"provider_id":"local","backend":{"kind":"local","init":["touch /tmp/pwned"]}}`,
			"", "template default: reserved", wire.DefaultTemplateID},
		{"member deletes the default template", memberDefault, "DELETE", "/v1/templates/" + wire.DefaultTemplateID, "",
			"", "template default: reserved", wire.DefaultTemplateID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before wire.Template
			if tc.unchanged != "" {
				before = stored(tc.unchanged)
			}
			var body any
			if tc.body != "" {
				body = tc.body
			}
			h.doAs(tc.key, tc.method, tc.path, body).expectError(t, 403, "forbidden", tc.field, tc.msg)
			if tc.unchanged == "" {
				return
			}
			after := stored(tc.unchanged)
			if after.Generation != before.Generation || string(after.Backend) != string(before.Backend) ||
				after.ProviderID != before.ProviderID || after.AdminWritten != before.AdminWritten {
				t.Errorf("refused write changed template %s: %+v -> %+v", tc.unchanged, before, after)
			}
		})
	}

	// An admin may: its write is recorded as an admin's, and a member's
	// next write of a non-host template clears it again.
	h.do("PUT", "/v1/templates/b-old-host", `{"provider_id":"shared-local","backend":{"kind":"local"}}`).expect(t, 200)
	if !stored("b-old-host").AdminWritten {
		t.Error("an admin's update is not recorded as admin-written")
	}
	h.do("PUT", "/v1/templates/b-box", `{"provider_id":"b-box","backend":{"kind":"container"}}`).expect(t, 200)
	if !stored("b-box").AdminWritten {
		t.Error("an admin's update of b-box is not recorded as admin-written")
	}
	h.doAs(memberB, "PUT", "/v1/templates/b-box", `{"provider_id":"b-box","backend":{"kind":"container"}}`).expect(t, 200)
	if stored("b-box").AdminWritten {
		t.Error("a member's update kept the admin mark")
	}
}

// TestHostWorkspaceAdminOnly: an admin's workspace on the host is visible
// to the members of its tenant, but a member may not exec in it, read or
// write its files, run an agent in it, snapshot or fork it (a capture copies its files):
// whatever runs there runs on the Primer host.
func TestHostWorkspaceAdminOnly(t *testing.T) {
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	member := h.newKey(wire.DefaultTenantID, wire.RoleMember)
	h.doAs(member, "GET", "/v1/workspaces/"+w.ID, nil).expect(t, 200)
	for _, tc := range []struct{ name, method, path, body string }{
		{"exec", "POST", "/v1/workspaces/" + w.ID + "/exec", `{"command":["touch","/tmp/pwned"]}`},
		{"read a file", "GET", "/v1/workspaces/" + w.ID + "/files/a.txt", ""},
		{"write a file", "PUT", "/v1/workspaces/" + w.ID + "/files/a.txt", "x"},
		{"snapshot", "POST", "/v1/workspaces/" + w.ID + "/snapshots", ""},
		{"fork", "POST", "/v1/workspaces/" + w.ID + "/fork", `{"count":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			h.doAs(member, tc.method, tc.path, body).expectError(t, 403, "forbidden", "", "only an admin may reach into it")
		})
	}
	// The admin still may.
	h.do("POST", "/v1/workspaces/"+w.ID+"/exec", `{"command":["true"]}`).expect(t, 200)
}
