package protocol

import (
	"encoding/json"
	"testing"
)

// TestParseBeacon: the fast reading of a beacon frame agrees with the JSON
// decoder on what a runtime sends, and refuses anything else.
func TestParseBeacon(t *testing.T) {
	for _, id := range []uint64{0, 7, 18446744073709551615} {
		b, _ := json.Marshal(Beacon{Type: TypeBeacon, ID: id})
		if got, ok := ParseBeacon(b); !ok || got != id {
			t.Errorf("ParseBeacon(%s) = %d, %v; want %d", b, got, ok, id)
		}
	}
	for _, s := range []string{`{"type":"beacon","id":}`, `{"type":"beacon","id":1,"x":2}`, `{"type":"result","id":1}`, `{"type":"beacon","id":-1}`, ``} {
		if _, ok := ParseBeacon([]byte(s)); ok {
			t.Errorf("ParseBeacon(%s) accepted it", s)
		}
	}
}
