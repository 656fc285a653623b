package api

import (
	"testing"
)

// TestE2BWrongMethod: a door path asked with a method it does not take is
// 405 in E2B's error body, with Allow naming the ones it takes; an unknown
// path stays 404.
func TestE2BWrongMethod(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		method, path string
		status       int
		allow, msg   string
	}{
		{"PUT", "/sandboxes", 405, "POST, GET", "PUT"},
		{"DELETE", "/v2/sandboxes", 405, "POST, GET", "DELETE"},
		{"POST", "/sandboxes/ws-1", 405, "GET, DELETE", "POST"},
		{"GET", "/sandboxes/ws-1/timeout", 405, "POST", "GET"},
		{"PATCH", "/v2/sandboxes/ws-1/connect", 405, "POST", "PATCH"},
		{"GET", "/sandboxes/ws-1/nope", 404, "", "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := h.e2b(h.adminKey, tt.method, tt.path, "")
			r.e2bError(t, tt.status, tt.msg)
			if got := r.header.Get("Allow"); got != tt.allow {
				t.Fatalf("Allow = %q, want %q", got, tt.allow)
			}
		})
	}
}
