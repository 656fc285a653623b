package backend

import (
	"encoding/json"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

func TestWithEgress(t *testing.T) {
	tests := []struct {
		name, tmpl, egress string
		want               string // network.egress of the answer
		same               bool   // the template comes back as it is
	}{
		{"no override keeps allow", `{"kind":"container","image":"i","network":{"egress":"allow"}}`, "", "allow", true},
		{"narrows allow", `{"kind":"container","image":"i","network":{"egress":"allow"}}`, "deny_all", "deny_all", false},
		{"narrows the default", `{"kind":"kubernetes","image":"i"}`, "deny_all", "deny_all", false},
		{"narrows a null network", `{"kind":"container","image":"i","network":null}`, "deny_all", "deny_all", false},
		{"deny_all stays", `{"kind":"container","image":"i","network":{"egress":"deny_all"}}`, "deny_all", "deny_all", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WithEgress(json.RawMessage(tt.tmpl), &wire.Workspace{ID: "ws-1", Egress: tt.egress})
			if err != nil {
				t.Fatal(err)
			}
			if e := EgressOf(got); e != tt.want {
				t.Fatalf("egress of %s = %q, want %q", got, e, tt.want)
			}
			if tt.same && string(got) != tt.tmpl {
				t.Fatalf("got %s, want the template as it is", got)
			}
			// Every other field is kept.
			var in, out map[string]any
			_ = json.Unmarshal([]byte(tt.tmpl), &in)
			_ = json.Unmarshal(got, &out)
			for k, v := range in {
				if k != "network" && out[k] != v {
					t.Fatalf("field %s = %v, want %v", k, out[k], v)
				}
			}
		})
	}
	if _, err := WithEgress(json.RawMessage(`[1]`), &wire.Workspace{ID: "ws-1", Egress: EgressDenyAll}); !errs.Is(err, errs.Invalid) {
		t.Fatalf("a template that is not an object: %v, want invalid", err)
	}
}

func TestCheckEgress(t *testing.T) {
	tests := []struct {
		egress, kind string
		ok           bool
	}{
		{"", "local", true},
		{"deny_all", "container", true},
		{"deny_all", "kubernetes", true},
		{"deny_all", "local", false},
		{"deny_all", "vm", false},
		{"allow", "container", false}, // never widens
		{"open", "container", false},
	}
	for _, tt := range tests {
		err := CheckEgress("egress", tt.egress, tt.kind)
		if (err == nil) != tt.ok || (err != nil && errs.FieldOf(err) != "egress") {
			t.Errorf("CheckEgress(%q, %q) = %v, want ok %v", tt.egress, tt.kind, err, tt.ok)
		}
	}
}
