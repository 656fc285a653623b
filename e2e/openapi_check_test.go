package e2e

import (
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
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
	// A proxy's own failures (an upstream read or write that broke) go to
	// the test's log, so a client that saw its stream cut can be told
	// whether the API or the proxy cut it.
	rp.ErrorLog = log.New(testLogWriter{p.t}, "checked proxy: ", 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Full duplex: the server must not close the request's body when
		// the proxy writes the answer's headers (a stream's come at once),
		// since the proxy's transport may still make its last read of it.
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			p.t.Errorf("checked proxy: full duplex: %v", err)
		}
		rp.ServeHTTP(w, r)
	}))
	p.t.Cleanup(srv.Close)
	return srv.URL
}

// testLogWriter writes each line it is given to a test's log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
