//go:build bench

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// TestBenchConsole times the console's pages with 1,000 workspaces in the
// tenant: each page is read 30 times through HTTP on loopback (so the time
// is the server's render plus one loopback round trip, an upper bound of
// the handler's time). Target: the median under 100 ms.
func TestBenchConsole(t *testing.T) {
	const n, reads = 1000, 30
	p := startPrimer(t)
	ctx := ctxT(t, 5*time.Minute)
	if _, err := p.api.CreateProvider(ctx, wire.ProviderSpec{ID: "host", Provider: "local", Config: raw(`{"kind":"local","root_path":"` + t.TempDir() + `"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "plain", ProviderID: "host", Backend: raw(`{"kind":"local"}`)}); err != nil {
		t.Fatal(err)
	}
	// Rows straight into the store: the pages read rows, and 1,000 real
	// sandboxes would measure the backend, not the console. They are
	// failed, so no workflow or prober acts on them.
	var last string
	for i := range n {
		ws := &wire.Workspace{TemplateID: "plain", ProviderID: "host", Backend: "local", Phase: wire.PhaseFailed,
			Reason: fmt.Sprintf("bench row %d <b>", i), Labels: map[string]string{"row": fmt.Sprint(i)}}
		if err := p.srv.Store().CreateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
		last = ws.ID
	}

	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	base := p.srv.URL()
	resp, err := hc.PostForm(base+"/signin", url.Values{"api_key": {p.key}})
	if err != nil || resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/workspaces" {
		t.Fatalf("sign in: %v %v", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := strings.Count(string(body), `<tr data-ws="`); got != n {
		t.Fatalf("workspaces page has %d rows, want %d", got, n)
	}

	t.Logf("| page (%d workspaces) | p50 | p95 | max |", n)
	t.Logf("|---|---|---|---|")
	// /v1/workspaces is the baseline: the API's own list, as JSON, which
	// the console's list page reads and renders.
	for _, pg := range []string{"/v1/workspaces", "/workspaces", "/workspaces/" + last, "/templates", "/providers", "/pools", "/sessions"} {
		var d []time.Duration
		for range reads {
			start := time.Now()
			req, _ := http.NewRequest(http.MethodGet, base+pg, nil)
			if strings.HasPrefix(pg, "/v1/") {
				req.Header.Set("Authorization", "Bearer "+p.key)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			d = append(d, time.Since(start))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s = %d", pg, resp.StatusCode)
			}
		}
		slices.Sort(d)
		p50, p95 := d[len(d)/2], d[len(d)*95/100]
		t.Logf("| %s | %s | %s | %s |", pg, p50.Round(100*time.Microsecond), p95.Round(100*time.Microsecond), d[len(d)-1].Round(100*time.Microsecond))
		if p50 >= 100*time.Millisecond {
			t.Errorf("GET %s: median %s with %d workspaces, want under 100 ms", pg, p50, n)
		}
	}
}
