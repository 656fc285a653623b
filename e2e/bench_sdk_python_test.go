//go:build bench

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// TestBenchSDKPython measures what the sync Python SDK adds to a call
// (issue 24: under 0.5 ms at p50): exec `true` on a running local
// workspace through primer.Client and through raw HTTP from the same
// Python process (httpx, the same body, the answer decoded), in
// alternating rounds of one run (sdk/python/bench/exec_overhead.py). A
// plain httpx.Client (Nagle on, which the SDK turns off) and the Go
// client's exec are printed beside them for scale.
func TestBenchSDKPython(t *testing.T) {
	requireBench(t)
	py := pythonSDK(t)
	ctx := ctxT(t, 10*time.Minute)
	p := startPrimer(t, withProbeInterval(30*time.Second))
	ws := createRunning(t, p, wire.DefaultTemplateID)

	out := py.run(t, ctx, py.dir, py.env(p, p.key), filepath.Join(py.dir, "bench", "exec_overhead.py"), ws.ID, "20", "50")
	var us map[string][]int64
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &us); err != nil {
		t.Fatalf("exec_overhead.py printed %q: %v", out, err)
	}
	durs := func(s []int64) []time.Duration {
		d := make([]time.Duration, len(s))
		for i, v := range s {
			d[i] = time.Duration(v) * time.Microsecond
		}
		return d
	}
	sdk, raw, plain := durs(us["sdk"]), durs(us["raw"]), durs(us["plain_httpx"])
	goExec := timeN(t, 1000, execTrue(ctx, p.api, ws.ID))

	printTable(t, "Python SDK overhead (issue 24)", []row{
		{name: "exec `true`, Python SDK (sync Client)", target: "added p50 < 0.5 ms", samples: sdk,
			baseName: "raw HTTP from Python (httpx, TCP_NODELAY)", baseline: raw},
		{name: "exec `true`, plain httpx.Client (Nagle on)", target: "-", samples: plain,
			baseName: "raw HTTP from Python (httpx, TCP_NODELAY)", baseline: raw},
		{name: "exec `true`, Go client (api/client)", target: "-", samples: goExec},
	})
	added := pct(sdk, .5) - pct(raw, .5)
	ok := "yes"
	if added >= 500*time.Microsecond {
		ok = "NO"
		t.Errorf("the Python SDK adds %s at p50 (SDK %s, raw %s), target under 0.5 ms", ms(added), ms(pct(sdk, .5)), ms(pct(raw, .5)))
	}
	fmt.Printf("# python sdk: p50 %s, raw HTTP %s: added %s (%.3fx); p90 %s vs %s; target added p50 < 0.5 ms: %s\n\n",
		ms(pct(sdk, .5)), ms(pct(raw, .5)), ms(added), float64(pct(sdk, .5))/float64(pct(raw, .5)),
		ms(pct(sdk, .9)), ms(pct(raw, .9)), ok)
}
