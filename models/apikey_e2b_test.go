package models

import (
	"regexp"
	"strings"
	"testing"
)

// pythonSDKKey is the E2B Python SDK's client-side key check.
var pythonSDKKey = regexp.MustCompile(`\Ae2b_[0-9a-f]+\z`)

func TestE2BKeyRoundTrip(t *testing.T) {
	_, key, hash := NewAPIKey()
	ek, ok := E2BKey(key)
	if !ok || !pythonSDKKey.MatchString(ek) {
		t.Fatalf("E2BKey = %q, %v; want a key the Python SDK accepts", ek, ok)
	}
	back, err := FromE2BKey(ek)
	if err != nil || back != key || HashAPIKey(back) != hash {
		t.Fatalf("FromE2BKey = %q, %v; want the key itself, same hash", back, err)
	}
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"short", "e2b_0123"},
		{"upper hex", "e2b_" + strings.ToUpper(ek[4:])},
		{"not hex", "e2b_" + strings.Repeat("g", 80)},
		{"too long", ek + "00"},
		{"pmr form", key},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := FromE2BKey(tt.in); err == nil {
				t.Fatalf("FromE2BKey(%q) = %q, want an error", tt.in, got)
			}
		})
	}
	if _, ok := E2BKey("pmr.key-legacy.abc"); ok {
		t.Fatal("a malformed key got an e2b form")
	}
}
