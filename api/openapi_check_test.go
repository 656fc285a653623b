package api

import (
	"net/http"
	"sync"

	"github.com/primerhq/primer/api/openapi"
	"github.com/primerhq/primer/api/openapi/openapitest"
)

// openAPIDoc is the OpenAPI document, parsed once per test binary.
var openAPIDoc = sync.OnceValues(func() (*openapitest.Document, error) {
	return openapitest.Load(openapi.JSON())
})

// http returns the harness's HTTP client, whose every /v1 answer is
// checked against the OpenAPI document (issue 24): when the test ends, an
// answer that did not match fails it.
func (h *harness) http() *http.Client {
	h.t.Helper()
	h.checkedMu.Lock()
	defer h.checkedMu.Unlock()
	if h.checked != nil {
		return h.checked
	}
	doc, err := openAPIDoc()
	if err != nil {
		h.t.Fatalf("load the OpenAPI document: %v", err)
	}
	c := openapitest.NewChecker(doc, http.DefaultTransport)
	t := h.t
	t.Cleanup(func() {
		openapitest.AppendSeen(c)
		for _, f := range c.Failures() {
			t.Errorf("an answer the OpenAPI document does not describe: %s", f)
		}
	})
	h.checked = &http.Client{Transport: c}
	return h.checked
}
