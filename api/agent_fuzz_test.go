package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// FuzzAgentSpec feeds agent documents (the spec of a `kind: agent`) to the
// API's decoder and checks: no panic, a refusal is Invalid, and an accepted
// spec's row, sent back as a spec (what `primectl get -o yaml | primectl
// apply` does), is accepted as the same row. Seeds in
// testdata/fuzz/FuzzAgentSpec are the docs' agent documents.
func FuzzAgentSpec(f *testing.F) {
	f.Fuzz(func(t *testing.T, doc []byte) {
		var spec wire.AgentSpec
		if err := decodeStrict(doc, &spec, "spec."); err != nil {
			if errs.KindOf(err) != errs.Invalid {
				t.Fatalf("decode %q: %v: want Invalid", doc, err)
			}
			return
		}
		a, err := agentRow(spec)
		if err != nil {
			if errs.KindOf(err) != errs.Invalid || errs.FieldOf(err) == "" {
				t.Fatalf("check %q: %v: want Invalid naming a field", doc, err)
			}
			return
		}
		row, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("encode the row of %q: %v", doc, err)
		}
		var again wire.AgentSpec
		if err := json.Unmarshal(row, &again); err != nil {
			t.Fatalf("decode the row %s as a spec: %v", row, err)
		}
		b, err := agentRow(again)
		if err != nil {
			t.Fatalf("accepted %q, refused its own row %s: %v", doc, row, err)
		}
		// Compared as stored (JSON): an empty list and none are the same.
		if row2, err := json.Marshal(b); err != nil || !bytes.Equal(row, row2) {
			t.Fatalf("accepted %q as %s; that row is accepted as %s (%v)", doc, row, row2, err)
		}
	})
}
