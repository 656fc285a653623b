package eval

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/primerhq/primer/errs"
)

// FuzzSuiteSpec feeds suite documents, as JSON and as JSONL (the spec on
// the first line, a case a line), to the suite decoder and Check: no panic,
// a refusal is Invalid (or TooLarge), and an accepted suite encoded again
// (how the API stores it) decodes and checks as the same suite. Seeds in
// testdata/fuzz/FuzzSuiteSpec are the docs' and the example's suites.
func FuzzSuiteSpec(f *testing.F) {
	f.Fuzz(func(t *testing.T, doc []byte) {
		var asJSON SuiteSpec
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.DisallowUnknownFields()
		if dec.Decode(&asJSON) == nil {
			checkSuiteRoundTrip(t, doc, &asJSON)
		}
		asJSONL, err := ReadJSONL(bytes.NewReader(doc), 1<<20)
		if err != nil {
			if k := errs.KindOf(err); k != errs.Invalid && k != errs.TooLarge {
				t.Fatalf("read JSONL %q: %v: want Invalid or TooLarge", doc, err)
			}
			return
		}
		checkSuiteRoundTrip(t, doc, asJSONL)
	})
}

// checkSuiteRoundTrip checks spec (decoded from doc): a refusal is Invalid
// naming a field; an accepted spec encodes, decodes and checks again as
// itself.
func checkSuiteRoundTrip(t *testing.T, doc []byte, spec *SuiteSpec) {
	t.Helper()
	if err := spec.Check(); err != nil {
		if errs.KindOf(err) != errs.Invalid || errs.FieldOf(err) == "" {
			t.Fatalf("check %q: %v: want Invalid naming a field", doc, err)
		}
		return
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatalf("encode the accepted %q: %v", doc, err)
	}
	var again SuiteSpec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&again); err != nil {
		t.Fatalf("accepted %q; its encoding %s does not decode: %v", doc, raw, err)
	}
	if err := again.Check(); err != nil {
		t.Fatalf("accepted %q; its encoding %s is refused: %v", doc, raw, err)
	}
	raw2, err := json.Marshal(&again)
	if err != nil || !bytes.Equal(raw, raw2) {
		t.Fatalf("accepted %q; encoded %s, then %s (%v)", doc, raw, raw2, err)
	}
}
