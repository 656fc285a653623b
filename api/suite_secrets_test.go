package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
)

// A suite's env values and webhook URL never leave the server: every
// response shows Redacted, a document sent back with the placeholders
// keeps the stored values, and a placeholder with nothing stored is bad
// input naming the field.
func TestSuiteSecrets(t *testing.T) {
	h := newHarness(t)
	h.withSchedules()
	const (
		keyA    = "sk-default-9f8e7d6c"
		keyB    = "sk-case-1a2b3c4d"
		webhook = "https://ci.example/hooks/tok-5e6f7a8b"
	)
	doc := `{"id":"sec","template_id":"default","webhook_url":"` + webhook + `",
		"defaults":{"env":{"MODEL_KEY":"` + keyA + `"}},
		"cases":[{"id":"a","command":"true","env":{"CASE_KEY":"` + keyB + `"}},{"id":"b","command":"true"}]}`
	bodies := []string{
		string(h.do("POST", "/v1/suites", doc).expect(t, 201).body),
		string(h.do("GET", "/v1/suites/sec", nil).expect(t, 200).body),
		string(h.do("GET", "/v1/suites", nil).expect(t, 200).body),
		string(h.do("GET", "/v1/suites/sec/cases", nil).expect(t, 200).body),
		string(h.do("GET", "/v1/suites/sec/cases?format=jsonl", nil).expect(t, 200).body),
	}
	for i, b := range bodies {
		for _, secret := range []string{keyA, keyB, "tok-5e6f7a8b"} {
			if strings.Contains(b, secret) {
				t.Errorf("response %d holds the secret %q: %s", i, secret, b)
			}
		}
		if !strings.Contains(b, Redacted) {
			t.Errorf("response %d shows no placeholder: %s", i, b)
		}
	}

	// Round trip: the spec and cases as shown, sent back, keep the values.
	var v wire.SuiteView
	h.do("GET", "/v1/suites/sec", nil).expect(t, 200).decode(t, &v)
	var spec eval.SuiteSpec
	if err := json.Unmarshal(v.Spec, &spec); err != nil {
		t.Fatal(err)
	}
	var cases wire.Items[eval.Case]
	h.do("GET", "/v1/suites/sec/cases", nil).expect(t, 200).decode(t, &cases)
	spec.Cases = cases.Items
	spec.Description = "edited"
	h.do("PUT", "/v1/suites/sec", spec).expect(t, 200)
	su, err := h.store.GetSuite(context.Background(), "sec")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := h.store.ListSuiteCases(context.Background(), "sec")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(su.Spec), keyA) || !strings.Contains(string(su.Spec), webhook) || !strings.Contains(string(rows[0].Spec), keyB) ||
		!strings.Contains(string(su.Spec), "edited") {
		t.Errorf("after a round trip: spec %s, case a %s; want the stored secrets kept and the edit applied", su.Spec, rows[0].Spec)
	}

	// A placeholder with no stored value behind it.
	spec.Cases[1].Env = map[string]string{"NEW": Redacted}
	h.do("PUT", "/v1/suites/sec", spec).expectError(t, 400, "invalid", "spec.cases[1].env.NEW", "placeholder")
	h.do("POST", "/v1/suites", `{"id":"sec2","template_id":"default","cases":[{"id":"a","command":"true","env":{"K":"`+Redacted+`"}}]}`).expectError(t, 400, "invalid", "spec.cases[0].env.K", "placeholder")
	h.noSuite(t, "sec2")
}
