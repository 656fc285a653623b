package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/api/openapi"
	"github.com/primerhq/primer/api/openapi/openapitest"
)

// openAPIDoc is the OpenAPI document, parsed once per test binary.
var openAPIDoc = sync.OnceValues(func() (*openapitest.Document, error) {
	return openapitest.Load(openapi.JSON())
})

// checkedHTTP returns an HTTP client whose transport checks every /v1
// answer against the OpenAPI document (issue 24), and the client option
// that makes an api/client.Client use it: when t ends, each answer that did
// not match (a field the document lacks, a required one missing, an
// undeclared status or media type) fails it. Benchmarks (PRIMER_BENCH)
// get http.DefaultClient and an option that changes nothing: they time
// the API, not the checks.
func checkedHTTP(t *testing.T) (*http.Client, client.Option) {
	t.Helper()
	if os.Getenv("PRIMER_BENCH") != "" {
		return http.DefaultClient, func(*client.Client) {}
	}
	doc, err := openAPIDoc()
	if err != nil {
		t.Fatalf("load the OpenAPI document: %v", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	c := openapitest.NewChecker(doc, tr)
	t.Cleanup(func() {
		t.Logf("OpenAPI: %d answers checked against the document", c.Checked())
		openapitest.AppendSeen(c)
		for _, f := range c.Failures() {
			t.Errorf("an answer the OpenAPI document does not describe: %s", f)
		}
	})
	hc := &http.Client{Transport: c, Timeout: client.DefaultTimeout}
	return hc, client.WithHTTPClient(hc)
}

// checkedURL is a URL that reaches p through a reverse proxy whose every
// /v1 answer is checked against the OpenAPI document (as p.hc's are), for
// clients that are not Go: the SDKs' test suites.
func (p *primer) checkedURL() string {
	p.t.Helper()
	target, err := url.Parse(p.srv.URL())
	if err != nil {
		p.t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = p.hc.Transport
	rp.FlushInterval = -1 // streams (SSE, NDJSON) pass at once
	srv := httptest.NewServer(rp)
	p.t.Cleanup(srv.Close)
	return srv.URL
}
