package backend_test

import (
	"encoding/json"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

func TestDecodeStrict(t *testing.T) {
	type doc struct {
		backend.Common
		Image string `json:"image"`
		CPU   int    `json:"cpu_cores"`
	}
	tests := []struct {
		name      string
		in        string
		wantField string // "" means valid
	}{
		{"valid", `{"kind":"x","image":"alpine","env":{"A":"1"}}`, ""},
		{"unknown field", `{"kind":"x","imgae":"alpine"}`, "spec.backend.imgae"},
		{"wrong type", `{"kind":"x","cpu_cores":"two"}`, "spec.backend.cpu_cores"},
		{"wrong nested type", `{"kind":"x","env":{"A":1}}`, "spec.backend.env"},
		{"not an object", `"x"`, "spec.backend"},
		{"malformed", `{"kind":"x"`, "spec.backend"},
		{"trailing data", `{"kind":"x"} {}`, "spec.backend"},
		{"empty", ` `, "spec.backend"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d doc
			err := backend.DecodeStrict(json.RawMessage(tt.in), "spec.backend", &d)
			if tt.wantField == "" {
				if err != nil || d.Kind != "x" || d.Image != "alpine" || d.Env["A"] != "1" {
					t.Fatalf("DecodeStrict(%s) = %v, decoded %+v", tt.in, err, d)
				}
				return
			}
			if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tt.wantField {
				t.Errorf("DecodeStrict(%s) = %v (field %q), want invalid naming %q", tt.in, err, errs.FieldOf(err), tt.wantField)
			}
		})
	}
}

func TestCommonValidate(t *testing.T) {
	tests := []struct {
		name      string
		c         backend.Common
		wantField string
	}{
		{"valid", backend.Common{Env: map[string]string{"A": "b"}, Files: map[string]string{"a/b.txt": "x", "./c": "y"}, Init: []string{"make"}}, ""},
		{"dotdot file", backend.Common{Files: map[string]string{"a/../../x": ""}}, "spec.backend.files"},
		{"absolute file", backend.Common{Files: map[string]string{"/etc/passwd": ""}}, "spec.backend.files"},
		{"root file", backend.Common{Files: map[string]string{".": ""}}, "spec.backend.files"},
		{"bad env name", backend.Common{Env: map[string]string{"A=B": ""}}, "spec.backend.env"},
		{"empty init", backend.Common{Init: []string{"ls", ""}}, "spec.backend.init"},
		{"gateway", backend.Common{ModelGateway: &backend.ModelGateway{ProviderID: "p", Models: []string{"m"}, Budget: &backend.GatewayBudget{Period: "1h", WorkspaceTokens: 10}}}, ""},
		{"gateway without provider", backend.Common{ModelGateway: &backend.ModelGateway{Models: []string{"m"}}}, "spec.backend.model_gateway.provider_id"},
		{"gateway without models", backend.Common{ModelGateway: &backend.ModelGateway{ProviderID: "p"}}, "spec.backend.model_gateway.models"},
		{"gateway bad port", backend.Common{ModelGateway: &backend.ModelGateway{ProviderID: "p", Models: []string{"m"}, Port: 70000}}, "spec.backend.model_gateway.port"},
		{"gateway privileged port", backend.Common{ModelGateway: &backend.ModelGateway{ProviderID: "p", Models: []string{"m"}, Port: 80}}, "spec.backend.model_gateway.port"},
		{"gateway bad period", backend.Common{ModelGateway: &backend.ModelGateway{ProviderID: "p", Models: []string{"m"}, Budget: &backend.GatewayBudget{Period: "soon"}}}, "spec.backend.model_gateway.budget.period"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate("spec.backend")
			if tt.wantField == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tt.wantField {
				t.Errorf("Validate = %v (field %q), want invalid naming %q", err, errs.FieldOf(err), tt.wantField)
			}
		})
	}
}

func TestCheckKind(t *testing.T) {
	if err := backend.CheckKind("spec.config", "", "local", true); err != nil {
		t.Errorf("optional empty kind: %v", err)
	}
	for _, kind := range []string{"", "docker"} {
		if err := backend.CheckKind("spec.backend", kind, "local", false); errs.FieldOf(err) != "spec.backend.kind" {
			t.Errorf("CheckKind(%q) = %v, want invalid naming spec.backend.kind", kind, err)
		}
	}
}
