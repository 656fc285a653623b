package api

import (
	"testing"

	"github.com/primerhq/primer/wire"
)

func TestTenants(t *testing.T) {
	h := newHarness(t)

	var tn wire.Tenant
	h.do("POST", "/v1/tenants", `{"id":"team","description":"the team","quota":{"max_workspaces":2,"max_pools":1}}`).
		expect(t, 201).decode(t, &tn)
	if tn.ID != "team" || tn.Description != "the team" || tn.Quota != (wire.Quota{MaxWorkspaces: 2, MaxPools: 1}) {
		t.Fatalf("created %+v", tn)
	}
	for _, tc := range []struct {
		name, body, code, field string
		status                  int
	}{
		{"duplicate", `{"id":"team"}`, "conflict", "", 409},
		{"bad id", `{"id":"Team_1"}`, "invalid", "id", 400},
		{"negative quota", `{"id":"x","quota":{"max_cpu_cores":-1}}`, "invalid", "quota.max_cpu_cores", 400},
		{"negative model quota", `{"id":"x","quota":{"max_model_requests_per_day":-1}}`, "invalid", "quota.max_model_requests_per_day", 400},
		{"unknown field", `{"id":"x","owner":"me"}`, "invalid", "owner", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.do("POST", "/v1/tenants", tc.body).expectError(t, tc.status, tc.code, tc.field, "")
		})
	}

	// Get shows the usage beside the quota.
	h.workspace(wire.PhaseRunning) // default tenant's: not team's
	var view struct {
		wire.Tenant
		Usage *wire.Usage `json:"usage"`
	}
	h.do("GET", "/v1/tenants/team", nil).expect(t, 200).decode(t, &view)
	if view.Usage == nil || *view.Usage != (wire.Usage{}) {
		t.Errorf("team usage = %+v, want zeros", view.Usage)
	}
	h.do("GET", "/v1/tenants/"+wire.DefaultTenantID, nil).expect(t, 200).decode(t, &view)
	if view.Usage == nil || view.Usage.Workspaces != 1 {
		t.Errorf("default usage = %+v, want 1 workspace", view.Usage)
	}
	h.do("GET", "/v1/tenants/nope", nil).expectError(t, 404, "not_found", "", "tenant nope")

	// Update replaces description and quota.
	tn = wire.Tenant{} // omitempty fields would keep the old values
	h.do("PUT", "/v1/tenants/team", `{"quota":{"max_workspaces":5,"max_model_tokens_per_day":100000}}`).expect(t, 200).decode(t, &tn)
	if tn.Description != "" || tn.Quota != (wire.Quota{MaxWorkspaces: 5, MaxModelTokensPerDay: 100000}) {
		t.Errorf("updated %+v", tn)
	}
	h.do("PUT", "/v1/tenants/team", `{"id":"other"}`).expectError(t, 400, "invalid", "id", "")
	h.do("PUT", "/v1/tenants/nope", `{}`).expectError(t, 404, "not_found", "", "")

	var list wire.Items[wire.Tenant]
	h.do("GET", "/v1/tenants", nil).expect(t, 200).decode(t, &list)
	if ids := idsOf(list.Items); len(ids) != 2 || ids[0] != wire.DefaultTenantID || ids[1] != "team" {
		t.Errorf("admin lists %v", ids)
	}

	// Delete: not while a key is active; never the default tenant.
	key := h.newKey("team", wire.RoleViewer)
	h.do("DELETE", "/v1/tenants/team", nil).expectError(t, 409, "conflict", "", "1 active api keys")
	h.do("POST", "/v1/apikeys/"+keyIDOf(t, key)+"/revoke", nil).expect(t, 200)
	h.do("DELETE", "/v1/tenants/team", nil).expect(t, 204)
	h.do("GET", "/v1/tenants/team", nil).expectError(t, 404, "not_found", "", "")
	h.do("DELETE", "/v1/tenants/"+wire.DefaultTenantID, nil).expectError(t, 403, "forbidden", "", "cannot be deleted")
}

func idsOf(ts []wire.Tenant) []string {
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.ID)
	}
	return ids
}
