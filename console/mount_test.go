package console

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestMount checks that the API's paths reach the API exactly as sent (a
// path that leaves the workspace is the API's to refuse, not cleaned and
// redirected on the way) and everything else reaches the console.
func TestMount(t *testing.T) {
	var got string
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Path
		w.WriteHeader(http.StatusTeapot)
	})
	h, c, err := Mount(Config{API: api, Sessions: testSessions(t), PreviewDomain: "preview.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tt := range []struct {
		path  string
		toAPI bool
	}{
		{"/v1/workspaces/ws-1/files/../../etc/passwd", true},
		{"/v1/workspaces", true},
		{"/v1", true},
		{"/healthz", true},
		{"/readyz", true},
		{"/metrics", true},
		{"/preview/pv-1.sig/index.html", true},
		{"/preview", true},
		{"/previewx", false},
		{"/v1x", false},
		{"/workspaces", false},
		{"/signin", false},
	} {
		got = ""
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "http://primer.invalid/", nil)
		req.URL.Path = tt.path
		h.ServeHTTP(rec, req)
		if tt.toAPI && (rec.Code != http.StatusTeapot || got != tt.path) {
			t.Errorf("GET %s: status %d, API saw %q; want the API to get the path as sent", tt.path, rec.Code, got)
		}
		if !tt.toAPI && got != "" {
			t.Errorf("GET %s reached the API; want the console", tt.path)
		}
	}
	// On a preview host every path is the program's, so the API's.
	for _, host := range []string{"8000-ws-1.preview.example.com", "8000-ws-1.Preview.Example.com:8443"} {
		got = ""
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "http://"+host+"/workspaces", nil)
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusTeapot || got != "/workspaces" {
			t.Errorf("GET /workspaces on %s: status %d, API saw %q; want the API", host, rec.Code, got)
		}
	}
}
