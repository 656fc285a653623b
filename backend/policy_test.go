package backend_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// policyDoc is a template document of a backend with a field of its own, as
// every backend's template embeds Common.
type policyDoc struct {
	backend.Common
	Image string `json:"image,omitempty"`
}

func TestPolicyDecodeAndValidate(t *testing.T) {
	secret := "https://hooks.example.com/escalate?token=s3cret"
	tests := []struct {
		name      string
		in        string
		wantField string // "" means valid
		want      backend.Policy
	}{
		{"defaults", `{"kind":"x"}`, "",
			backend.Policy{StartTimeout: 10 * time.Minute, MaxAttempts: 3, RecoverAfter: 30 * time.Second}},
		{"empty recovery", `{"kind":"x","recovery":{}}`, "",
			backend.Policy{StartTimeout: 10 * time.Minute, MaxAttempts: 3, RecoverAfter: 30 * time.Second}},
		{"null recovery", `{"kind":"x","recovery":null}`, "",
			backend.Policy{StartTimeout: 10 * time.Minute, MaxAttempts: 3, RecoverAfter: 30 * time.Second}},
		{"all set", `{"kind":"x","image":"i","start_timeout":"90s","recovery":{"max_attempts":5,"after":"2m","webhook_url":"` + secret + `"}}`, "",
			backend.Policy{StartTimeout: 90 * time.Second, MaxAttempts: 5, RecoverAfter: 2 * time.Minute, Webhook: true}},
		{"zero attempts escalates at once", `{"kind":"x","recovery":{"max_attempts":0}}`, "",
			backend.Policy{StartTimeout: 10 * time.Minute, MaxAttempts: 0, RecoverAfter: 30 * time.Second}},
		{"zero after recovers at once", `{"kind":"x","recovery":{"after":"0s"}}`, "",
			backend.Policy{StartTimeout: 10 * time.Minute, MaxAttempts: 3, RecoverAfter: 0}},
		{"bounds", `{"kind":"x","start_timeout":"24h","recovery":{"max_attempts":20,"after":"24h","webhook_url":"http://10.0.0.1:8080/hook"}}`, "",
			backend.Policy{StartTimeout: 24 * time.Hour, MaxAttempts: 20, RecoverAfter: 24 * time.Hour, Webhook: true}},

		{"start_timeout not a duration", `{"kind":"x","start_timeout":"10 minutes"}`, "spec.backend.start_timeout", backend.Policy{}},
		{"start_timeout bare number", `{"kind":"x","start_timeout":"600"}`, "spec.backend.start_timeout", backend.Policy{}},
		{"start_timeout zero", `{"kind":"x","start_timeout":"0s"}`, "spec.backend.start_timeout", backend.Policy{}},
		{"start_timeout negative", `{"kind":"x","start_timeout":"-1m"}`, "spec.backend.start_timeout", backend.Policy{}},
		{"start_timeout too long", `{"kind":"x","start_timeout":"25h"}`, "spec.backend.start_timeout", backend.Policy{}},
		{"start_timeout wrong type", `{"kind":"x","start_timeout":600}`, "spec.backend.start_timeout", backend.Policy{}},
		{"after not a duration", `{"kind":"x","recovery":{"after":"soon"}}`, "spec.backend.recovery.after", backend.Policy{}},
		{"after negative", `{"kind":"x","recovery":{"after":"-5s"}}`, "spec.backend.recovery.after", backend.Policy{}},
		{"after too long", `{"kind":"x","recovery":{"after":"48h"}}`, "spec.backend.recovery.after", backend.Policy{}},
		{"max_attempts negative", `{"kind":"x","recovery":{"max_attempts":-1}}`, "spec.backend.recovery.max_attempts", backend.Policy{}},
		{"max_attempts too many", `{"kind":"x","recovery":{"max_attempts":21}}`, "spec.backend.recovery.max_attempts", backend.Policy{}},
		{"max_attempts wrong type", `{"kind":"x","recovery":{"max_attempts":"3"}}`, "spec.backend.recovery.max_attempts", backend.Policy{}},
		{"max_attempts fraction", `{"kind":"x","recovery":{"max_attempts":1.5}}`, "spec.backend.recovery.max_attempts", backend.Policy{}},
		{"webhook relative", `{"kind":"x","recovery":{"webhook_url":"/hook?token=s3cret"}}`, "spec.backend.recovery.webhook_url", backend.Policy{}},
		{"webhook other scheme", `{"kind":"x","recovery":{"webhook_url":"ftp://example.com/hook?token=s3cret"}}`, "spec.backend.recovery.webhook_url", backend.Policy{}},
		{"webhook no host", `{"kind":"x","recovery":{"webhook_url":"https:///hook?token=s3cret"}}`, "spec.backend.recovery.webhook_url", backend.Policy{}},
		{"webhook opaque", `{"kind":"x","recovery":{"webhook_url":"http:s3cret"}}`, "spec.backend.recovery.webhook_url", backend.Policy{}},
		{"webhook unparsable", `{"kind":"x","recovery":{"webhook_url":"http://exa mple.com/?token=s3cret"}}`, "spec.backend.recovery.webhook_url", backend.Policy{}},
		{"recovery wrong type", `{"kind":"x","recovery":"often"}`, "spec.backend.recovery", backend.Policy{}},
		{"unknown recovery field", `{"kind":"x","recovery":{"max_attempt":2}}`, "spec.backend.recovery.max_attempt", backend.Policy{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d policyDoc
			err := backend.DecodeStrict(json.RawMessage(tt.in), "spec.backend", &d)
			if err == nil {
				err = d.Common.Check("x")
			}
			if tt.wantField != "" {
				if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tt.wantField {
					t.Fatalf("decode and check %s = %v (field %q), want invalid naming %q", tt.in, err, errs.FieldOf(err), tt.wantField)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error %q repeats the webhook URL, which may carry a token", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode and check %s = %v", tt.in, err)
			}
			if got := d.Common.Policy(); got != tt.want {
				t.Errorf("Policy() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The policy's values are what a workflow records: it must not hold the
// webhook's URL.
func TestPolicyHoldsNoSecret(t *testing.T) {
	n := 2
	c := backend.Common{Recovery: &backend.Recovery{MaxAttempts: &n, WebhookURL: "https://h.example.com/?token=s3cret"}}
	raw, err := json.Marshal(c.Policy())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "s3cret") || strings.Contains(string(raw), "example.com") {
		t.Errorf("policy %s holds the webhook URL", raw)
	}
	if !c.Policy().Webhook || c.Policy().MaxAttempts != 2 {
		t.Errorf("Policy() = %+v", c.Policy())
	}
}

// A document that skipped Validate still gets a usable policy: Policy falls
// back to the defaults rather than zeros that would time out at once.
func TestPolicyDefaultsForBadValues(t *testing.T) {
	neg := -1
	c := backend.Common{StartTimeout: "soon", Recovery: &backend.Recovery{MaxAttempts: &neg, After: "-1s"}}
	want := backend.Policy{StartTimeout: backend.DefaultStartTimeout, MaxAttempts: backend.DefaultMaxAttempts, RecoverAfter: backend.DefaultRecoverAfter}
	if got := c.Policy(); got != want {
		t.Errorf("Policy() = %+v, want %+v", got, want)
	}
}

func TestUnknownFieldPath(t *testing.T) {
	type network struct {
		Egress string `json:"egress"`
	}
	type doc struct {
		backend.Common
		Image   string             `json:"image"`
		Network network            `json:"network"`
		Volumes map[string]network `json:"volumes"`
		Ports   []network          `json:"ports"`
	}
	tests := []struct{ in, want string }{
		{`{"kind":"x","imgae":"a"}`, "spec.backend.imgae"},
		{`{"kind":"x","network":{"egres":"a"}}`, "spec.backend.network.egres"},
		{`{"kind":"x","recovery":{"kind":"a"}}`, "spec.backend.recovery.kind"},
		{`{"kind":"x","volumes":{"v1":{"egress":"a"},"v2":{"size":1}}}`, "spec.backend.volumes.v2.size"},
		{`{"kind":"x","ports":[{"egress":"a"},{"port":1}]}`, "spec.backend.ports.1.port"},
		// encoding/json matches keys without regard to case.
		{`{"Kind":"x","Recovery":{"After":"1s","nope":1}}`, "spec.backend.Recovery.nope"},
	}
	for _, tt := range tests {
		var d doc
		err := backend.DecodeStrict(json.RawMessage(tt.in), "spec.backend", &d)
		if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tt.want {
			t.Errorf("DecodeStrict(%s) = %v (field %q), want invalid naming %q", tt.in, err, errs.FieldOf(err), tt.want)
		}
	}
}

func TestIsWorkspaceID(t *testing.T) {
	for id, want := range map[string]bool{
		"ws-1a2b3c4d5e6f7a8b":           true,
		"ws-0":                          true,
		"ws-":                           false,
		"ws-1A2B":                       false,
		"ws-backup":                     false,
		"ws-1a2b.old":                   false,
		"ws-1a2b/x":                     false,
		"notes":                         false,
		"ses-1a2b":                      false,
		"ws-" + strings.Repeat("a", 65): false,
	} {
		if got := backend.IsWorkspaceID(id); got != want {
			t.Errorf("IsWorkspaceID(%q) = %v, want %v", id, got, want)
		}
	}
}
