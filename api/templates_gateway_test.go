package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/primerhq/primer/wire"
)

// TestTemplateModelGateway: a template's model_gateway must name an LLM
// provider the caller's tenant can see (another tenant's is as unknown as
// a missing one: 404 naming the field, as every unknown reference) and at
// least one model (400); no refusal stores anything.
func TestTemplateModelGateway(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if err := h.store.CreateTenant(ctx, &wire.Tenant{ID: tenantB}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*wire.LLMProvider{
		{ID: "mine", TenantID: wire.DefaultTenantID, Kind: wire.LLMOpenAI, BaseURL: "https://api.example.com/v1", APIKey: "sk-a"},
		{ID: "theirs", TenantID: tenantB, Kind: wire.LLMOpenAI, BaseURL: "https://api.example.com/v1", APIKey: "sk-b"},
	} {
		if err := h.store.CreateLLMProvider(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	h.do("POST", "/v1/providers", fmt.Sprintf(`{"id":"scratch","provider":"local","config":{"root_path":%q}}`, filepath.Join(h.dir, "scratch"))).expect(t, http.StatusCreated)
	tmpl := func(id string, gw any) map[string]any {
		g, _ := json.Marshal(gw)
		return map[string]any{"id": id, "provider_id": "scratch", "backend": json.RawMessage(`{"kind":"local","model_gateway":` + string(g) + `}`)}
	}
	for _, tc := range []struct {
		name   string
		gw     any
		status int
		field  string
	}{
		{"another tenant's provider", map[string]any{"provider_id": "theirs", "models": []string{"m"}}, http.StatusNotFound, "spec.backend.model_gateway.provider_id"},
		{"missing provider", map[string]any{"provider_id": "nope", "models": []string{"m"}}, http.StatusNotFound, "spec.backend.model_gateway.provider_id"},
		{"no models", map[string]any{"provider_id": "mine", "models": []string{}}, http.StatusBadRequest, "spec.backend.model_gateway.models"},
	} {
		r := h.do("POST", "/v1/templates", tmpl("t-bad", tc.gw))
		if e := r.envelope(t); r.status != tc.status || e.Details["field"] != tc.field {
			t.Errorf("%s: %d %s; want %d on %s", tc.name, r.status, r.body, tc.status, tc.field)
		}
		if _, err := h.store.GetTemplate(ctx, "t-bad"); err == nil {
			t.Fatalf("%s: the template was stored", tc.name)
		}
	}
	h.do("POST", "/v1/templates", tmpl("t-ok", map[string]any{"provider_id": "mine", "models": []string{"gpt-ok"}, "port": 9000})).expect(t, http.StatusCreated)
}
