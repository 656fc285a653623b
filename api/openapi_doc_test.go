package api

import (
	"bytes"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/primerhq/primer/api/openapi"
)

// TestOpenAPIDescribesEveryRoute holds the OpenAPI route table to what gin
// serves: every /v1 route is described, and nothing else is. The E2B door
// (/e2b/*path) and /healthz, /readyz, /metrics are not /v1 and are out of
// the document's scope.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	h := newHarness(t)
	served := map[string]bool{}
	for _, rt := range h.engine.Routes() {
		if strings.HasPrefix(rt.Path, "/v1/") {
			served[rt.Method+" "+rt.Path] = true
		}
	}
	described := map[string]bool{}
	for _, r := range openapi.Routes() {
		key := r.Method + " " + r.Path
		if described[key] {
			t.Errorf("the route table describes %s twice", key)
		}
		described[key] = true
	}
	var missing, extra []string
	for k := range served {
		if !described[k] {
			missing = append(missing, k)
		}
	}
	for k := range described {
		if !served[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	for _, k := range missing {
		t.Errorf("%s is served but not in the OpenAPI document: describe it in api/openapi/routes.go", k)
	}
	for _, k := range extra {
		t.Errorf("%s is in the OpenAPI document but not served", k)
	}
	if len(served) < 80 {
		t.Errorf("only %d /v1 routes served; the walk went wrong", len(served))
	}
}

// TestOpenAPIServed: GET /v1/openapi.json answers the document without a
// key, and the document is JSON naming OpenAPI 3.1.
func TestOpenAPIServed(t *testing.T) {
	h := newHarness(t)
	resp, err := http.Get(h.url + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /v1/openapi.json without a key: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !bytes.Equal(body.Bytes(), openapi.JSON()) || !bytes.Contains(body.Bytes(), []byte(`"openapi": "3.1.0"`)) {
		t.Fatalf("GET /v1/openapi.json is not the document (%d bytes)", body.Len())
	}
}
